/* chat.c: the public chat API. A conversation is rendered by the model's own chat template, a
 * Jinja program run as Hugging Face's transformers runs it (src/template/), with the variables
 * transformers passes: messages as given (a tool call's JSON-string arguments decoded into the
 * object templates expect), tools, add_generation_prompt, bos_token, eos_token and the caller's
 * kwargs. The renderer knows which output bytes came from the template itself and which from the
 * messages, so only the template's text can hold control tokens. Files without a template get
 * the built-in format their vocabulary calls for (chat_builtin.c). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/chat.h"
#include "model/model.h"
#include "template/jinja.h"
#include "tokenizer/tokenizer.h"

brasa_chat_params brasa_chat_default_params(void) {
    return (brasa_chat_params){ .add_generation_prompt = true, .enable_thinking = true };
}

const char *brasa_chat_format_detect(const brasa_model *m) {
    return m ? chat_builtin_detect(m) : NULL;
}

const char *brasa_chat_format_names(void) {
    return chat_builtin_names();
}

const char *chat_template_for(const brasa_model *m, const brasa_chat_params *p) {
    if (p->format)
        return NULL;
    if (p->template_text)
        return p->template_text;
    if (p->tools_json && m->desc.chat_template_tool_use)
        return m->desc.chat_template_tool_use;
    return m->desc.chat_template;
}

/* Checks the messages' shape and decodes every tool call's arguments given as a JSON string (the
 * OpenAI wire form) into the object transformers hands templates. */
static brasa_status prepare_messages(json_value *msgs, brasa_error *err) {
    if (msgs->type != JSON_ARRAY)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "the messages must be a JSON array");
    for (size_t i = 0; i < msgs->len; i++) {
        json_value *m = &msgs->items[i];
        if (m->type != JSON_OBJECT || !json_get(m, "role") || json_get(m, "role")->type != JSON_STRING)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "message %zu must be an object with a string 'role'", i + 1);
        json_value *calls = (json_value *)json_get(m, "tool_calls");
        if (!calls || calls->type == JSON_NULL)
            continue;
        if (calls->type != JSON_ARRAY)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "message %zu: 'tool_calls' must be an array", i + 1);
        for (size_t k = 0; k < calls->len; k++) {
            json_value *fn = (json_value *)json_get(&calls->items[k], "function");
            json_value *args = fn ? (json_value *)json_get(fn, "arguments") : NULL;
            if (!fn || fn->type != JSON_OBJECT || !json_get(fn, "name") || json_get(fn, "name")->type != JSON_STRING)
                return err_set(err, BRASA_ERR_INVALID_ARGUMENT,
                               "message %zu: tool call %zu needs a 'function' with a string 'name'", i + 1, k + 1);
            if (!args || args->type != JSON_STRING)
                continue;
            brasa_error perr = { 0 };
            if (json_replace(args, args->str, args->len, &perr) != BRASA_OK)
                return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "message %zu: tool call %zu: arguments are not JSON (%s)",
                               i + 1, k + 1, perr.message);
        }
    }
    return BRASA_OK;
}

/* A string variable from the vocabulary (trusted: it may be a control token), or null. */
static json_value token_value(const brasa_model *m, brasa_token t) {
    if (!tok_vocab_has(&m->vocab, t))
        return (json_value){ .type = JSON_NULL };
    const char *s = m->vocab.text[t];
    return (json_value){ .type = JSON_STRING, .str = (char *)s, .len = strlen(s) };
}

#define MAX_VARS 64

static brasa_status render_template(const brasa_model *m, const char *tpl, const json_value *msgs,
                                    const brasa_chat_params *p, chat_text *out, brasa_error *err) {
    json_doc *tools = NULL, *kwargs = NULL;
    jinja_template *t = NULL;
    jinja_output o = { 0 };
    brasa_error perr = { 0 };
    brasa_status st = jinja_parse(tpl, strlen(tpl), &t, &perr);
    if (st != BRASA_OK) {
        st = err_set(err, st, "the chat template does not parse: %s", perr.message);
        goto done;
    }
    json_value yes = { .type = JSON_TRUE }, no = { .type = JSON_FALSE };
    json_value bos = token_value(m, m->vocab.bos), eos = token_value(m, m->vocab.eos);
    jinja_var vars[MAX_VARS];
    size_t n = 0;
    vars[n++] = (jinja_var){ "messages", msgs, false };
    vars[n++] = (jinja_var){ "add_generation_prompt", p->add_generation_prompt ? &yes : &no, true };
    vars[n++] = (jinja_var){ "bos_token", &bos, true };
    vars[n++] = (jinja_var){ "eos_token", &eos, true };
    if (!p->enable_thinking)
        vars[n++] = (jinja_var){ "enable_thinking", &no, true };
    if (p->tools_json) {
        st = json_parse(p->tools_json, strlen(p->tools_json), &tools, &perr);
        if (st != BRASA_OK || json_root(tools)->type != JSON_ARRAY) {
            st = err_set(err, BRASA_ERR_INVALID_ARGUMENT, "the tools must be a JSON array%s%s",
                         st != BRASA_OK ? ": " : "", st != BRASA_OK ? perr.message : "");
            goto done;
        }
        vars[n++] = (jinja_var){ "tools", json_root(tools), false };
    }
    if (p->kwargs_json) {
        st = json_parse(p->kwargs_json, strlen(p->kwargs_json), &kwargs, &perr);
        const json_value *kw = st == BRASA_OK ? json_root(kwargs) : NULL;
        if (!kw || kw->type != JSON_OBJECT) {
            st = err_set(err, BRASA_ERR_INVALID_ARGUMENT, "the template arguments must be a JSON object%s%s",
                         st != BRASA_OK ? ": " : "", st != BRASA_OK ? perr.message : "");
            goto done;
        }
        if (kw->len > MAX_VARS - n) {
            st = err_set(err, BRASA_ERR_INVALID_ARGUMENT, "too many template arguments (at most %d)", MAX_VARS - (int)n);
            goto done;
        }
        /* a kwarg overrides what brasa set, as transformers' kwargs do */
        for (size_t i = 0; i < kw->len; i++) {
            size_t k = 0;
            while (k < n && strcmp(vars[k].name, kw->keys[i].str) != 0)
                k++;
            vars[k] = (jinja_var){ kw->keys[i].str, &kw->items[i], false };
            n += k == n;
        }
    }
    const int64_t now = p->now ? p->now : (int64_t)time(NULL);
    const jinja_limits limits = jinja_default_limits();
    st = jinja_render(t, vars, n, now, &limits, &o, &perr);
    if (st != BRASA_OK) {
        st = err_set(err, st == BRASA_ERR_NO_MEMORY ? st : BRASA_ERR_INVALID_ARGUMENT, "the chat template failed: %s",
                     perr.message);
        goto done;
    }
    out->text = o.text;
    out->spans = o.markup_spans;
    out->n_spans = o.n_markup_spans;
    o = (jinja_output){ 0 };
done:
    jinja_output_free(&o);
    jinja_free(t);
    json_free(tools);
    json_free(kwargs);
    return st;
}

/* The messages as the built-in formats take them: role and string content. */
static brasa_status render_builtin(const brasa_model *m, const json_value *msgs, const brasa_chat_params *p,
                                   chat_text *out, brasa_error *err) {
    const char *name = p->format ? p->format : chat_builtin_detect(m);
    const int f = chat_builtin_find(name);
    if (!name)
        return err_set(err, BRASA_ERR_UNSUPPORTED,
                       "the model has no chat template and brasa recognizes no format in its vocabulary; give one "
                       "with --chat-template-file, or choose a built-in format (%s)", chat_builtin_names());
    if (f < 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "unknown chat format '%s' (brasa knows %s)", name,
                       chat_builtin_names());
    if (p->tools_json)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "the built-in %s format has no tools; the model's template, or "
                       "one given with --chat-template-file, must render them", name);
    brasa_chat_message *list = calloc(msgs->len ? msgs->len : 1, sizeof *list);
    if (!list)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    brasa_status st = BRASA_OK;
    for (size_t i = 0; i < msgs->len && st == BRASA_OK; i++) {
        const json_value *content = json_get(&msgs->items[i], "content");
        if (!content || content->type != JSON_STRING || strlen(content->str) != content->len)
            st = err_set(err, BRASA_ERR_INVALID_ARGUMENT,
                         "message %zu: the built-in %s format takes text content (a string without NUL)", i + 1, name);
        list[i] = (brasa_chat_message){ json_get(&msgs->items[i], "role")->str, content ? content->str : NULL };
    }
    if (st == BRASA_OK)
        st = chat_builtin_render(m, f, list, msgs->len, p, out, err);
    free(list);
    return st;
}

/* Renders a JSON conversation into out (text and control-token spans). */
static brasa_status render(const brasa_model *m, const char *json, size_t len, const brasa_chat_params *params,
                           chat_text *out, brasa_error *err) {
    if (!m || (!json && len))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_chat_render: invalid arguments");
    const brasa_chat_params p = params ? *params : brasa_chat_default_params();
    json_doc *doc = NULL;
    brasa_error perr = { 0 };
    brasa_status st = json_parse(json, len, &doc, &perr);
    if (st != BRASA_OK)
        return err_set(err, st, "the messages are not JSON: %s", perr.message);
    st = prepare_messages(json_root_mut(doc), err);
    if (st == BRASA_OK) {
        const char *tpl = chat_template_for(m, &p);
        st = tpl ? render_template(m, tpl, json_root(doc), &p, out, err) : render_builtin(m, json_root(doc), &p, out, err);
    }
    json_free(doc);
    return st;
}

static void chat_text_free(chat_text *c) {
    buf_free(&c->text);
    free(c->spans);
    *c = (chat_text){ 0 };
}

brasa_status brasa_chat_render(const brasa_model *m, const char *json, size_t len, const brasa_chat_params *params,
                               char *text, size_t capacity, size_t *length, brasa_error *err) {
    if (!length || (!text && capacity))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_chat_render: invalid arguments");
    chat_text c = { 0 };
    brasa_status st = render(m, json, len, params, &c, err);
    if (st == BRASA_OK) {
        *length = c.text.len;
        if (c.text.len > capacity)
            st = err_set(err, BRASA_ERR_BUFFER_TOO_SMALL, "the rendered chat needs %zu bytes", c.text.len);
        else if (c.text.len)
            memcpy(text, c.text.data, c.text.len);
    }
    chat_text_free(&c);
    return st;
}

brasa_status brasa_chat_tokenize_json(const brasa_model *m, const char *json, size_t len,
                                      const brasa_chat_params *params, brasa_token *tokens, size_t capacity,
                                      size_t *n_tokens, brasa_error *err) {
    if (!m || !n_tokens || (!tokens && capacity))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_chat_tokenize: invalid arguments");
    if (m->vocab.type == BRASA_VOCAB_NONE)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "cannot tokenize: %s", m->tokenizer_error);
    chat_text c = { 0 };
    ivec ids = { 0 };
    brasa_status st = render(m, json, len, params, &c, err);
    if (st == BRASA_OK)
        st = tok_encode_spans(&m->vocab, c.text.data ? c.text.data : "", c.text.len, c.spans, c.n_spans, &ids, err);
    if (st == BRASA_OK)
        st = tok_copy_out(&ids, tokens, capacity, n_tokens, err);
    ivec_free(&ids);
    chat_text_free(&c);
    return st;
}

/* The messages as JSON text, for the template path. */
static bool messages_json(const brasa_chat_message *msgs, size_t n, buf *out) {
    bool ok = buf_append(out, "[", 1);
    for (size_t i = 0; i < n && ok; i++) {
        ok = (i == 0 || buf_append(out, ",", 1)) && buf_append(out, "{\"role\":", 8) &&
             json_write_string(out, msgs[i].role, strlen(msgs[i].role)) && buf_append(out, ",\"content\":", 11) &&
             json_write_string(out, msgs[i].content, strlen(msgs[i].content)) && buf_append(out, "}", 1);
    }
    return ok && buf_append(out, "]", 1);
}

brasa_status brasa_chat_tokenize_with(const brasa_model *m, const brasa_chat_message *msgs, size_t n,
                                      const brasa_chat_params *params, brasa_token *tokens, size_t capacity,
                                      size_t *n_tokens, brasa_error *err) {
    if (!m || (!msgs && n) || !n_tokens || (!tokens && capacity))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_chat_tokenize: invalid arguments");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "message %zu has no role or content", i + 1);
    buf json = { 0 };
    brasa_status st = messages_json(msgs, n, &json)
                          ? brasa_chat_tokenize_json(m, json.data, json.len, params, tokens, capacity, n_tokens, err)
                          : err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    buf_free(&json);
    return st;
}

brasa_status brasa_chat_tokenize(const brasa_model *m, const char *format, const brasa_chat_message *msgs, size_t n,
                                 bool gen, brasa_token *tokens, size_t capacity, size_t *n_tokens, brasa_error *err) {
    brasa_chat_params p = brasa_chat_default_params();
    p.format = format;
    p.add_generation_prompt = gen;
    return brasa_chat_tokenize_with(m, msgs, n, &p, tokens, capacity, n_tokens, err);
}

/* With a template: whether the prompt it writes for a one-question chat ends by opening a <think>
 * block (the reply begins inside it), else whether the template writes such blocks at all. */
brasa_chat_reasoning brasa_chat_reasoning_start(const brasa_model *m, const brasa_chat_params *params) {
    const brasa_chat_params p = params ? *params : brasa_chat_default_params();
    if (!m)
        return BRASA_REASONING_NONE;
    const char *tpl = chat_template_for(m, &p);
    if (!tpl)
        return chat_builtin_reasoning(m, chat_builtin_find(p.format ? p.format : chat_builtin_detect(m)), &p);
    if (!strstr(tpl, "<think>"))
        return BRASA_REASONING_NONE;
    static const char question[] = "[{\"role\":\"user\",\"content\":\"Hi\"}]";
    chat_text c = { 0 };
    brasa_chat_reasoning r = BRASA_REASONING_LEADING;
    if (p.add_generation_prompt && render(m, question, sizeof question - 1, &p, &c, NULL) == BRASA_OK) {
        size_t end = c.text.len;
        while (end > 0 && strchr(" \t\r\n", c.text.data[end - 1]))
            end--;
        if (end >= 7 && memcmp(c.text.data + end - 7, "<think>", 7) == 0)
            r = BRASA_REASONING_OPEN;
    }
    chat_text_free(&c);
    return r;
}
