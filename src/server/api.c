/* api.c: OpenAI request checking and response building with cJSON (see api.h). The rules follow
 * the OpenAI API reference: ranges of temperature (0..2), top_p (0..1], presence and frequency
 * penalties (-2..2), at most four stop strings, n = 1 only here. Beyond it, as vLLM and llama.cpp
 * take them: chat_template_kwargs.enable_thinking, and the reasoning_content of a reply. */
#include "server/api.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

/* The request's owned pieces: the parsed tree and message texts joined from content parts. */
typedef struct api_owned {
    cJSON *root;
    char **texts;
    size_t n_texts;
} api_owned;

static bool fail(char *message, size_t size, const char **param, const char *name, const char *fmt, const char *what) {
    snprintf(message, size, fmt, what ? what : name);
    *param = name;
    return false;
}

/* A number field that must be a whole number in [lo, hi]. */
static bool get_int(const cJSON *root, const char *name, int64_t lo, int64_t hi, int64_t *out, bool *present,
                    char *message, size_t size, const char **param) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    *present = v && !cJSON_IsNull(v);
    if (!*present)
        return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
        return fail(message, size, param, name, "'%s' must be an integer", NULL);
    if (v->valuedouble < (double)lo || v->valuedouble > (double)hi) {
        snprintf(message, size, "'%s' must be between %lld and %lld", name, (long long)lo, (long long)hi);
        *param = name;
        return false;
    }
    *out = (int64_t)v->valuedouble;
    return true;
}

static bool get_float(const cJSON *root, const char *name, double lo, double hi, bool lo_open, float *out,
                      char *message, size_t size, const char **param) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return fail(message, size, param, name, "'%s' must be a number", NULL);
    if (v->valuedouble > hi || v->valuedouble < lo || (lo_open && v->valuedouble == lo)) {
        snprintf(message, size, "'%s' must be %s %g and at most %g", name, lo_open ? "above" : "at least", lo, hi);
        *param = name;
        return false;
    }
    *out = (float)v->valuedouble;
    return true;
}

static bool get_bool(const cJSON *root, const char *name, bool *out, char *message, size_t size, const char **param) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsBool(v))
        return fail(message, size, param, name, "'%s' must be true or false", NULL);
    *out = cJSON_IsTrue(v);
    return true;
}

/* A message's content: a string, or an array of {"type": "text", "text": ...} parts joined. */
static const char *message_text(const cJSON *content, api_owned *own) {
    if (cJSON_IsString(content))
        return content->valuestring;
    if (!cJSON_IsArray(content))
        return NULL;
    size_t total = 1;
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text))
            return NULL;
        total += strlen(text->valuestring);
    }
    char **texts = realloc(own->texts, (own->n_texts + 1) * sizeof *texts);
    if (!texts)
        return NULL;
    own->texts = texts;
    char *joined = malloc(total);
    if (!joined)
        return NULL;
    size_t at = 0; /* appended at a known end: strcat would rescan the text for every part */
    cJSON_ArrayForEach(part, content) {
        const char *text = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        const size_t n = strlen(text);
        memcpy(joined + at, text, n);
        at += n;
    }
    joined[at] = '\0';
    own->texts[own->n_texts++] = joined;
    return joined;
}

static bool parse_messages(const cJSON *root, api_request *r, api_owned *own, char *message, size_t size,
                           const char **param) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!msgs)
        return fail(message, size, param, "messages", "'%s' is required", NULL);
    if (!cJSON_IsArray(msgs))
        return fail(message, size, param, "messages", "'%s' must be an array of messages", NULL);
    const int n = cJSON_GetArraySize(msgs);
    if (n == 0)
        return fail(message, size, param, "messages", "'%s' must not be empty", NULL);
    if (n > API_MAX_MESSAGES)
        return fail(message, size, param, "messages", "'%s' holds more than 1024 messages", NULL);
    r->messages = calloc((size_t)n, sizeof *r->messages);
    if (!r->messages)
        return fail(message, size, param, "messages", "out of memory", NULL);
    int i = 0;
    bool has_user = false;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        char name[48];
        snprintf(name, sizeof name, "messages[%d]", i);
        if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
            snprintf(message, size, "%s must be an object with a string 'role'", name);
            *param = "messages";
            return false;
        }
        const char *rs = role->valuestring;
        if (strcmp(rs, "developer") == 0)
            rs = "system";
        if (strcmp(rs, "system") != 0 && strcmp(rs, "user") != 0 && strcmp(rs, "assistant") != 0) {
            snprintf(message, size, "%s.role '%.32s' is not one of system, developer, user, assistant", name, role->valuestring);
            *param = "messages";
            return false;
        }
        const char *text = content ? message_text(content, own) : NULL;
        if (!text) {
            snprintf(message, size, "%s.content must be a string or an array of text parts", name);
            *param = "messages";
            return false;
        }
        if (strcmp(rs, "user") == 0) {
            has_user = true;
            if (text[0] == '\0') {
                snprintf(message, size, "%s.content must not be empty", name);
                *param = "messages";
                return false;
            }
        }
        r->messages[i].role = rs;
        r->messages[i].content = text;
        i++;
    }
    r->n_messages = (size_t)n;
    if (!has_user)
        return fail(message, size, param, "messages", "'%s' must hold at least one user message", NULL);
    return true;
}

bool api_parse(api_kind kind, const char *body, size_t len, api_request *r, char *message, size_t size,
               const char **param) {
    memset(r, 0, sizeof *r);
    *param = NULL;
    r->kind = kind;
    r->sampling = brasa_sampler_default_params();
    r->sampling.temperature = 1.0f; /* OpenAI's defaults */
    r->sampling.top_k = 0;
    r->sampling.top_p = 1.0f;
    r->sampling.min_p = 0.0f;
    r->sampling.repeat_penalty = 1.0f;
    api_owned *own = calloc(1, sizeof *own);
    if (!own) {
        snprintf(message, size, "out of memory");
        return false;
    }
    r->json = own;
    if (!utf8_is_valid(body, len)) {
        snprintf(message, size, "the body is not valid UTF-8");
        return false;
    }
    own->root = cJSON_ParseWithLength(body, len);
    if (!own->root) {
        snprintf(message, size, "the body is not valid JSON");
        return false;
    }
    const cJSON *root = own->root;
    if (!cJSON_IsObject(root)) {
        snprintf(message, size, "the body must be a JSON object");
        return false;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsNull(model) && !cJSON_IsString(model))
        return fail(message, size, param, "model", "'%s' must be a string", NULL);
    if (kind == API_CHAT) {
        if (!parse_messages(root, r, own, message, size, param))
            return false;
    } else {
        const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(root, "prompt");
        if (!prompt)
            return fail(message, size, param, "prompt", "'%s' is required", NULL);
        if (cJSON_IsArray(prompt) && cJSON_GetArraySize(prompt) == 1 && cJSON_IsString(cJSON_GetArrayItem(prompt, 0)))
            prompt = cJSON_GetArrayItem(prompt, 0);
        if (!cJSON_IsString(prompt))
            return fail(message, size, param, "prompt", "'%s' must be a string (or an array of one)", NULL);
        if (prompt->valuestring[0] == '\0')
            return fail(message, size, param, "prompt", "'%s' must not be empty", NULL);
        r->prompt = prompt->valuestring;
    }
    int64_t v = 0;
    bool present = false;
    if (!get_int(root, "max_completion_tokens", 1, INT32_MAX, &v, &present, message, size, param))
        return false;
    if (present)
        r->max_tokens = (int32_t)v;
    else if (!get_int(root, "max_tokens", 1, INT32_MAX, &v, &present, message, size, param))
        return false;
    else if (present)
        r->max_tokens = (int32_t)v;
    if (!get_int(root, "n", 1, 1, &v, &present, message, size, param))
        return false;
    if (!get_int(root, "seed", INT64_MIN / 2, INT64_MAX / 2, &v, &present, message, size, param))
        return false;
    r->sampling.seed = present ? (uint64_t)v : BRASA_SEED_RANDOM;
    if (!get_float(root, "temperature", 0, 2, false, &r->sampling.temperature, message, size, param) ||
        !get_float(root, "top_p", 0, 1, true, &r->sampling.top_p, message, size, param) ||
        !get_float(root, "presence_penalty", -2, 2, false, &r->sampling.presence_penalty, message, size, param) ||
        !get_float(root, "frequency_penalty", -2, 2, false, &r->sampling.frequency_penalty, message, size, param) ||
        !get_bool(root, "stream", &r->stream, message, size, param))
        return false;
    r->enable_thinking = true;
    const cJSON *kwargs = cJSON_GetObjectItemCaseSensitive(root, "chat_template_kwargs");
    if (kind == API_CHAT && kwargs && !cJSON_IsNull(kwargs)) {
        if (!cJSON_IsObject(kwargs))
            return fail(message, size, param, "chat_template_kwargs", "'%s' must be an object", NULL);
        /* brasa renders its formats natively: a template variable it does not know would be dropped
         * unseen, so it is refused by name instead */
        const cJSON *key = NULL;
        cJSON_ArrayForEach(key, kwargs)
            if (!key->string || strcmp(key->string, "enable_thinking") != 0)
                return fail(message, size, param, "chat_template_kwargs",
                            "'chat_template_kwargs.%s' is not supported (brasa renders chat formats natively; it takes "
                            "enable_thinking)", key->string ? key->string : "?");
        const cJSON *think = cJSON_GetObjectItemCaseSensitive(kwargs, "enable_thinking");
        if (think && !cJSON_IsNull(think) && !cJSON_IsBool(think))
            return fail(message, size, param, "chat_template_kwargs",
                        "'%s.enable_thinking' must be true or false", NULL);
        if (cJSON_IsBool(think))
            r->enable_thinking = cJSON_IsTrue(think);
    }
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (opts && !cJSON_IsNull(opts)) {
        if (!cJSON_IsObject(opts))
            return fail(message, size, param, "stream_options", "'%s' must be an object", NULL);
        if (!get_bool(opts, "include_usage", &r->include_usage, message, size, param))
            return false;
    }
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(root, "stop");
    if (stop && !cJSON_IsNull(stop)) {
        int n = 0;
        if (cJSON_IsString(stop)) {
            r->stop[n++] = stop->valuestring;
        } else if (cJSON_IsArray(stop)) {
            if (cJSON_GetArraySize(stop) > API_MAX_STOP)
                return fail(message, size, param, "stop", "'%s' holds at most 4 strings", NULL);
            const cJSON *s;
            cJSON_ArrayForEach(s, stop) {
                if (!cJSON_IsString(s))
                    return fail(message, size, param, "stop", "'%s' must be a string or an array of strings", NULL);
                r->stop[n++] = s->valuestring;
            }
        } else {
            return fail(message, size, param, "stop", "'%s' must be a string or an array of strings", NULL);
        }
        for (int i = 0; i < n; i++)
            if (r->stop[i][0] == '\0')
                return fail(message, size, param, "stop", "'%s' strings must not be empty", NULL);
    }
    return true;
}

void api_request_free(api_request *r) {
    api_owned *own = r->json;
    if (own) {
        cJSON_Delete(own->root);
        for (size_t i = 0; i < own->n_texts; i++)
            free(own->texts[i]);
        free(own->texts);
        free(own);
    }
    free(r->messages);
    memset(r, 0, sizeof *r);
}

/* A JSON string of any bytes: ill-formed UTF-8 becomes U+FFFD (cJSON would pass it through). */
static cJSON *text_string(const char *s, size_t n) {
    char *clean = malloc(n * 3 + 1);
    if (!clean)
        return NULL;
    size_t o = 0;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        const int k = utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (k > 0) {
            memcpy(clean + o, s + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else {
            memcpy(clean + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += (size_t)-k;
        }
    }
    clean[o] = '\0';
    cJSON *j = cJSON_CreateString(clean);
    free(clean);
    return j;
}

static bool emit(cJSON *root, const char *prefix, const char *suffix, buf *out) {
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return false;
    const bool ok = buf_append(out, prefix, strlen(prefix)) && buf_append(out, text, strlen(text)) &&
                    buf_append(out, suffix, strlen(suffix));
    cJSON_free(text);
    return ok;
}

static cJSON *reply_head(const api_reply *r, bool chunk) {
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "id", r->id);
    cJSON_AddStringToObject(root, "object", r->kind == API_CHAT ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                               : "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)r->created);
    cJSON_AddStringToObject(root, "model", r->model);
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
        cJSON_AddStringToObject(choice, "finish_reason", finish_reason);
    else
        cJSON_AddNullToObject(choice, "finish_reason");
}

/* The reply's head with one choice holding text: content is attached by the caller (message,
 * delta or text); NULL when out of memory. */
typedef struct reply_parts {
    cJSON *root, *choice, *content;
} reply_parts;

static bool reply_parts_make(const api_reply *r, bool chunk, const char *text, size_t len, reply_parts *p) {
    p->root = reply_head(r, chunk);
    cJSON *choices = cJSON_CreateArray();
    p->choice = cJSON_CreateObject();
    p->content = text_string(text, len);
    if (!p->root || !choices || !p->choice || !p->content) {
        cJSON_Delete(p->root);
        cJSON_Delete(choices);
        cJSON_Delete(p->choice);
        cJSON_Delete(p->content);
        return false;
    }
    cJSON_AddItemToArray(choices, p->choice);
    cJSON_AddItemToObject(p->root, "choices", choices);
    cJSON_AddNumberToObject(p->choice, "index", 0);
    return true;
}

bool api_completion_json(const api_reply *r, const char *text, size_t len, const char *reasoning, size_t reasoning_len,
                         const char *finish_reason, int32_t prompt_tokens, int32_t completion_tokens, buf *out) {
    reply_parts p;
    if (!reply_parts_make(r, false, text, len, &p))
        return false;
    if (r->kind == API_CHAT) {
        cJSON *msg = cJSON_CreateObject();
        cJSON_AddStringToObject(msg, "role", "assistant");
        cJSON_AddItemToObject(msg, "content", p.content);
        if (reasoning_len > 0)
            cJSON_AddItemToObject(msg, "reasoning_content", text_string(reasoning, reasoning_len));
        cJSON_AddItemToObject(p.choice, "message", msg);
    } else {
        cJSON_AddItemToObject(p.choice, "text", p.content);
    }
    cJSON_AddNullToObject(p.choice, "logprobs");
    add_finish(p.choice, finish_reason);
    cJSON_AddItemToObject(p.root, "usage", usage(prompt_tokens, completion_tokens));
    return emit(p.root, "", "", out);
}

bool api_chunk_sse(const api_reply *r, bool first, const char *text, size_t len, const char *finish_reason, buf *out) {
    reply_parts p;
    if (!reply_parts_make(r, true, text, len, &p))
        return false;
    if (r->kind == API_CHAT) {
        cJSON *delta = cJSON_CreateObject();
        if (first)
            cJSON_AddStringToObject(delta, "role", "assistant");
        if (len > 0 || !finish_reason)
            cJSON_AddItemToObject(delta, "content", p.content);
        else
            cJSON_Delete(p.content);
        cJSON_AddItemToObject(p.choice, "delta", delta);
    } else {
        cJSON_AddItemToObject(p.choice, "text", p.content);
    }
    cJSON_AddNullToObject(p.choice, "logprobs");
    add_finish(p.choice, finish_reason);
    return emit(p.root, "data: ", "\n\n", out);
}

bool api_reasoning_chunk_sse(const api_reply *r, bool first, const char *text, size_t len, buf *out) {
    reply_parts p;
    if (!reply_parts_make(r, true, text, len, &p))
        return false;
    cJSON *delta = cJSON_CreateObject();
    if (first)
        cJSON_AddStringToObject(delta, "role", "assistant");
    cJSON_AddItemToObject(delta, "reasoning_content", p.content);
    cJSON_AddItemToObject(p.choice, "delta", delta);
    cJSON_AddNullToObject(p.choice, "logprobs");
    add_finish(p.choice, NULL);
    return emit(p.root, "data: ", "\n\n", out);
}

bool api_usage_sse(const api_reply *r, int32_t prompt_tokens, int32_t completion_tokens, buf *out) {
    cJSON *root = reply_head(r, true);
    if (!root)
        return false;
    cJSON_AddItemToObject(root, "choices", cJSON_CreateArray());
    cJSON_AddItemToObject(root, "usage", usage(prompt_tokens, completion_tokens));
    return emit(root, "data: ", "\n\n", out);
}

bool api_models_json(const char *model, int64_t created, buf *out) {
    cJSON *root = cJSON_CreateObject(), *data = cJSON_CreateArray(), *m = cJSON_CreateObject();
    if (!root || !data || !m) {
        cJSON_Delete(root);
        cJSON_Delete(data);
        cJSON_Delete(m);
        return false;
    }
    cJSON_AddStringToObject(root, "object", "list");
    cJSON_AddStringToObject(m, "id", model);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)created);
    cJSON_AddStringToObject(m, "owned_by", "brasa");
    cJSON_AddItemToArray(data, m);
    cJSON_AddItemToObject(root, "data", data);
    return emit(root, "", "", out);
}

bool api_error_json(const char *message, const char *type, const char *param, const char *code, buf *out) {
    cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
    if (!root || !e) {
        cJSON_Delete(root);
        cJSON_Delete(e);
        return false;
    }
    cJSON_AddItemToObject(e, "message", text_string(message, strlen(message)));
    cJSON_AddStringToObject(e, "type", type);
    if (param)
        cJSON_AddStringToObject(e, "param", param);
    else
        cJSON_AddNullToObject(e, "param");
    if (code)
        cJSON_AddStringToObject(e, "code", code);
    else
        cJSON_AddNullToObject(e, "code");
    cJSON_AddItemToObject(root, "error", e);
    return emit(root, "", "", out);
}
