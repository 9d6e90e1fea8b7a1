/* chat.c: chat formats. A model's tokenizer.chat_template is a Jinja program; rather than run
 * Jinja, brasa recognizes the format family it implements (ChatML, Gemma, Llama 3) and renders it
 * natively, taking what varies between models (ChatML's default system prompt) from the template
 * text itself. The rendering records where the format's own markers are, so that only those become
 * control tokens and a message that contains "<|im_start|>" stays text. */
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

typedef struct chat_text {
    buf text;
    size_t *spans; /* pairs [start, end) of format markers */
    size_t n_spans, cap;
    bool oom;
} chat_text;

static void add_marker(chat_text *c, const char *s) {
    size_t start = c->text.len;
    if (!buf_append(&c->text, s, strlen(s))) {
        c->oom = true;
        return;
    }
    if (c->n_spans == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        size_t *p = realloc(c->spans, cap * 2 * sizeof *p);
        if (!p) {
            c->oom = true;
            return;
        }
        c->spans = p;
        c->cap = cap;
    }
    c->spans[2 * c->n_spans] = start;
    c->spans[2 * c->n_spans + 1] = c->text.len;
    c->n_spans++;
}

static void add_text(chat_text *c, const char *s, size_t n) {
    if (!buf_append(&c->text, s, n))
        c->oom = true;
}

static bool is_space(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* Jinja's `| trim`: the content without leading and trailing whitespace. */
static void add_trimmed(chat_text *c, const char *s) {
    size_t n = strlen(s), a = 0;
    while (a < n && is_space(s[a]))
        a++;
    while (n > a && is_space(s[n - 1]))
        n--;
    add_text(c, s + a, n - a);
}

static const char *token_text(const brasa_model *m, brasa_token t) {
    return tok_vocab_has(&m->vocab, t) ? m->vocab.text[t] : "";
}

/* ChatML templates that insert a system message when the conversation has none carry it as a
 * string literal: '<|im_start|>system\n' + TEXT + '<|im_end|>'. Finds TEXT (unescaped) or returns
 * false. */
static bool chatml_default_system(const char *tpl, buf *out) {
    static const char *prefixes[] = { "<|im_start|>system\\n", "<|im_start|>system\n" };
    for (size_t k = 0; k < 2; k++) {
        for (const char *p = strstr(tpl, prefixes[k]); p; p = strstr(p + 1, prefixes[k])) {
            const char *start = p + strlen(prefixes[k]);
            const char *end = strstr(start, "<|im_end|>");
            if (!end)
                break; /* none after this one either: stop, or a hostile template costs quadratic time */
            if (end == start)
                continue;
            bool literal = true;
            for (const char *q = start; q < end; q++)
                if (*q == '\'' || *q == '"' || *q == '{' || *q == '}' || *q == '+')
                    literal = false;
            if (!literal)
                continue;
            out->len = 0;
            for (const char *q = start; q < end; q++) {
                char ch = *q;
                if (ch == '\\' && q + 1 < end) {
                    q++;
                    ch = *q == 'n' ? '\n' : *q == 't' ? '\t' : *q;
                }
                if (!buf_append(out, &ch, 1))
                    return false;
            }
            return true;
        }
    }
    return false;
}

static brasa_status render_chatml(const brasa_model *m, const brasa_chat_message *msgs, size_t n, bool gen,
                                  chat_text *c, brasa_error *err) {
    (void)err;
    buf sys = { 0 };
    if ((n == 0 || strcmp(msgs[0].role, "system") != 0) && m->desc.chat_template &&
        chatml_default_system(m->desc.chat_template, &sys)) {
        add_marker(c, "<|im_start|>system\n");
        add_text(c, sys.data, sys.len);
        add_marker(c, "<|im_end|>\n");
    }
    buf_free(&sys);
    for (size_t i = 0; i < n; i++) {
        add_marker(c, "<|im_start|>");
        add_marker(c, msgs[i].role);
        add_marker(c, "\n");
        add_text(c, msgs[i].content, strlen(msgs[i].content));
        add_marker(c, "<|im_end|>\n");
    }
    if (gen)
        add_marker(c, "<|im_start|>assistant\n");
    return BRASA_OK;
}

/* Gemma: no system role; a system message is prepended to the first user turn. Turns must
 * alternate user / model, and content is trimmed, as Gemma's template does. */
static brasa_status render_gemma(const brasa_model *m, const brasa_chat_message *msgs, size_t n, bool gen,
                                 chat_text *c, brasa_error *err) {
    add_marker(c, token_text(m, m->vocab.bos));
    size_t first = 0;
    const char *system = NULL;
    if (n > 0 && strcmp(msgs[0].role, "system") == 0) {
        system = msgs[0].content;
        first = 1;
    }
    for (size_t i = first; i < n; i++) {
        bool user_turn = (i - first) % 2 == 0;
        const char *role = msgs[i].role;
        if (user_turn != (strcmp(role, "user") == 0) || (!user_turn && strcmp(role, "assistant") != 0))
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT,
                           "the gemma format needs turns alternating user/assistant (message %zu is '%s')", i + 1, role);
        add_marker(c, "<start_of_turn>");
        add_marker(c, user_turn ? "user\n" : "model\n");
        if (i == first && system) {
            add_trimmed(c, system);
            add_text(c, "\n\n", 2);
        }
        add_trimmed(c, msgs[i].content);
        add_marker(c, "<end_of_turn>\n");
    }
    if (gen)
        add_marker(c, "<start_of_turn>model\n");
    return BRASA_OK;
}

static brasa_status render_llama3(const brasa_model *m, const brasa_chat_message *msgs, size_t n, bool gen,
                                  chat_text *c, brasa_error *err) {
    (void)err;
    add_marker(c, token_text(m, m->vocab.bos));
    for (size_t i = 0; i < n; i++) {
        add_marker(c, "<|start_header_id|>");
        add_marker(c, msgs[i].role);
        add_marker(c, "<|end_header_id|>\n\n");
        add_trimmed(c, msgs[i].content);
        add_marker(c, "<|eot_id|>");
    }
    if (gen)
        add_marker(c, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return BRASA_OK;
}

typedef brasa_status (*render_fn)(const brasa_model *, const brasa_chat_message *, size_t, bool, chat_text *,
                                  brasa_error *);

static const struct {
    const char *name;
    const char *marker; /* what identifies the format in a template or a vocabulary */
    render_fn render;
} formats[] = {
    { "chatml", "<|im_start|>", render_chatml },
    { "gemma", "<start_of_turn>", render_gemma },
    { "llama3", "<|start_header_id|>", render_llama3 },
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

const char *brasa_chat_format_names(void) {
    return "chatml, gemma, llama3";
}

const char *brasa_chat_format_detect(const brasa_model *m) {
    const char *tpl = m->desc.chat_template;
    for (size_t i = 0; i < N_FORMATS; i++) {
        if (tpl ? strstr(tpl, formats[i].marker) != NULL
                : smap_get(&m->vocab.by_text, formats[i].marker, strlen(formats[i].marker)) >= 0)
            return formats[i].name;
    }
    return NULL;
}

brasa_status brasa_chat_tokenize(const brasa_model *m, const char *format, const brasa_chat_message *msgs, size_t n,
                                 bool gen, brasa_token *tokens, size_t capacity, size_t *n_tokens, brasa_error *err) {
    if (!m || (!msgs && n) || !n_tokens || (!tokens && capacity))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_chat_tokenize: invalid arguments");
    if (m->vocab.type == BRASA_VOCAB_NONE)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "cannot tokenize: %s", m->tokenizer_error);
    if (!format) {
        format = brasa_chat_format_detect(m);
        if (!format)
            return err_set(err, BRASA_ERR_UNSUPPORTED, m->desc.chat_template
                           ? "the model's chat template is not one brasa recognizes; choose a format (%s)"
                           : "the model has no chat template; choose a format (%s)", brasa_chat_format_names());
    }
    size_t f = 0;
    while (f < N_FORMATS && strcmp(formats[f].name, format) != 0)
        f++;
    if (f == N_FORMATS)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "unknown chat format '%s' (brasa knows %s)", format,
                       brasa_chat_format_names());
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].role || !msgs[i].content)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "message %zu has no role or content", i + 1);
        if (strcmp(msgs[i].role, "system") != 0 && strcmp(msgs[i].role, "user") != 0 &&
            strcmp(msgs[i].role, "assistant") != 0)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "message %zu has role '%.32s' (system, user or assistant)",
                           i + 1, msgs[i].role);
    }
    chat_text c = { 0 };
    brasa_status st = formats[f].render(m, msgs, n, gen, &c, err);
    ivec ids = { 0 };
    if (st == BRASA_OK && c.oom)
        st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory rendering the chat");
    if (st == BRASA_OK)
        st = tok_encode_spans(&m->vocab, c.text.data ? c.text.data : "", c.text.len, c.spans, c.n_spans, &ids, err);
    if (st == BRASA_OK)
        st = tok_copy_out(&ids, tokens, capacity, n_tokens, err);
    ivec_free(&ids);
    buf_free(&c.text);
    free(c.spans);
    return st;
}
