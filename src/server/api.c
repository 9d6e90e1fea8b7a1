/* api.c: OpenAI request checking and response building with cJSON (see api.h). The rules follow
 * the OpenAI API reference: ranges of temperature (0..2), top_p (0..1], presence and frequency
 * penalties (-2..2), at most four stop strings, n = 1 only here, tools of type "function" with a
 * name OpenAI accepts, tool_choice, response_format, logprobs (chat: a flag and top_logprobs up to
 * 20; completions: a count up to 5). Beyond it, as vLLM and llama.cpp take them:
 * chat_template_kwargs (any template variables), and the reasoning_content of a reply. */
#include "server/api.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

/* The request's owned pieces: the parsed tree and the strings made from it. */
typedef struct api_owned {
    cJSON *root;
    char **texts;
    size_t n_texts;
} api_owned;

/* Keeps text (malloc'd, may be NULL) with the request; NULL when out of memory. */
static char *own_text(api_owned *own, char *text) {
    char **texts = text ? realloc(own->texts, (own->n_texts + 1) * sizeof *texts) : NULL;
    if (!texts) {
        free(text);
        return NULL;
    }
    own->texts = texts;
    own->texts[own->n_texts++] = text;
    return text;
}

/* The compact JSON of a node, kept with the request. */
static char *own_json(api_owned *own, const cJSON *node) {
    return own_text(own, cJSON_PrintUnformatted(node));
}

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
    return own_text(own, joined);
}

static bool bad_message(char *message, size_t size, const char **param, const char *fmt, int i, const char *what) {
    char name[48];
    snprintf(name, sizeof name, "messages[%d]", i);
    snprintf(message, size, fmt, name, what);
    *param = "messages";
    return false;
}

/* An assistant message's tool_calls: [{id, type: "function", function: {name, arguments: a string}}]. */
static bool check_tool_calls(const cJSON *calls, int i, char *message, size_t size, const char **param) {
    if (!cJSON_IsArray(calls))
        return bad_message(message, size, param, "%s.tool_calls must be an array%s", i, "");
    const cJSON *call;
    cJSON_ArrayForEach(call, calls) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(call, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        if (!cJSON_IsObject(call) || (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "function") == 0)) ||
            !cJSON_IsObject(fn) || !cJSON_IsString(name) || !(cJSON_IsString(args) || cJSON_IsObject(args)))
            return bad_message(message, size, param,
                               "%s.tool_calls: each call must be {\"type\": \"function\", \"function\": {\"name\": "
                               "a string, \"arguments\": a JSON string}}%s", i, "");
        if (cJSON_IsString(args)) {
            cJSON *parsed = cJSON_Parse(args->valuestring);
            const bool object = cJSON_IsObject(parsed);
            cJSON_Delete(parsed);
            if (!object)
                return bad_message(message, size, param, "%s.tool_calls: the arguments of '%.64s' are not a JSON object", i,
                                   name->valuestring);
        }
    }
    return true;
}

/* The messages, checked, as the chat template takes them: text parts joined into a string,
 * "developer" as "system" (what the templates know), everything else as given. */
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
    cJSON *out = cJSON_CreateArray();
    if (!out)
        return fail(message, size, param, "messages", "out of memory", NULL);
    int i = 0;
    bool ok = true;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
            ok = bad_message(message, size, param, "%s must be an object with a string 'role'%s", i, "");
            break;
        }
        const char *rs = role->valuestring;
        if (strcmp(rs, "developer") == 0)
            rs = "system";
        if (strcmp(rs, "system") != 0 && strcmp(rs, "user") != 0 && strcmp(rs, "assistant") != 0 &&
            strcmp(rs, "tool") != 0) {
            ok = bad_message(message, size, param, "%s.role '%.32s' is not one of system, developer, user, assistant, tool",
                             i, role->valuestring);
            break;
        }
        const bool assistant = strcmp(rs, "assistant") == 0;
        const bool has_calls = calls && !cJSON_IsNull(calls);
        if (has_calls && (!assistant || !check_tool_calls(calls, i, message, size, param))) {
            if (!assistant)
                bad_message(message, size, param, "%s: only assistant messages carry tool_calls%s", i, "");
            ok = false;
            break;
        }
        const bool no_content = !content || cJSON_IsNull(content);
        const char *text = no_content ? NULL : message_text(content, own);
        if (!text && !(no_content && assistant && has_calls)) {
            ok = bad_message(message, size, param, "%s.content must be a string or an array of text parts%s", i, "");
            break;
        }
        if (text && strcmp(rs, "user") == 0 && text[0] == '\0') {
            ok = bad_message(message, size, param, "%s.content must not be empty%s", i, "");
            break;
        }
        cJSON *copy = cJSON_Duplicate(m, true);
        if (!copy) {
            ok = fail(message, size, param, "messages", "out of memory", NULL);
            break;
        }
        cJSON_AddItemToArray(out, copy);
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "role", cJSON_CreateString(rs));
        if (text)
            cJSON_ReplaceItemInObjectCaseSensitive(copy, "content", cJSON_CreateString(text));
        i++;
    }
    if (ok && !(r->messages_json = own_json(own, out)))
        ok = fail(message, size, param, "messages", "out of memory", NULL);
    cJSON_Delete(out);
    return ok;
}

/* tools: [{"type": "function", "function": {"name", "description"?, "parameters"?: a schema}}]. */
static bool parse_tools(const cJSON *root, api_request *r, api_owned *own, char *message, size_t size,
                        const char **param) {
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    r->parallel_tool_calls = true;
    if (!get_bool(root, "parallel_tool_calls", &r->parallel_tool_calls, message, size, param))
        return false;
    const bool has_tools = tools && !cJSON_IsNull(tools);
    if (has_tools) {
        if (!cJSON_IsArray(tools))
            return fail(message, size, param, "tools", "'%s' must be an array", NULL);
        if (cJSON_GetArraySize(tools) > API_MAX_TOOLS)
            return fail(message, size, param, "tools", "'%s' holds more than 128 tools", NULL);
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
            const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
            if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsObject(fn))
                return fail(message, size, param, "tools", "each of '%s' must be {\"type\": \"function\", \"function\": {...}}",
                            NULL);
            bool good_name = cJSON_IsString(name) && name->valuestring[0] && strlen(name->valuestring) <= 64;
            for (const char *q = good_name ? name->valuestring : ""; *q; q++)
                good_name = good_name && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                                          (*q >= '0' && *q <= '9') || *q == '_' || *q == '-' || *q == '.');
            if (!good_name)
                return fail(message, size, param, "tools",
                            "a function name in '%s' must be 1 to 64 letters, digits, '_', '-' or '.'", NULL);
            if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
                return fail(message, size, param, "tools", "a function's parameters in '%s' must be a JSON Schema object",
                            NULL);
        }
    }
    r->tool_choice = API_TOOLS_AUTO;
    if (choice && !cJSON_IsNull(choice)) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(choice, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (cJSON_IsString(choice) && strcmp(choice->valuestring, "auto") == 0)
            r->tool_choice = API_TOOLS_AUTO;
        else if (cJSON_IsString(choice) && strcmp(choice->valuestring, "none") == 0)
            r->tool_choice = API_TOOLS_NONE;
        else if (cJSON_IsString(choice) && strcmp(choice->valuestring, "required") == 0)
            r->tool_choice = API_TOOLS_REQUIRED;
        else if (cJSON_IsObject(choice) && cJSON_IsString(name)) {
            r->tool_choice = API_TOOLS_NAMED;
            r->tool_name = name->valuestring;
        } else {
            return fail(message, size, param, "tool_choice",
                        "'%s' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": "
                        "{\"name\": ...}}", NULL);
        }
        if (r->tool_choice != API_TOOLS_AUTO && r->tool_choice != API_TOOLS_NONE && !has_tools)
            return fail(message, size, param, "tool_choice", "'%s' names tools, but the request has none", NULL);
        if (r->tool_choice == API_TOOLS_NAMED) {
            bool found = false;
            const cJSON *t;
            cJSON_ArrayForEach(t, tools) {
                const cJSON *tn = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "function"), "name");
                found = found || strcmp(tn->valuestring, r->tool_name) == 0;
            }
            if (!found) {
                snprintf(message, size, "'tool_choice' names the function '%.64s', which is not among the tools",
                         r->tool_name);
                *param = "tool_choice";
                return false;
            }
        }
    }
    if (has_tools && cJSON_GetArraySize(tools) > 0 && r->tool_choice != API_TOOLS_NONE &&
        !(r->tools_json = own_json(own, tools)))
        return fail(message, size, param, "tools", "out of memory", NULL);
    return true;
}

/* response_format: {"type": "text"}, {"type": "json_object"}, or {"type": "json_schema",
 * "json_schema": {"name", "schema", "strict"?, "description"?}}. */
static bool parse_response_format(const cJSON *root, api_request *r, api_owned *own, char *message, size_t size,
                                  const char **param) {
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "response_format");
    if (!rf || cJSON_IsNull(rf))
        return true;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
    if (!cJSON_IsObject(rf) || !cJSON_IsString(type))
        return fail(message, size, param, "response_format", "'%s' must be an object with a 'type'", NULL);
    if (strcmp(type->valuestring, "text") == 0)
        return true;
    if (strcmp(type->valuestring, "json_object") == 0) {
        r->schema_json = "{\"type\":\"object\"}";
        return true;
    }
    if (strcmp(type->valuestring, "json_schema") != 0)
        return fail(message, size, param, "response_format",
                    "'%s.type' must be \"text\", \"json_object\" or \"json_schema\"", NULL);
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(js, "name");
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(js, "schema");
    const cJSON *strict = cJSON_GetObjectItemCaseSensitive(js, "strict");
    if (!cJSON_IsObject(js) || !cJSON_IsString(name))
        return fail(message, size, param, "response_format", "'%s.json_schema' must be an object with a 'name'", NULL);
    if (strict && !cJSON_IsNull(strict) && !cJSON_IsBool(strict))
        return fail(message, size, param, "response_format", "'%s.json_schema.strict' must be true or false", NULL);
    if (schema && !cJSON_IsNull(schema) && !cJSON_IsObject(schema) && !cJSON_IsBool(schema))
        return fail(message, size, param, "response_format", "'%s.json_schema.schema' must be a JSON Schema object", NULL);
    /* the output follows the schema whether or not strict is set: brasa always enforces it */
    r->schema_json = schema && !cJSON_IsNull(schema) ? own_json(own, schema) : "{}";
    if (!r->schema_json)
        return fail(message, size, param, "response_format", "out of memory", NULL);
    return true;
}

/* Chat: "logprobs": bool and "top_logprobs": 0..20; completions: "logprobs": 0..5. */
static bool parse_logprobs(const cJSON *root, api_request *r, char *message, size_t size, const char **param) {
    r->logprobs = -1;
    int64_t v = 0;
    bool present = false;
    if (r->kind == API_COMPLETION) {
        if (!get_int(root, "logprobs", 0, 5, &v, &present, message, size, param))
            return false;
        r->logprobs = present ? (int32_t)v : -1;
        return true;
    }
    bool want = false;
    if (!get_bool(root, "logprobs", &want, message, size, param) ||
        !get_int(root, "top_logprobs", 0, API_MAX_TOP_LOGPROBS, &v, &present, message, size, param))
        return false;
    if (present && !want)
        return fail(message, size, param, "top_logprobs", "'%s' needs 'logprobs': true", NULL);
    r->logprobs = want ? (int32_t)(present ? v : 0) : -1;
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
        const cJSON *think = cJSON_GetObjectItemCaseSensitive(kwargs, "enable_thinking");
        if (think && !cJSON_IsNull(think) && !cJSON_IsBool(think))
            return fail(message, size, param, "chat_template_kwargs",
                        "'%s.enable_thinking' must be true or false", NULL);
        if (cJSON_IsBool(think))
            r->enable_thinking = cJSON_IsTrue(think);
        if (!(r->kwargs_json = own_json(own, kwargs)))
            return fail(message, size, param, "chat_template_kwargs", "out of memory", NULL);
    }
    if ((kind == API_CHAT && !parse_tools(root, r, own, message, size, param)) ||
        !parse_response_format(root, r, own, message, size, param) || !parse_logprobs(root, r, message, size, param))
        return false;
    if (r->schema_json && (r->tool_choice == API_TOOLS_REQUIRED || r->tool_choice == API_TOOLS_NAMED))
        return fail(message, size, param, "response_format",
                    "'%s' and a required tool_choice both constrain the reply: give one", NULL);
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
        cJSON_AddItemToObject(e, "token", text_string(t->chosen.text, t->chosen.len));
        cJSON_AddNumberToObject(e, "logprob", logprob_value(t->chosen.logprob));
        cJSON_AddItemToObject(e, "bytes", token_bytes(&t->chosen));
        for (int32_t k = 0; k < t->n_top; k++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToObject(o, "token", text_string(t->top[k].text, t->top[k].len));
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
        cJSON_AddItemToArray(tokens, text_string(t->chosen.text, t->chosen.len));
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(logprob_value(t->chosen.logprob)));
        cJSON *top = cJSON_CreateObject();
        for (int32_t k = 0; k < t->n_top; k++) {
            cJSON *key = text_string(t->top[k].text, t->top[k].len);
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
        cJSON_AddStringToObject(c, "id", m->calls[i].id);
        cJSON_AddStringToObject(c, "type", "function");
        cJSON_AddItemToObject(fn, "name", text_string(m->calls[i].name, strlen(m->calls[i].name)));
        cJSON_AddItemToObject(fn, "arguments", text_string(m->calls[i].arguments, strlen(m->calls[i].arguments)));
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
            cJSON_AddItemToObject(msg, "content", text_string(m->content, m->content_len));
        else if (!chunk)
            cJSON_AddNullToObject(msg, "content");
        if (m->reasoning_len > 0)
            cJSON_AddItemToObject(msg, "reasoning_content", text_string(m->reasoning, m->reasoning_len));
        if (m->n_calls > 0)
            cJSON_AddItemToObject(msg, "tool_calls", tool_calls_json(m, chunk));
        cJSON_AddItemToObject(choice, chunk ? "delta" : "message", msg);
    } else {
        cJSON_AddItemToObject(choice, "text", text_string(m->content, m->content_len));
    }
    if (m->want_logprobs)
        cJSON_AddItemToObject(choice, "logprobs", r->kind == API_CHAT ? chat_logprobs(m) : completion_logprobs(m, 0));
    else
        cJSON_AddNullToObject(choice, "logprobs");
    add_finish(choice, finish_reason);
}

bool api_completion_json(const api_reply *r, const api_message *m, const char *finish_reason, int32_t prompt_tokens,
                         int32_t completion_tokens, buf *out) {
    cJSON *choice;
    cJSON *root = reply_with_choice(r, false, &choice);
    if (!root)
        return false;
    fill_choice(r, choice, false, true, m, finish_reason);
    cJSON_AddItemToObject(root, "usage", usage(prompt_tokens, completion_tokens));
    return emit(root, "", "", out);
}

bool api_chunk_sse(const api_reply *r, bool first, const api_message *m, const char *finish_reason, buf *out) {
    cJSON *choice;
    cJSON *root = reply_with_choice(r, true, &choice);
    if (!root)
        return false;
    fill_choice(r, choice, true, first, m, finish_reason);
    return emit(root, "data: ", "\n\n", out);
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
