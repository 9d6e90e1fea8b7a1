/* api.c: what the dialects share (see api_shared.h): typed field readers, the messages and tools
 * every chat template takes (checked in OpenAI's shape, into which the other dialects translate
 * theirs), embeddings inputs, and JSON writing. */
#include "server/api_shared.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

const cJSON *api_body_object(const char *body, size_t len, void **json, char *message, size_t size) {
    api_owned *own = calloc(1, sizeof *own);
    *json = own;
    if (!own) {
        snprintf(message, size, "out of memory");
        return NULL;
    }
    if (!utf8_is_valid(body, len)) {
        snprintf(message, size, "the body is not valid UTF-8");
        return NULL;
    }
    own->root = cJSON_ParseWithLength(body, len);
    if (!own->root) {
        snprintf(message, size, "the body is not valid JSON");
        return NULL;
    }
    if (!cJSON_IsObject(own->root)) {
        snprintf(message, size, "the body must be a JSON object");
        return NULL;
    }
    return own->root;
}

static void owned_free(api_owned *own) {
    if (!own)
        return;
    cJSON_Delete(own->root);
    for (size_t i = 0; i < own->n_trees; i++)
        cJSON_Delete(own->trees[i]);
    for (size_t i = 0; i < own->n_texts; i++)
        free(own->texts[i]);
    free(own->trees);
    free(own->texts);
    free(own);
}

void api_request_free(api_request *r) {
    owned_free(r->json);
    memset(r, 0, sizeof *r);
}

void api_embed_request_free(api_embed_request *r) {
    owned_free(r->json);
    free(r->texts);
    free(r->token_inputs);
    free(r->n_token_inputs);
    memset(r, 0, sizeof *r);
}

char *api_own_text(api_owned *own, char *text) {
    char **texts = text ? realloc(own->texts, (own->n_texts + 1) * sizeof *texts) : NULL;
    if (!texts) {
        free(text);
        return NULL;
    }
    own->texts = texts;
    own->texts[own->n_texts++] = text;
    return text;
}

char *api_own_json(api_owned *own, const cJSON *node) {
    return api_own_text(own, cJSON_PrintUnformatted(node));
}

cJSON *api_own_tree(api_owned *own, cJSON *tree) {
    cJSON **trees = tree ? realloc(own->trees, (own->n_trees + 1) * sizeof(cJSON *)) : NULL;
    if (!trees) {
        cJSON_Delete(tree);
        return NULL;
    }
    own->trees = trees;
    own->trees[own->n_trees++] = tree;
    return tree;
}

bool api_set_kwarg(api_owned *own, api_request *r, const char *key, cJSON *value) {
    if (!value || (!own->kwargs && !(own->kwargs = api_own_tree(own, cJSON_CreateObject())))) {
        cJSON_Delete(value);
        return false;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(own->kwargs, key);
    cJSON_AddItemToObject(own->kwargs, key, value);
    return (r->kwargs_json = api_own_json(own, own->kwargs)) != NULL;
}

bool api_fail(char *message, size_t size, const char **param, const char *name, const char *fmt, const char *what) {
    snprintf(message, size, fmt, what ? what : name);
    *param = name;
    return false;
}

bool api_get_int(const cJSON *obj, const char *key, const char *label, int64_t lo, int64_t hi, int64_t *out,
                 bool *present, char *message, size_t size, const char **param) {
    const char *name = label ? label : key;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *present = v && !cJSON_IsNull(v);
    if (!*present)
        return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
        return api_fail(message, size, param, name, "'%s' must be an integer", NULL);
    if (v->valuedouble < (double)lo || v->valuedouble > (double)hi) {
        snprintf(message, size, "'%s' must be between %lld and %lld", name, (long long)lo, (long long)hi);
        *param = name;
        return false;
    }
    *out = (int64_t)v->valuedouble;
    return true;
}

bool api_get_float(const cJSON *obj, const char *key, const char *label, double lo, double hi, bool lo_open,
                   float *out, char *message, size_t size, const char **param) {
    const char *name = label ? label : key;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return api_fail(message, size, param, name, "'%s' must be a number", NULL);
    if (v->valuedouble > hi || v->valuedouble < lo || (lo_open && v->valuedouble == lo)) {
        snprintf(message, size, "'%s' must be %s %g and at most %g", name, lo_open ? "above" : "at least", lo, hi);
        *param = name;
        return false;
    }
    *out = (float)v->valuedouble;
    return true;
}

bool api_get_bool(const cJSON *obj, const char *key, const char *label, bool *out, char *message, size_t size,
                  const char **param) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsBool(v))
        return api_fail(message, size, param, label ? label : key, "'%s' must be true or false", NULL);
    *out = cJSON_IsTrue(v);
    return true;
}

bool api_get_stop(const cJSON *stop, const char *label, int max, api_request *r, char *message, size_t size,
                  const char **param) {
    if (!stop || cJSON_IsNull(stop))
        return true;
    int n = 0;
    if (cJSON_IsString(stop)) {
        r->stop[n++] = stop->valuestring;
    } else if (cJSON_IsArray(stop)) {
        if (cJSON_GetArraySize(stop) > max) {
            snprintf(message, size, "'%s' holds at most %d strings", label, max);
            *param = label;
            return false;
        }
        const cJSON *s;
        cJSON_ArrayForEach(s, stop) {
            if (!cJSON_IsString(s))
                return api_fail(message, size, param, label, "'%s' must be a string or an array of strings", NULL);
            r->stop[n++] = s->valuestring;
        }
    } else {
        return api_fail(message, size, param, label, "'%s' must be a string or an array of strings", NULL);
    }
    for (int i = 0; i < n; i++)
        if (r->stop[i][0] == '\0')
            return api_fail(message, size, param, label, "'%s' strings must not be empty", NULL);
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
    return api_own_text(own, joined);
}

static bool bad_message(char *message, size_t size, const char **param, const char *label, const char *fmt, int i,
                        const char *what) {
    char name[48];
    snprintf(name, sizeof name, "%s[%d]", label, i);
    snprintf(message, size, fmt, name, what);
    *param = label;
    return false;
}

/* An assistant message's tool_calls: [{id, type: "function", function: {name, arguments: a string}}]. */
static bool check_tool_calls(const cJSON *calls, const char *label, int i, char *message, size_t size,
                             const char **param) {
    if (!cJSON_IsArray(calls))
        return bad_message(message, size, param, label, "%s.tool_calls must be an array%s", i, "");
    const cJSON *call;
    cJSON_ArrayForEach(call, calls) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(call, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        if (!cJSON_IsObject(call) || (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "function") == 0)) ||
            !cJSON_IsObject(fn) || !cJSON_IsString(name) || !(cJSON_IsString(args) || cJSON_IsObject(args)))
            return bad_message(message, size, param, label,
                               "%s.tool_calls: each call must be {\"type\": \"function\", \"function\": {\"name\": "
                               "a string, \"arguments\": a JSON string}}%s", i, "");
        if (cJSON_IsString(args)) {
            cJSON *parsed = cJSON_Parse(args->valuestring);
            const bool object = cJSON_IsObject(parsed);
            cJSON_Delete(parsed);
            if (!object)
                return bad_message(message, size, param, label, "%s.tool_calls: the arguments of '%.64s' are not a JSON object", i,
                                   name->valuestring);
        }
    }
    return true;
}

/* The messages, checked, as the chat template takes them: text parts joined into a string,
 * "developer" as "system" (what the templates know), everything else as given. */
bool api_check_messages(const cJSON *root, const char *label, api_request *r, api_owned *own, char *message,
                        size_t size, const char **param) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!msgs)
        return api_fail(message, size, param, label, "'%s' is required", NULL);
    if (!cJSON_IsArray(msgs))
        return api_fail(message, size, param, label, "'%s' must be an array of messages", NULL);
    const int n = cJSON_GetArraySize(msgs);
    if (n == 0)
        return api_fail(message, size, param, label, "'%s' must not be empty", NULL);
    if (n > API_MAX_MESSAGES)
        return api_fail(message, size, param, label, "'%s' holds more than 1024 messages", NULL);
    cJSON *out = cJSON_CreateArray();
    if (!out)
        return api_fail(message, size, param, label, "out of memory", NULL);
    int i = 0;
    bool ok = true;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
            ok = bad_message(message, size, param, label, "%s must be an object with a string 'role'%s", i, "");
            break;
        }
        const char *rs = role->valuestring;
        if (strcmp(rs, "developer") == 0)
            rs = "system";
        if (strcmp(rs, "system") != 0 && strcmp(rs, "user") != 0 && strcmp(rs, "assistant") != 0 &&
            strcmp(rs, "tool") != 0) {
            ok = bad_message(message, size, param, label, "%s.role '%.32s' is not one of system, developer, user, assistant, tool",
                             i, role->valuestring);
            break;
        }
        const bool assistant = strcmp(rs, "assistant") == 0;
        const bool has_calls = calls && !cJSON_IsNull(calls);
        if (has_calls && (!assistant || !check_tool_calls(calls, label, i, message, size, param))) {
            if (!assistant)
                bad_message(message, size, param, label, "%s: only assistant messages carry tool_calls%s", i, "");
            ok = false;
            break;
        }
        const bool no_content = !content || cJSON_IsNull(content);
        const char *text = no_content ? NULL : message_text(content, own);
        if (!text && !(no_content && assistant && has_calls)) {
            ok = bad_message(message, size, param, label, "%s.content must be a string or an array of text parts%s", i, "");
            break;
        }
        if (text && strcmp(rs, "user") == 0 && text[0] == '\0') {
            ok = bad_message(message, size, param, label, "%s.content must not be empty%s", i, "");
            break;
        }
        cJSON *copy = cJSON_Duplicate(m, true);
        if (!copy) {
            ok = api_fail(message, size, param, label, "out of memory", NULL);
            break;
        }
        cJSON_AddItemToArray(out, copy);
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "role", cJSON_CreateString(rs));
        if (text)
            cJSON_ReplaceItemInObjectCaseSensitive(copy, "content", cJSON_CreateString(text));
        i++;
    }
    if (ok && !(r->messages_json = api_own_json(own, out)))
        ok = api_fail(message, size, param, label, "out of memory", NULL);
    cJSON_Delete(out);
    return ok;
}

/* tools: [{"type": "function", "function": {"name", "description"?, "parameters"?: a schema}}]. */
bool api_check_tools(const cJSON *root, api_request *r, api_owned *own, char *message, size_t size, const char **param) {
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    r->parallel_tool_calls = true;
    if (!api_get_bool(root, "parallel_tool_calls", NULL, &r->parallel_tool_calls, message, size, param))
        return false;
    const bool has_tools = tools && !cJSON_IsNull(tools);
    if (has_tools) {
        if (!cJSON_IsArray(tools))
            return api_fail(message, size, param, "tools", "'%s' must be an array", NULL);
        if (cJSON_GetArraySize(tools) > API_MAX_TOOLS)
            return api_fail(message, size, param, "tools", "'%s' holds more than 128 tools", NULL);
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
            const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
            if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsObject(fn))
                return api_fail(message, size, param, "tools", "each of '%s' must be {\"type\": \"function\", \"function\": {...}}",
                            NULL);
            bool good_name = cJSON_IsString(name) && name->valuestring[0] && strlen(name->valuestring) <= 64;
            for (const char *q = good_name ? name->valuestring : ""; *q; q++)
                good_name = good_name && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                                          (*q >= '0' && *q <= '9') || *q == '_' || *q == '-' || *q == '.');
            if (!good_name)
                return api_fail(message, size, param, "tools",
                            "a function name in '%s' must be 1 to 64 letters, digits, '_', '-' or '.'", NULL);
            if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
                return api_fail(message, size, param, "tools", "a function's parameters in '%s' must be a JSON Schema object",
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
            return api_fail(message, size, param, "tool_choice",
                        "'%s' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": "
                        "{\"name\": ...}}", NULL);
        }
        if (r->tool_choice != API_TOOLS_AUTO && r->tool_choice != API_TOOLS_NONE && !has_tools)
            return api_fail(message, size, param, "tool_choice", "'%s' names tools, but the request has none", NULL);
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
        !(r->tools_json = api_own_json(own, tools)))
        return api_fail(message, size, param, "tools", "out of memory", NULL);
    return true;
}

/* A JSON string of any bytes: ill-formed UTF-8 becomes U+FFFD (cJSON would pass it through). */
cJSON *api_text(const char *s, size_t n) {
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

cJSON *api_object_with_array(const char *key, cJSON **array) {
    cJSON *root = cJSON_CreateObject();
    *array = root ? cJSON_AddArrayToObject(root, key) : NULL;
    if (!*array) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

cJSON *api_floats(const float *v, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t k = 0; a && k < n; k++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[k]));
    return a;
}

void api_add_text(cJSON *obj, const char *key, const char *text) {
    cJSON_AddItemToObject(obj, key, api_text(text ? text : "", text ? strlen(text) : 0));
}

bool api_emit(cJSON *root, const char *prefix, const char *suffix, buf *out) {
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return false;
    const bool ok = buf_append(out, prefix, strlen(prefix)) && buf_append(out, text, strlen(text)) &&
                    buf_append(out, suffix, strlen(suffix));
    cJSON_free(text);
    return ok;
}


bool api_take_schema(const cJSON *schema, const char *label, api_request *r, api_owned *own, char *message, size_t size,
                     const char **param) {
    if (!cJSON_IsObject(schema) && !cJSON_IsBool(schema))
        return api_fail(message, size, param, label, "'%s' must be a JSON Schema object", NULL);
    if (!(r->schema_json = api_own_json(own, schema)))
        return api_fail(message, size, param, label, "out of memory", NULL);
    return true;
}

/* An input given as tokens: an array of integers, each a token id (checked against the vocabulary
 * by the server). */
static bool token_list(const cJSON *a) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) == 0)
        return false;
    const cJSON *t;
    cJSON_ArrayForEach(t, a) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
            t->valuedouble > INT32_MAX)
            return false;
    }
    return true;
}

bool api_take_inputs(const cJSON *input, const char *label, api_embed_request *r, api_owned *own, char *message,
                     size_t size, const char **param) {
    (void)own;
    if (!input || cJSON_IsNull(input))
        return api_fail(message, size, param, label, "'%s' is required", NULL);
    const bool one = cJSON_IsString(input) || token_list(input);
    const int n = one ? 1 : cJSON_IsArray(input) ? cJSON_GetArraySize(input) : -1;
    if (n < 0)
        return api_fail(message, size, param, label,
                        "'%s' must be a string, an array of strings, or tokens (an array of integers, or of such arrays)",
                        NULL);
    if (n == 0)
        return api_fail(message, size, param, label, "'%s' must not be empty", NULL);
    if (n > API_MAX_INPUTS)
        return api_fail(message, size, param, label, "'%s' holds more than 2048 inputs", NULL);
    r->texts = calloc((size_t)n, sizeof *r->texts);
    r->token_inputs = calloc((size_t)n, sizeof *r->token_inputs);
    r->n_token_inputs = calloc((size_t)n, sizeof *r->n_token_inputs);
    if (!r->texts || !r->token_inputs || !r->n_token_inputs)
        return api_fail(message, size, param, label, "out of memory", NULL);
    for (int i = 0; i < n; i++) {
        const cJSON *item = one ? input : cJSON_GetArrayItem(input, i);
        if (cJSON_IsString(item)) {
            if (item->valuestring[0] == '\0')
                return api_fail(message, size, param, label, "'%s' must not hold empty strings", NULL);
            r->texts[i] = item->valuestring;
            continue;
        }
        if (!token_list(item))
            return api_fail(message, size, param, label,
                            "'%s' must be a string, an array of strings, or tokens (an array of integers, or of such "
                            "arrays)", NULL);
        const int k = cJSON_GetArraySize(item);
        brasa_token *t = malloc((size_t)k * sizeof *t);
        if (!t || !api_own_text(own, (char *)t))
            return api_fail(message, size, param, label, "out of memory", NULL);
        int j = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, item) t[j++] = (brasa_token)v->valuedouble;
        r->token_inputs[i] = t;
        r->n_token_inputs[i] = (size_t)k;
        r->texts[i] = "";
    }
    r->n_texts = (size_t)n;
    return true;
}

bool api_body_model(const char *body, size_t len, char *name, size_t size) {
    cJSON *root = cJSON_ParseWithLength(body, len);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsString(m))
        m = cJSON_GetObjectItemCaseSensitive(root, "name");
    const bool ok = cJSON_IsString(m) && strlen(m->valuestring) < size;
    if (ok)
        memcpy(name, m->valuestring, strlen(m->valuestring) + 1);
    cJSON_Delete(root);
    return ok;
}

cJSON *api_arguments_object(const char *arguments) {
    /* parsed from its text with ill-formed UTF-8 made U+FFFD, as api_text writes strings */
    cJSON *clean = api_text(arguments, strlen(arguments));
    cJSON *v = cJSON_IsString(clean) ? cJSON_Parse(clean->valuestring) : NULL;
    cJSON_Delete(clean);
    if (cJSON_IsObject(v))
        return v;
    cJSON_Delete(v);
    return cJSON_CreateObject();
}

void api_iso_time(double seconds, char *out, size_t size) {
    /* the civil date of a day count since 1970-01-01, by eras of 400 years (146097 days), so that no
     * time-zone function of the C library is needed */
    const double whole = floor(seconds);
    const int64_t t = (int64_t)whole;
    int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400;
    const int64_t secs = t - days * 86400;
    days += 719468;
    const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    const int64_t doe = days - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153;
    const int64_t day = doy - (153 * mp + 2) / 5 + 1;
    const int64_t month = mp < 10 ? mp + 3 : mp - 9;
    const int64_t year = yoe + era * 400 + (month <= 2);
    snprintf(out, size, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%09ldZ", (long long)year, (long long)month,
             (long long)day, (long long)(secs / 3600), (long long)(secs / 60 % 60), (long long)(secs % 60),
             (long)((seconds - whole) * 1e9));
}
