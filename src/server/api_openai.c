/* api_openai.c: OpenAI's API (see api.h): /v1/chat/completions, /v1/completions, /v1/embeddings
 * and /v1/models. The rules follow the OpenAI API reference: ranges of temperature (0..2), top_p
 * (0..1], presence and frequency penalties (-2..2), at most four stop strings, n = 1 only here,
 * tools of type "function" with a name OpenAI accepts, tool_choice, response_format, logprobs
 * (chat: a flag and top_logprobs up to 20; completions: a count up to 5), embeddings as floats or
 * base64. Beyond it, as vLLM and llama.cpp take them: chat_template_kwargs (any template
 * variables), and the reasoning_content of a reply. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api_shared.h"

/* response_format: {"type": "text"}, {"type": "json_object"}, or {"type": "json_schema",
 * "json_schema": {"name", "schema", "strict"?, "description"?}}. */
static bool parse_response_format(const cJSON *root, api_request *r, api_owned *own, char *message, size_t size,
                                  const char **param) {
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "response_format");
    if (!rf || cJSON_IsNull(rf))
        return true;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
    if (!cJSON_IsObject(rf) || !cJSON_IsString(type))
        return api_fail(message, size, param, "response_format", "'%s' must be an object with a 'type'", NULL);
    if (strcmp(type->valuestring, "text") == 0)
        return true;
    if (strcmp(type->valuestring, "json_object") == 0) {
        r->schema_json = "{\"type\":\"object\"}";
        return true;
    }
    if (strcmp(type->valuestring, "json_schema") != 0)
        return api_fail(message, size, param, "response_format",
                    "'%s.type' must be \"text\", \"json_object\" or \"json_schema\"", NULL);
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(js, "name");
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(js, "schema");
    const cJSON *strict = cJSON_GetObjectItemCaseSensitive(js, "strict");
    if (!cJSON_IsObject(js) || !cJSON_IsString(name))
        return api_fail(message, size, param, "response_format", "'%s.json_schema' must be an object with a 'name'", NULL);
    if (strict && !cJSON_IsNull(strict) && !cJSON_IsBool(strict))
        return api_fail(message, size, param, "response_format", "'%s.json_schema.strict' must be true or false", NULL);
    if (schema && !cJSON_IsNull(schema) && !cJSON_IsObject(schema) && !cJSON_IsBool(schema))
        return api_fail(message, size, param, "response_format", "'%s.json_schema.schema' must be a JSON Schema object", NULL);
    /* the output follows the schema whether or not strict is set: brasa always enforces it */
    r->schema_json = schema && !cJSON_IsNull(schema) ? api_own_json(own, schema) : "{}";
    if (!r->schema_json)
        return api_fail(message, size, param, "response_format", "out of memory", NULL);
    return true;
}

/* Chat: "logprobs": bool and "top_logprobs": 0..20; completions: "logprobs": 0..5. */
static bool parse_logprobs(const cJSON *root, api_request *r, char *message, size_t size, const char **param) {
    r->logprobs = -1;
    int64_t v = 0;
    bool present = false;
    if (r->kind == API_COMPLETION) {
        if (!api_get_int(root, "logprobs", NULL, 0, 5, &v, &present, message, size, param))
            return false;
        r->logprobs = present ? (int32_t)v : -1;
        return true;
    }
    bool want = false;
    if (!api_get_bool(root, "logprobs", NULL, &want, message, size, param) ||
        !api_get_int(root, "top_logprobs", NULL, 0, API_MAX_TOP_LOGPROBS, &v, &present, message, size, param))
        return false;
    if (present && !want)
        return api_fail(message, size, param, "top_logprobs", "'%s' needs 'logprobs': true", NULL);
    r->logprobs = want ? (int32_t)(present ? v : 0) : -1;
    return true;
}

static bool openai_parse(const api_endpoint *ep, const char *body, size_t len, api_request *r, char *message,
                         size_t size, const char **param) {
    const api_kind kind = ep->kind;
    memset(r, 0, sizeof *r);
    *param = NULL;
    r->kind = kind;
    r->sampling = brasa_sampler_default_params();
    r->sampling.temperature = 1.0f; /* OpenAI's defaults */
    r->sampling.top_k = 0;
    r->sampling.top_p = 1.0f;
    r->sampling.min_p = 0.0f;
    r->sampling.repeat_penalty = 1.0f;
    r->enable_thinking = r->show_thinking = true;
    r->keep_alive = -1;
    const cJSON *root = api_body_object(body, len, &r->json, message, size);
    if (!root)
        return false;
    api_owned *own = r->json;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsNull(model) && !cJSON_IsString(model))
        return api_fail(message, size, param, "model", "'%s' must be a string", NULL);
    r->model = model && cJSON_IsString(model) ? model->valuestring : NULL;
    if (kind == API_CHAT) {
        if (!api_check_messages(root, "messages", r, own, message, size, param))
            return false;
    } else {
        const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(root, "prompt");
        if (!prompt)
            return api_fail(message, size, param, "prompt", "'%s' is required", NULL);
        if (cJSON_IsArray(prompt) && cJSON_GetArraySize(prompt) == 1 && cJSON_IsString(cJSON_GetArrayItem(prompt, 0)))
            prompt = cJSON_GetArrayItem(prompt, 0);
        if (!cJSON_IsString(prompt))
            return api_fail(message, size, param, "prompt", "'%s' must be a string (or an array of one)", NULL);
        if (prompt->valuestring[0] == '\0')
            return api_fail(message, size, param, "prompt", "'%s' must not be empty", NULL);
        r->prompt = prompt->valuestring;
    }
    int64_t v = 0;
    bool present = false;
    if (!api_get_int(root, "max_completion_tokens", NULL, 1, INT32_MAX, &v, &present, message, size, param))
        return false;
    if (present)
        r->max_tokens = (int32_t)v;
    else if (!api_get_int(root, "max_tokens", NULL, 1, INT32_MAX, &v, &present, message, size, param))
        return false;
    else if (present)
        r->max_tokens = (int32_t)v;
    if (!api_get_int(root, "n", NULL, 1, 1, &v, &present, message, size, param))
        return false;
    if (!api_get_int(root, "seed", NULL, INT64_MIN / 2, INT64_MAX / 2, &v, &present, message, size, param))
        return false;
    r->sampling.seed = present ? (uint64_t)v : BRASA_SEED_RANDOM;
    if (!api_get_float(root, "temperature", NULL, 0, 2, false, &r->sampling.temperature, message, size, param) ||
        !api_get_float(root, "top_p", NULL, 0, 1, true, &r->sampling.top_p, message, size, param) ||
        !api_get_float(root, "presence_penalty", NULL, -2, 2, false, &r->sampling.presence_penalty, message, size, param) ||
        !api_get_float(root, "frequency_penalty", NULL, -2, 2, false, &r->sampling.frequency_penalty, message, size, param) ||
        !api_get_bool(root, "stream", NULL, &r->stream, message, size, param))
        return false;
    const cJSON *kwargs = cJSON_GetObjectItemCaseSensitive(root, "chat_template_kwargs");
    if (kind == API_CHAT && kwargs && !cJSON_IsNull(kwargs)) {
        if (!cJSON_IsObject(kwargs))
            return api_fail(message, size, param, "chat_template_kwargs", "'%s' must be an object", NULL);
        const cJSON *think = cJSON_GetObjectItemCaseSensitive(kwargs, "enable_thinking");
        if (think && !cJSON_IsNull(think) && !cJSON_IsBool(think))
            return api_fail(message, size, param, "chat_template_kwargs",
                        "'%s.enable_thinking' must be true or false", NULL);
        if (cJSON_IsBool(think))
            r->enable_thinking = cJSON_IsTrue(think);
        if (!(r->kwargs_json = api_own_json(own, kwargs)))
            return api_fail(message, size, param, "chat_template_kwargs", "out of memory", NULL);
    }
    if ((kind == API_CHAT && !api_check_tools(root, r, own, message, size, param)) ||
        !parse_response_format(root, r, own, message, size, param) || !parse_logprobs(root, r, message, size, param))
        return false;
    if (r->schema_json && (r->tool_choice == API_TOOLS_REQUIRED || r->tool_choice == API_TOOLS_NAMED))
        return api_fail(message, size, param, "response_format",
                    "'%s' and a required tool_choice both constrain the reply: give one", NULL);
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (opts && !cJSON_IsNull(opts)) {
        if (!cJSON_IsObject(opts))
            return api_fail(message, size, param, "stream_options", "'%s' must be an object", NULL);
        if (!api_get_bool(opts, "include_usage", NULL, &r->include_usage, message, size, param))
            return false;
    }
    return api_get_stop(cJSON_GetObjectItemCaseSensitive(root, "stop"), "stop", 4, r, message, size, param);
}
static cJSON *reply_head(const api_reply *r, bool chunk) {
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    char id[64];
    snprintf(id, sizeof id, "%s-%s", r->kind == API_CHAT ? "chatcmpl" : "cmpl", r->id);
    api_add_text(root, "id", id);
    api_add_text(root, "object", r->kind == API_CHAT ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                               : "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)r->created);
    api_add_text(root, "model", r->model);
    cJSON_AddStringToObject(root, "system_fingerprint", "brasa-" BRASA_VERSION_STRING);
    return root;
}

static cJSON *usage(int32_t prompt_tokens, int32_t completion_tokens) {
    cJSON *u = cJSON_CreateObject();
    if (u) {
        cJSON_AddNumberToObject(u, "prompt_tokens", prompt_tokens);
        cJSON_AddNumberToObject(u, "completion_tokens", completion_tokens);
        cJSON_AddNumberToObject(u, "total_tokens", (double)prompt_tokens + completion_tokens);
    }
    return u;
}

static void add_finish(cJSON *choice, const char *finish_reason) {
    if (finish_reason)
        api_add_text(choice, "finish_reason", finish_reason);
    else
        cJSON_AddNullToObject(choice, "finish_reason");
}

/* The reply's head with its one choice; NULL when out of memory. */
static cJSON *reply_with_choice(const api_reply *r, bool chunk, cJSON **choice) {
    cJSON *root = reply_head(r, chunk), *choices = cJSON_CreateArray();
    *choice = cJSON_CreateObject();
    if (!root || !choices || !*choice) {
        cJSON_Delete(root);
        cJSON_Delete(choices);
        cJSON_Delete(*choice);
        return NULL;
    }
    cJSON_AddItemToArray(choices, *choice);
    cJSON_AddItemToObject(root, "choices", choices);
    cJSON_AddNumberToObject(*choice, "index", 0);
    return root;
}

static cJSON *token_bytes(const api_logprob *t) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < t->len; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)t->text[i]));
    return a;
}

/* A logprob as JSON: -9999 for an impossible token, as OpenAI writes it (JSON has no -inf). */
static double logprob_value(float lp) {
    return isfinite(lp) ? (double)lp : -9999.0;
}

/* Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}. */
static cJSON *chat_logprobs(const api_message *m) {
    cJSON *lp = cJSON_CreateObject(), *content = cJSON_CreateArray();
    if (!lp || !content) {
        cJSON_Delete(lp);
        cJSON_Delete(content);
        return NULL;
    }
    for (size_t i = 0; i < m->n_logprobs; i++) {
        const api_token_logprobs *t = &m->logprobs[i];
        cJSON *e = cJSON_CreateObject(), *top = cJSON_CreateArray();
        cJSON_AddItemToObject(e, "token", api_text(t->chosen.text, t->chosen.len));
        cJSON_AddNumberToObject(e, "logprob", logprob_value(t->chosen.logprob));
        cJSON_AddItemToObject(e, "bytes", token_bytes(&t->chosen));
        for (int32_t k = 0; k < t->n_top; k++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToObject(o, "token", api_text(t->top[k].text, t->top[k].len));
            cJSON_AddNumberToObject(o, "logprob", logprob_value(t->top[k].logprob));
            cJSON_AddItemToObject(o, "bytes", token_bytes(&t->top[k]));
            cJSON_AddItemToArray(top, o);
        }
        cJSON_AddItemToObject(e, "top_logprobs", top);
        cJSON_AddItemToArray(content, e);
    }
    cJSON_AddItemToObject(lp, "content", content);
    cJSON_AddNullToObject(lp, "refusal");
    return lp;
}

/* Completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}. */
static cJSON *completion_logprobs(const api_message *m, size_t offset) {
    cJSON *lp = cJSON_CreateObject(), *tokens = cJSON_CreateArray(), *lps = cJSON_CreateArray(),
          *tops = cJSON_CreateArray(), *offsets = cJSON_CreateArray();
    for (size_t i = 0; i < m->n_logprobs; i++) {
        const api_token_logprobs *t = &m->logprobs[i];
        cJSON_AddItemToArray(tokens, api_text(t->chosen.text, t->chosen.len));
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(logprob_value(t->chosen.logprob)));
        cJSON *top = cJSON_CreateObject();
        for (int32_t k = 0; k < t->n_top; k++) {
            cJSON *key = api_text(t->top[k].text, t->top[k].len);
            if (key && cJSON_IsString(key) && !cJSON_GetObjectItemCaseSensitive(top, key->valuestring))
                cJSON_AddNumberToObject(top, key->valuestring, logprob_value(t->top[k].logprob));
            cJSON_Delete(key);
        }
        cJSON_AddItemToArray(tops, top);
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset));
        offset += t->chosen.len;
    }
    cJSON_AddItemToObject(lp, "tokens", tokens);
    cJSON_AddItemToObject(lp, "token_logprobs", lps);
    cJSON_AddItemToObject(lp, "top_logprobs", tops);
    cJSON_AddItemToObject(lp, "text_offset", offsets);
    return lp;
}

static cJSON *tool_calls_json(const api_message *m, bool chunk) {
    cJSON *calls = cJSON_CreateArray();
    for (size_t i = 0; calls && i < m->n_calls; i++) {
        cJSON *c = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        if (chunk)
            cJSON_AddNumberToObject(c, "index", (double)(m->first_call_index + i));
        api_add_text(c, "id", m->calls[i].id);
        cJSON_AddStringToObject(c, "type", "function");
        cJSON_AddItemToObject(fn, "name", api_text(m->calls[i].name, strlen(m->calls[i].name)));
        cJSON_AddItemToObject(fn, "arguments", api_text(m->calls[i].arguments, strlen(m->calls[i].arguments)));
        cJSON_AddItemToObject(c, "function", fn);
        cJSON_AddItemToArray(calls, c);
    }
    return calls;
}

/* The choice's message (whole reply) or delta (chunk), its logprobs and finish_reason. */
static void fill_choice(const api_reply *r, cJSON *choice, bool chunk, bool first, const api_message *m,
                        const char *finish_reason) {
    if (r->kind == API_CHAT) {
        cJSON *msg = cJSON_CreateObject();
        if (!chunk || first)
            cJSON_AddStringToObject(msg, "role", "assistant");
        if (m->content_len > 0 || (!chunk && m->n_calls == 0) || (chunk && !finish_reason && !m->reasoning_len && !m->n_calls))
            cJSON_AddItemToObject(msg, "content", api_text(m->content, m->content_len));
        else if (!chunk)
            cJSON_AddNullToObject(msg, "content");
        if (m->reasoning_len > 0)
            cJSON_AddItemToObject(msg, "reasoning_content", api_text(m->reasoning, m->reasoning_len));
        if (m->n_calls > 0)
            cJSON_AddItemToObject(msg, "tool_calls", tool_calls_json(m, chunk));
        cJSON_AddItemToObject(choice, chunk ? "delta" : "message", msg);
    } else {
        cJSON_AddItemToObject(choice, "text", api_text(m->content, m->content_len));
    }
    if (m->want_logprobs)
        cJSON_AddItemToObject(choice, "logprobs", r->kind == API_CHAT ? chat_logprobs(m) : completion_logprobs(m, 0));
    else
        cJSON_AddNullToObject(choice, "logprobs");
    add_finish(choice, finish_reason);
}

static const char *finish_of(const api_end *end) {
    return end ? end->finish : NULL;
}

static bool openai_whole(api_reply *r, const api_message *m, const api_end *end, buf *out) {
    cJSON *choice;
    cJSON *root = reply_with_choice(r, false, &choice);
    if (!root)
        return false;
    fill_choice(r, choice, false, true, m, finish_of(end));
    cJSON_AddItemToObject(root, "usage", usage(end->prompt_tokens, end->completion_tokens));
    return api_emit(root, "", "", out);
}

/* "data: {...}\n\n" with a delta (the role on a chat's first chunk); finish_reason NULL: none yet. */
static bool chunk_sse(api_reply *r, const api_message *m, const char *finish_reason, buf *out) {
    cJSON *choice;
    cJSON *root = reply_with_choice(r, true, &choice);
    if (!root)
        return false;
    fill_choice(r, choice, true, !r->started, m, finish_reason);
    r->started = true;
    return api_emit(root, "data: ", "\n\n", out);
}

static bool openai_chunk(api_reply *r, const api_message *m, buf *out) {
    return chunk_sse(r, m, NULL, out);
}

static bool openai_end(api_reply *r, const api_end *end, buf *out) {
    const api_message none = { 0 };
    if (!chunk_sse(r, &none, end->finish, out))
        return false;
    if (r->include_usage) {
        cJSON *root = reply_head(r, true);
        if (!root)
            return false;
        cJSON_AddItemToObject(root, "choices", cJSON_CreateArray());
        cJSON_AddItemToObject(root, "usage", usage(end->prompt_tokens, end->completion_tokens));
        if (!api_emit(root, "data: ", "\n\n", out))
            return false;
    }
    return buf_append(out, "data: [DONE]\n\n", 14);
}

/* {"error": {"message", "type", "param", "code"}}. */
static bool openai_error(int status, const char *message, const char *param, const char *code, buf *out) {
    const char *type = status < 500 ? "invalid_request_error" : status == 503 ? "unavailable" : "server_error";
    cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
    if (!root || !e) {
        cJSON_Delete(root);
        cJSON_Delete(e);
        return false;
    }
    cJSON_AddItemToObject(e, "message", api_text(message, strlen(message)));
    api_add_text(e, "type", type);
    if (param)
        api_add_text(e, "param", param);
    else
        cJSON_AddNullToObject(e, "param");
    if (code)
        api_add_text(e, "code", code);
    else
        cJSON_AddNullToObject(e, "code");
    cJSON_AddItemToObject(root, "error", e);
    return api_emit(root, "", "", out);
}

static bool openai_stream_error(api_reply *r, const char *message, buf *out) {
    (void)r;
    return buf_append(out, "data: ", 6) && openai_error(500, message, NULL, NULL, out) &&
           buf_append(out, "\n\ndata: [DONE]\n\n", 16);
}

/* {"input", "model", "encoding_format": "float" | "base64", "dimensions", "user"}. */
static bool openai_parse_embed(const char *body, size_t len, api_embed_request *r, char *message, size_t size,
                               const char **param) {
    memset(r, 0, sizeof *r);
    *param = NULL;
    r->keep_alive = -1;
    const cJSON *root = api_body_object(body, len, &r->json, message, size);
    if (!root)
        return false;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsNull(model) && !cJSON_IsString(model))
        return api_fail(message, size, param, "model", "'%s' must be a string", NULL);
    r->model = model && cJSON_IsString(model) ? model->valuestring : NULL;
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "encoding_format");
    if (format && !cJSON_IsNull(format)) {
        if (!cJSON_IsString(format) ||
            (strcmp(format->valuestring, "float") != 0 && strcmp(format->valuestring, "base64") != 0))
            return api_fail(message, size, param, "encoding_format", "'%s' must be \"float\" or \"base64\"", NULL);
        r->base64 = strcmp(format->valuestring, "base64") == 0;
    }
    int64_t v = 0;
    bool present = false;
    if (!api_get_int(root, "dimensions", NULL, 1, 65536, &v, &present, message, size, param))
        return false;
    r->dimensions = present ? (int32_t)v : 0;
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(root, "user");
    if (user && !cJSON_IsNull(user) && !cJSON_IsString(user))
        return api_fail(message, size, param, "user", "'%s' must be a string", NULL);
    return api_take_inputs(cJSON_GetObjectItemCaseSensitive(root, "input"), "input", r, r->json, message, size, param);
}

/* A vector as base64 of its little-endian float32 bytes, as OpenAI sends it. */
static cJSON *base64_floats(const float *v, size_t dim) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const size_t n = dim * 4;
    unsigned char *bytes = malloc(n);
    char *text = malloc((n + 2) / 3 * 4 + 1);
    cJSON *s = NULL;
    if (bytes && text) {
        for (size_t i = 0; i < dim; i++) {
            uint32_t u;
            memcpy(&u, &v[i], 4);
            for (int b = 0; b < 4; b++)
                bytes[i * 4 + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        size_t o = 0;
        for (size_t i = 0; i < n; i += 3) {
            const uint32_t w = (uint32_t)bytes[i] << 16 | (i + 1 < n ? (uint32_t)bytes[i + 1] << 8 : 0) |
                               (i + 2 < n ? bytes[i + 2] : 0);
            text[o++] = digits[w >> 18 & 63];
            text[o++] = digits[w >> 12 & 63];
            text[o++] = i + 1 < n ? digits[w >> 6 & 63] : '=';
            text[o++] = i + 2 < n ? digits[w & 63] : '=';
        }
        text[o] = '\0';
        s = cJSON_CreateString(text);
    }
    free(bytes);
    free(text);
    return s;
}

static bool openai_embeddings(const api_embed_request *rq, const char *model, const float *vectors, size_t n,
                              size_t dim, int32_t prompt_tokens, double seconds, buf *out) {
    (void)seconds;
    cJSON *data;
    cJSON *root = api_object_with_array("data", &data);
    if (!root)
        return false;
    cJSON_AddStringToObject(root, "object", "list");
    for (size_t i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject(), *vec;
        if (rq->base64) {
            vec = base64_floats(vectors + i * dim, dim);
        } else {
            vec = api_floats(vectors + i * dim, dim);
        }
        cJSON_AddStringToObject(e, "object", "embedding");
        cJSON_AddNumberToObject(e, "index", (double)i);
        cJSON_AddItemToObject(e, "embedding", vec);
        cJSON_AddItemToArray(data, e);
    }
    api_add_text(root, "model", model);
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", prompt_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", prompt_tokens);
    cJSON_AddItemToObject(root, "usage", u);
    return api_emit(root, "", "", out);
}

static bool openai_models(api_action action, const api_model_info *models, size_t n, int64_t started, buf *out) {
    (void)action;
    cJSON *data;
    cJSON *root = api_object_with_array("data", &data);
    if (!root)
        return false;
    cJSON_AddStringToObject(root, "object", "list");
    for (size_t i = 0; i < n; i++) {
        cJSON *m = cJSON_CreateObject();
        api_add_text(m, "id", models[i].name);
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", (double)(models[i].modified ? models[i].modified : started));
        cJSON_AddStringToObject(m, "owned_by", "brasa");
        cJSON_AddItemToArray(data, m);
    }
    return api_emit(root, "", "", out);
}

static const api_endpoint openai_endpoints[] = {
    { "POST", "/v1/chat/completions", API_GENERATE, API_CHAT },
    { "POST", "/v1/completions", API_GENERATE, API_COMPLETION },
    { "POST", "/v1/embeddings", API_EMBED, API_CHAT },
    { "GET", "/v1/models", API_MODELS, API_CHAT },
    /* the same without /v1, as some clients are configured */
    { "POST", "/chat/completions", API_GENERATE, API_CHAT },
    { "POST", "/completions", API_GENERATE, API_COMPLETION },
    { "POST", "/embeddings", API_EMBED, API_CHAT },
    { "GET", "/models", API_MODELS, API_CHAT },
};

const api_dialect api_openai = {
    .name = "openai",
    .endpoints = openai_endpoints,
    .n_endpoints = sizeof openai_endpoints / sizeof openai_endpoints[0],
    .stream_type = "text/event-stream; charset=utf-8",
    .parse = openai_parse,
    .parse_embed = openai_parse_embed,
    .whole = openai_whole,
    .chunk = openai_chunk,
    .end = openai_end,
    .stream_error = openai_stream_error,
    .error = openai_error,
    .embeddings = openai_embeddings,
    .models = openai_models,
};
