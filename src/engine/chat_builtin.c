/* chat_builtin.c: the chat formats built into brasa, for model files that carry no
 * tokenizer.chat_template (or when one is named): ChatML, Qwen3's ChatML with reasoning, Gemma,
 * Llama 3, rendered natively, taking what varies between models (ChatML's default system prompt,
 * whether Qwen3's prompt opens the reasoning block) from the template text when there is one. The
 * rendering records where the format's own markers are, so that only those become control tokens
 * and a message that contains "<|im_start|>" stays text. */
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "engine/chat.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

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

static brasa_status render_chatml(const brasa_model *m, const brasa_chat_message *msgs, size_t n,
                                  const brasa_chat_params *p, chat_text *c, brasa_error *err) {
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
    if (p->add_generation_prompt)
        add_marker(c, "<|im_start|>assistant\n");
    return BRASA_OK;
}

/* ---- Qwen3: ChatML with a reasoning block ("<think>\n...\n</think>\n\n") before each answer.
 * The rules of the template Qwen3's files carry (tools aside): a first system message opens the
 * prompt, there is no default one; user and later system messages are ChatML turns; an assistant
 * turn's reasoning is the text before its first </think> (after the last <think> there), its
 * answer the text after its last </think>, each without the newlines at the seam. A turn keeps only
 * its answer, except the turns after the last user query (a message that is not a tool response):
 * those, when they are the last message or have reasoning, keep it in a block of their own. With
 * thinking off the generation prompt closes an empty block; the thinking-only models' template
 * opens the block in the generation prompt. */

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *s, size_t n, const char *suffix) {
    const size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* The last occurrence of needle in s, or NULL. */
static const char *find_last(const char *s, const char *needle) {
    const char *last = NULL;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        last = p;
    return last;
}

/* Whether the template's generation prompt opens the reasoning block: a string literal ending in
 * "<think>\n" after the last mention of add_generation_prompt (the hybrid models' template only
 * writes the empty "<think>\n\n</think>\n\n" there, and only with thinking off). */
static bool qwen3_prompt_opens(const char *tpl) {
    const char *tail = tpl ? find_last(tpl, "add_generation_prompt") : NULL;
    static const char *opened[] = { "<think>\\n'", "<think>\\n\"", "<think>\n'", "<think>\n\"" };
    for (size_t k = 0; tail && k < sizeof opened / sizeof opened[0]; k++)
        if (strstr(tail, opened[k]))
            return true;
    return false;
}

/* s[*a..*b) without the newlines at its start (lead) and its end (trail). */
static void strip_newlines(const char *s, size_t *a, size_t *b, bool lead, bool trail) {
    while (lead && *a < *b && s[*a] == '\n')
        (*a)++;
    while (trail && *b > *a && s[*b - 1] == '\n')
        (*b)--;
}

static void render_qwen3_assistant(const char *content, bool keep_reasoning_block, bool last, chat_text *c) {
    const size_t n = strlen(content);
    size_t r0 = 0, r1 = 0, answer = 0; /* the reasoning is content[r0..r1), the answer content[answer..) */
    const char *first_close = strstr(content, "</think>");
    if (first_close) {
        r1 = (size_t)(first_close - content);
        strip_newlines(content, &r0, &r1, false, true);
        for (size_t i = r1; i >= 7 && r0 == 0; i--) /* after the last <think> before the close */
            if (memcmp(content + i - 7, "<think>", 7) == 0)
                r0 = i;
        strip_newlines(content, &r0, &r1, true, false); /* now without newlines at either end */
        answer = (size_t)(find_last(content, "</think>") - content) + 8;
    }
    const bool block = keep_reasoning_block && (last || r1 > r0);
    size_t end = n;
    if (first_close || block)
        strip_newlines(content, &answer, &end, true, false);
    add_marker(c, "<|im_start|>");
    add_marker(c, "assistant");
    add_marker(c, "\n");
    if (block) {
        add_marker(c, "<think>");
        add_text(c, "\n", 1);
        add_text(c, content + r0, r1 - r0);
        add_text(c, "\n", 1);
        add_marker(c, "</think>");
        add_text(c, "\n\n", 2);
    }
    add_text(c, content + answer, n - answer);
    add_marker(c, "<|im_end|>\n");
}

static brasa_status render_qwen3(const brasa_model *m, const brasa_chat_message *msgs, size_t n,
                                 const brasa_chat_params *p, chat_text *c, brasa_error *err) {
    (void)err;
    size_t last_query = n ? n - 1 : 0;
    for (size_t i = n; i-- > 0;) {
        const char *t = msgs[i].content;
        if (strcmp(msgs[i].role, "user") == 0 &&
            !(starts_with(t, "<tool_response>") && ends_with(t, strlen(t), "</tool_response>"))) {
            last_query = i;
            break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(msgs[i].role, "assistant") == 0) {
            render_qwen3_assistant(msgs[i].content, i > last_query, i + 1 == n, c);
            continue;
        }
        add_marker(c, "<|im_start|>");
        add_marker(c, msgs[i].role);
        add_marker(c, "\n");
        add_text(c, msgs[i].content, strlen(msgs[i].content));
        add_marker(c, "<|im_end|>\n");
    }
    if (p->add_generation_prompt) {
        add_marker(c, "<|im_start|>assistant\n");
        if (!p->enable_thinking) {
            add_marker(c, "<think>");
            add_text(c, "\n\n", 2);
            add_marker(c, "</think>");
            add_text(c, "\n\n", 2);
        } else if (qwen3_prompt_opens(m->desc.chat_template)) {
            add_marker(c, "<think>");
            add_text(c, "\n", 1);
        }
    }
    return BRASA_OK;
}

/* Gemma: no system role; a system message is prepended to the first user turn. Turns must
 * alternate user / model, and content is trimmed, as Gemma's template does. */
static brasa_status render_gemma(const brasa_model *m, const brasa_chat_message *msgs, size_t n,
                                 const brasa_chat_params *p, chat_text *c, brasa_error *err) {
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
    if (p->add_generation_prompt)
        add_marker(c, "<start_of_turn>model\n");
    return BRASA_OK;
}

static brasa_status render_llama3(const brasa_model *m, const brasa_chat_message *msgs, size_t n,
                                  const brasa_chat_params *p, chat_text *c, brasa_error *err) {
    (void)err;
    add_marker(c, token_text(m, m->vocab.bos));
    for (size_t i = 0; i < n; i++) {
        add_marker(c, "<|start_header_id|>");
        add_marker(c, msgs[i].role);
        add_marker(c, "<|end_header_id|>\n\n");
        add_trimmed(c, msgs[i].content);
        add_marker(c, "<|eot_id|>");
    }
    if (p->add_generation_prompt)
        add_marker(c, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return BRASA_OK;
}

typedef brasa_status (*render_fn)(const brasa_model *, const brasa_chat_message *, size_t, const brasa_chat_params *,
                                  chat_text *, brasa_error *);

/* In detection order: qwen3 before chatml, whose marker it shares (Qwen2.5's template has no
 * <think>, so it stays chatml). */
static const struct {
    const char *name;
    const char *marker, *marker2; /* what identifies the format in a template or a vocabulary: both */
    bool reasons;                 /* replies may begin with a <think> ... </think> block */
    render_fn render;
} formats[] = {
    { "qwen3", "<|im_start|>", "<think>", true, render_qwen3 },
    { "chatml", "<|im_start|>", NULL, false, render_chatml },
    { "gemma", "<start_of_turn>", NULL, false, render_gemma },
    { "llama3", "<|start_header_id|>", NULL, false, render_llama3 },
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

const char *chat_builtin_names(void) {
    return "chatml, gemma, llama3, qwen3";
}

static bool has_marker(const brasa_model *m, const char *marker) {
    const char *tpl = m->desc.chat_template;
    return !marker || (tpl ? strstr(tpl, marker) != NULL : smap_get(&m->vocab.by_text, marker, strlen(marker)) >= 0);
}

const char *chat_builtin_detect(const brasa_model *m) {
    for (size_t i = 0; i < N_FORMATS; i++)
        if (has_marker(m, formats[i].marker) && has_marker(m, formats[i].marker2))
            return formats[i].name;
    return NULL;
}

int chat_builtin_find(const char *name) {
    for (size_t f = 0; name && f < N_FORMATS; f++)
        if (strcmp(formats[f].name, name) == 0)
            return (int)f;
    return -1;
}

brasa_chat_reasoning chat_builtin_reasoning(const brasa_model *m, int f, const brasa_chat_params *p) {
    if (f < 0 || !formats[f].reasons)
        return BRASA_REASONING_NONE;
    return p->add_generation_prompt && p->enable_thinking && qwen3_prompt_opens(m->desc.chat_template)
               ? BRASA_REASONING_OPEN
               : BRASA_REASONING_LEADING;
}

brasa_status chat_builtin_render(const brasa_model *m, int f, const brasa_chat_message *msgs, size_t n,
                                 const brasa_chat_params *p, chat_text *c, brasa_error *err) {
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].role || !msgs[i].content)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "message %zu has no role or content", i + 1);
        if (strcmp(msgs[i].role, "system") != 0 && strcmp(msgs[i].role, "user") != 0 &&
            strcmp(msgs[i].role, "assistant") != 0)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT,
                           "message %zu has role '%.32s'; the built-in %s format takes system, user and assistant "
                           "(a model's own template takes more)", i + 1, msgs[i].role, formats[f].name);
    }
    brasa_status st = formats[f].render(m, msgs, n, p, c, err);
    if (st == BRASA_OK && c->oom)
        st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory rendering the chat");
    return st;
}
