/* api_anthropic.c: Anthropic's Messages API (see api.h and Anthropic's API reference):
 * /v1/messages, its streaming events (message_start, content_block_start/_delta/_stop,
 * message_delta, message_stop, ping, error), /v1/messages/count_tokens and /v1/models (the server
 * answers it in this shape when the request carries "anthropic-version"), with errors as
 * {"type": "error", "error": {"type", "message"}}. A request's system text, content blocks (text,
 * tool_use, tool_result, thinking) and tools are translated into the chat templates' shape; the
 * reply's reasoning, text and tool calls become thinking, text and tool_use blocks. Thinking is off
 * unless the request turns it on, as Anthropic's models behave. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api_shared.h"

enum { BLOCK_NONE, BLOCK_THINKING, BLOCK_TEXT, BLOCK_TOOL_USE };

static bool bad_block(char *message, size_t size, const char **param, int i, const char *what) {
    snprintf(message, size, "messages[%d]: %s", i, what);
    *param = "messages";
    return false;
}

/* A tool_result's content: a string, or text blocks joined. NULL when it is neither. */
static char *result_text(const cJSON *content) {
    if (!content || cJSON_IsNull(content))
        return calloc(1, 1);
    if (cJSON_IsString(content)) {
        const size_t n = strlen(content->valuestring) + 1;
        char *copy = malloc(n);
        if (copy)
            memcpy(copy, content->valuestring, n);
        return copy;
    }
    if (!cJSON_IsArray(content))
        return NULL;
    buf b = { 0 };
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text) ||
            !buf_append(&b, text->valuestring, strlen(text->valuestring))) {
            buf_free(&b);
            return NULL;
        }
    }
    if (!buf_append(&b, "", 1)) {
        buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* One Anthropic message into the templates' messages: tool results first (as "tool" messages),
 * then the text, the thinking and the tool calls of the turn. */
static bool translate_message(const cJSON *m, int i, cJSON *out, char *message, size_t size, const char **param) {
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!cJSON_IsObject(m) || !cJSON_IsString(role) ||
        (strcmp(role->valuestring, "user") != 0 && strcmp(role->valuestring, "assistant") != 0))
        return bad_block(message, size, param, i, "each message must be an object with 'role' \"user\" or \"assistant\"");
    const bool assistant = strcmp(role->valuestring, "assistant") == 0;
    if (cJSON_IsString(content)) {
        cJSON *t = cJSON_CreateObject();
        api_add_text(t, "role", role->valuestring);
        api_add_text(t, "content", content->valuestring);
        cJSON_AddItemToArray(out, t);
        return true;
    }
    if (!cJSON_IsArray(content))
        return bad_block(message, size, param, i, "'content' must be a string or an array of content blocks");
    buf text = { 0 }, thinking = { 0 };
    cJSON *calls = cJSON_CreateArray();
    bool ok = calls != NULL;
    const cJSON *block;
    cJSON_ArrayForEach(block, content) {
        if (!ok)
            break;
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(block, "type");
        const char *t = cJSON_IsString(type) ? type->valuestring : "";
        if (strcmp(t, "text") == 0 || (strcmp(t, "thinking") == 0 && assistant)) {
            /* a text or thinking block: its string field of the same name, gathered with the others */
            const cJSON *str = cJSON_GetObjectItemCaseSensitive(block, t);
            char why[64];
            snprintf(why, sizeof why, "a %s block needs a string '%s'", t, t);
            ok = cJSON_IsString(str) ? buf_append(strcmp(t, "text") == 0 ? &text : &thinking, str->valuestring,
                                                  strlen(str->valuestring))
                                     : bad_block(message, size, param, i, why);
        } else if (strcmp(t, "redacted_thinking") == 0 && assistant) {
            continue; /* another model's encrypted thinking: nothing this one can read */
        } else if (strcmp(t, "tool_use") == 0 && assistant) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(block, "id");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(block, "name");
            const cJSON *input = cJSON_GetObjectItemCaseSensitive(block, "input");
            if (!cJSON_IsString(id) || !cJSON_IsString(name) || !cJSON_IsObject(input)) {
                ok = bad_block(message, size, param, i, "a tool_use block needs 'id', 'name' and an object 'input'");
                break;
            }
            cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
            char *args = cJSON_PrintUnformatted(input);
            api_add_text(call, "id", id->valuestring);
            cJSON_AddStringToObject(call, "type", "function");
            api_add_text(fn, "name", name->valuestring);
            api_add_text(fn, "arguments", args ? args : "{}");
            cJSON_free(args);
            cJSON_AddItemToObject(call, "function", fn);
            cJSON_AddItemToArray(calls, call);
        } else if (strcmp(t, "tool_result") == 0 && !assistant) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(block, "tool_use_id");
            char *result = result_text(cJSON_GetObjectItemCaseSensitive(block, "content"));
            if (!cJSON_IsString(id) || !result) {
                free(result);
                ok = bad_block(message, size, param, i,
                               "a tool_result block needs 'tool_use_id' and 'content' as a string or text blocks");
                break;
            }
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "role", "tool");
            api_add_text(r, "tool_call_id", id->valuestring);
            api_add_text(r, "content", result);
            free(result);
            cJSON_AddItemToArray(out, r);
        } else if (strcmp(t, "image") == 0 || strcmp(t, "document") == 0) {
            ok = bad_block(message, size, param, i, "images and documents are not supported: brasa runs text models");
        } else {
            char what[160];
            snprintf(what, sizeof what, "a%s message cannot hold a '%.40s' block", assistant ? "n assistant" : " user", t);
            ok = bad_block(message, size, param, i, what);
        }
    }
    if (ok && (text.len || thinking.len || cJSON_GetArraySize(calls) > 0)) {
        cJSON *t = cJSON_CreateObject();
        api_add_text(t, "role", role->valuestring);
        cJSON_AddItemToObject(t, "content", api_text(text.data ? text.data : "", text.len));
        if (thinking.len)
            cJSON_AddItemToObject(t, "reasoning_content", api_text(thinking.data, thinking.len));
        if (cJSON_GetArraySize(calls) > 0) {
            cJSON_AddItemToObject(t, "tool_calls", calls);
            calls = NULL;
        }
        cJSON_AddItemToArray(out, t);
    }
    cJSON_Delete(calls);
    buf_free(&text);
    buf_free(&thinking);
    return ok;
}

/* system, messages, tools and tool_choice into the templates' shape, checked there. */
static bool translate_chat(const cJSON *root, api_request *r, api_owned *own, char *message, size_t size,
                           const char **param) {
    cJSON *chat = api_own_tree(own, cJSON_CreateObject());
    cJSON *msgs = chat ? cJSON_AddArrayToObject(chat, "messages") : NULL;
    if (!msgs)
        return api_fail(message, size, param, "messages", "out of memory", NULL);
    const cJSON *system = cJSON_GetObjectItemCaseSensitive(root, "system");
    if (system && !cJSON_IsNull(system)) {
        char *text = result_text(system);
        if (!text)
            return api_fail(message, size, param, "system", "'%s' must be a string or an array of text blocks", NULL);
        if (text[0]) {
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "role", "system");
            api_add_text(m, "content", text);
            cJSON_AddItemToArray(msgs, m);
        }
        free(text);
    }
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!cJSON_IsArray(in) || cJSON_GetArraySize(in) == 0)
        return api_fail(message, size, param, "messages", "'%s' is required: a non-empty array of messages", NULL);
    if (cJSON_GetArraySize(in) > API_MAX_MESSAGES)
        return api_fail(message, size, param, "messages", "'%s' holds more than 1024 messages", NULL);
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, in) {
        if (!translate_message(m, i++, msgs, message, size, param))
            return false;
    }
    const cJSON *last = cJSON_GetArrayItem(in, cJSON_GetArraySize(in) - 1);
    const cJSON *last_role = cJSON_GetObjectItemCaseSensitive(last, "role");
    if (cJSON_IsString(last_role) && strcmp(last_role->valuestring, "assistant") == 0)
        return api_fail(message, size, param, "messages",
                        "the last of '%s' is the assistant's: continuing a prefilled reply is not supported, end with "
                        "a user message", NULL);
    /* tools: [{"name", "description", "input_schema"}] as functions */
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    if (tools && !cJSON_IsNull(tools)) {
        if (!cJSON_IsArray(tools))
            return api_fail(message, size, param, "tools", "'%s' must be an array", NULL);
        cJSON *fns = cJSON_AddArrayToObject(chat, "tools");
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
            const cJSON *desc = cJSON_GetObjectItemCaseSensitive(t, "description");
            const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "input_schema");
            if (type && !cJSON_IsNull(type) && !(cJSON_IsString(type) && strcmp(type->valuestring, "custom") == 0))
                return api_fail(message, size, param, "tools",
                                "'%s' holds a server tool (a 'type' other than \"custom\"): brasa runs client tools only",
                                NULL);
            if (!cJSON_IsObject(t) || !cJSON_IsString(name) || !cJSON_IsObject(schema))
                return api_fail(message, size, param, "tools", "each of '%s' needs a 'name' and an object 'input_schema'",
                                NULL);
            cJSON *f = cJSON_CreateObject(), *fn = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "type", "function");
            api_add_text(fn, "name", name->valuestring);
            if (cJSON_IsString(desc))
                api_add_text(fn, "description", desc->valuestring);
            cJSON_AddItemToObject(fn, "parameters", cJSON_Duplicate(schema, true));
            cJSON_AddItemToObject(f, "function", fn);
            cJSON_AddItemToArray(fns, f);
        }
    }
    /* tool_choice: {"type": "auto" | "any" | "tool" | "none", "name", "disable_parallel_tool_use"} */
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    if (choice && !cJSON_IsNull(choice)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(choice, "type");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(choice, "name");
        const char *t = cJSON_IsString(type) ? type->valuestring : "";
        bool single = false;
        if (!cJSON_IsObject(choice) ||
            !api_get_bool(choice, "disable_parallel_tool_use", "tool_choice.disable_parallel_tool_use", &single,
                          message, size, param))
            return cJSON_IsObject(choice) ? false
                                          : api_fail(message, size, param, "tool_choice", "'%s' must be an object", NULL);
        cJSON_AddBoolToObject(chat, "parallel_tool_calls", !single);
        if (strcmp(t, "auto") == 0 || strcmp(t, "none") == 0) {
            api_add_text(chat, "tool_choice", t);
        } else if (strcmp(t, "any") == 0) {
            cJSON_AddStringToObject(chat, "tool_choice", "required");
        } else if (strcmp(t, "tool") == 0 && cJSON_IsString(name)) {
            cJSON *c = cJSON_CreateObject(), *fn = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "type", "function");
            api_add_text(fn, "name", name->valuestring);
            cJSON_AddItemToObject(c, "function", fn);
            cJSON_AddItemToObject(chat, "tool_choice", c);
        } else {
            return api_fail(message, size, param, "tool_choice",
                            "'%s.type' must be \"auto\", \"any\", \"none\", or \"tool\" with a 'name'", NULL);
        }
    }
    return api_check_messages(chat, "messages", r, own, message, size, param) &&
           api_check_tools(chat, r, own, message, size, param);
}

static bool is_count(const api_endpoint *ep) {
    return ep->action == API_COUNT_TOKENS;
}

static bool anthropic_parse(const api_endpoint *ep, const char *body, size_t len, api_request *r, char *message,
                            size_t size, const char **param) {
    memset(r, 0, sizeof *r);
    *param = NULL;
    r->kind = API_CHAT;
    r->keep_alive = -1;
    r->logprobs = -1;
    r->sampling = brasa_sampler_default_params();
    r->sampling.temperature = 1.0f; /* Anthropic's defaults */
    r->sampling.top_k = 0;
    r->sampling.top_p = 1.0f;
    r->sampling.min_p = 0.0f;
    r->sampling.repeat_penalty = 1.0f;
    const cJSON *root = api_body_object(body, len, &r->json, message, size);
    if (!root)
        return false;
    api_owned *own = r->json;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsString(model))
        return api_fail(message, size, param, "model", "'%s' is required: a string", NULL);
    r->model = model->valuestring;
    int64_t v = 0;
    bool present = false;
    if (!api_get_int(root, "max_tokens", NULL, 1, INT32_MAX, &v, &present, message, size, param))
        return false;
    if (!present && !is_count(ep))
        return api_fail(message, size, param, "max_tokens", "'%s' is required", NULL);
    r->max_tokens = (int32_t)v;
    if (!api_get_float(root, "temperature", NULL, 0, 1, false, &r->sampling.temperature, message, size, param) ||
        !api_get_float(root, "top_p", NULL, 0, 1, true, &r->sampling.top_p, message, size, param) ||
        !api_get_int(root, "top_k", NULL, 0, INT32_MAX, &v, &present, message, size, param))
        return false;
    if (present)
        r->sampling.top_k = (int32_t)v;
    if (!api_get_bool(root, "stream", NULL, &r->stream, message, size, param))
        return false;
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(root, "stop_sequences");
    if (stop && !cJSON_IsNull(stop) && !cJSON_IsArray(stop))
        return api_fail(message, size, param, "stop_sequences", "'%s' must be an array of strings", NULL);
    if (!api_get_stop(stop, "stop_sequences", API_MAX_STOP, r, message, size, param))
        return false;
    /* thinking: {"type": "enabled", "budget_tokens": N}, {"type": "adaptive", "display"},
     * {"type": "between_tools"} or {"type": "disabled"}; off when absent */
    const cJSON *thinking = cJSON_GetObjectItemCaseSensitive(root, "thinking");
    if (thinking && !cJSON_IsNull(thinking)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(thinking, "type");
        const char *t = cJSON_IsString(type) ? type->valuestring : "";
        if (!cJSON_IsObject(thinking) || (strcmp(t, "enabled") != 0 && strcmp(t, "disabled") != 0 &&
                                          strcmp(t, "adaptive") != 0 && strcmp(t, "between_tools") != 0))
            return api_fail(message, size, param, "thinking",
                            "'%s.type' must be \"enabled\", \"adaptive\", \"between_tools\" or \"disabled\"", NULL);
        r->enable_thinking = r->show_thinking = strcmp(t, "disabled") != 0;
        if (r->enable_thinking && !api_set_kwarg(own, r, "enable_thinking", cJSON_CreateTrue()))
            return api_fail(message, size, param, "thinking", "out of memory", NULL);
        if (strcmp(t, "enabled") == 0) {
            if (!api_get_int(thinking, "budget_tokens", "thinking.budget_tokens", 1, INT32_MAX, &v, &present, message,
                             size, param))
                return false;
            r->think_budget = present ? (int32_t)v : 0;
        }
        const cJSON *display = cJSON_GetObjectItemCaseSensitive(thinking, "display");
        if (display && !cJSON_IsNull(display)) {
            if (!cJSON_IsString(display) || (strcmp(display->valuestring, "summarized") != 0 &&
                                             strcmp(display->valuestring, "omitted") != 0))
                return api_fail(message, size, param, "thinking.display",
                                "'%s' must be \"summarized\" or \"omitted\"", NULL);
            r->show_thinking = r->show_thinking && strcmp(display->valuestring, "omitted") != 0;
        }
    }
    /* output_config: {"format": {"type": "json_schema", "schema"}, "effort": "low" ... "max"} */
    const cJSON *oc = cJSON_GetObjectItemCaseSensitive(root, "output_config");
    if (oc && !cJSON_IsNull(oc)) {
        if (!cJSON_IsObject(oc))
            return api_fail(message, size, param, "output_config", "'%s' must be an object", NULL);
        const cJSON *format = cJSON_GetObjectItemCaseSensitive(oc, "format");
        if (format && !cJSON_IsNull(format)) {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(format, "type");
            if (!cJSON_IsString(type) || strcmp(type->valuestring, "json_schema") != 0)
                return api_fail(message, size, param, "output_config.format",
                                "'%s' must be {\"type\": \"json_schema\", \"schema\": {...}}", NULL);
            if (!api_take_schema(cJSON_GetObjectItemCaseSensitive(format, "schema"), "output_config.format.schema", r,
                                 own, message, size, param))
                return false;
        }
        const cJSON *effort = cJSON_GetObjectItemCaseSensitive(oc, "effort");
        if (effort && !cJSON_IsNull(effort)) {
            static const char *const efforts[] = { "low", "medium", "high", "xhigh", "max" };
            size_t e = 0;
            while (cJSON_IsString(effort) && e < 5 && strcmp(effort->valuestring, efforts[e]) != 0)
                e++;
            if (!cJSON_IsString(effort) || e == 5)
                return api_fail(message, size, param, "output_config.effort",
                                "'%s' must be \"low\", \"medium\", \"high\", \"xhigh\" or \"max\"", NULL);
            /* the reasoning_effort variable of templates that read one (gpt-oss: low, medium, high) */
            if (!api_set_kwarg(own, r, "reasoning_effort", cJSON_CreateString(e > 2 ? "high" : efforts[e])))
                return api_fail(message, size, param, "output_config", "out of memory", NULL);
        }
    }
    /* server-side features of Anthropic's platform that would change the reply: refused, not ignored */
    static const char *const platform_only[] = { "mcp_servers", "container", "context_management" };
    for (size_t i = 0; i < sizeof platform_only / sizeof platform_only[0]; i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, platform_only[i]);
        if (f && !cJSON_IsNull(f))
            return api_fail(message, size, param, platform_only[i],
                            "'%s' is a feature of Anthropic's platform that a local server does not have", NULL);
    }
    const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    if (metadata && !cJSON_IsNull(metadata) && !cJSON_IsObject(metadata))
        return api_fail(message, size, param, "metadata", "'%s' must be an object", NULL);
    return translate_chat(root, r, own, message, size, param);
}

static const char *error_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status < 500 ? "invalid_request_error" : "api_error";
    }
}

static cJSON *error_object(int status, const char *message) {
    cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "type", "error");
    api_add_text(e, "type", error_type(status));
    cJSON_AddItemToObject(e, "message", api_text(message, strlen(message)));
    cJSON_AddItemToObject(root, "error", e);
    return root;
}

static bool anthropic_error(int status, const char *message, const char *param, const char *code, buf *out) {
    (void)param;
    (void)code;
    return api_emit(error_object(status, message), "", "", out);
}

static void message_id(const api_reply *r, char *id, size_t size) {
    snprintf(id, size, "msg_%s", r->id);
}

static const char *stop_reason(const api_end *end) {
    if (end->stop_string)
        return "stop_sequence";
    return strcmp(end->finish, "tool_calls") == 0 ? "tool_use" : strcmp(end->finish, "length") == 0 ? "max_tokens"
                                                                                                        : "end_turn";
}

static cJSON *tool_use_block(const api_tool_call *c, bool empty_input) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "tool_use");
    api_add_text(b, "id", c->id);
    cJSON_AddItemToObject(b, "name", api_text(c->name, strlen(c->name)));
    cJSON_AddItemToObject(b, "input", empty_input ? cJSON_CreateObject() : api_arguments_object(c->arguments));
    return b;
}

static cJSON *usage(int32_t input, int32_t output) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "input_tokens", input);
    cJSON_AddNumberToObject(u, "output_tokens", output);
    return u;
}

static bool anthropic_whole(api_reply *r, const api_message *m, const api_end *end, buf *out) {
    cJSON *content;
    cJSON *root = api_object_with_array("content", &content);
    if (!root)
        return false;
    char id[64];
    message_id(r, id, sizeof id);
    api_add_text(root, "id", id);
    cJSON_AddStringToObject(root, "type", "message");
    cJSON_AddStringToObject(root, "role", "assistant");
    api_add_text(root, "model", r->model);
    if (m->reasoning_len) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "type", "thinking");
        cJSON_AddItemToObject(b, "thinking", api_text(m->reasoning, m->reasoning_len));
        cJSON_AddStringToObject(b, "signature", "");
        cJSON_AddItemToArray(content, b);
    }
    if (m->content_len || (!m->n_calls && !m->reasoning_len)) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "type", "text");
        cJSON_AddItemToObject(b, "text", api_text(m->content, m->content_len));
        cJSON_AddItemToArray(content, b);
    }
    for (size_t i = 0; i < m->n_calls; i++)
        cJSON_AddItemToArray(content, tool_use_block(&m->calls[i], false));
    api_add_text(root, "stop_reason", stop_reason(end));
    if (end->stop_string)
        cJSON_AddItemToObject(root, "stop_sequence", api_text(end->stop_string, strlen(end->stop_string)));
    else
        cJSON_AddNullToObject(root, "stop_sequence");
    cJSON_AddItemToObject(root, "usage", usage(end->prompt_tokens, end->completion_tokens));
    return api_emit(root, "", "", out);
}

static bool event(buf *out, const char *name, cJSON *data) {
    char head[64];
    const int n = snprintf(head, sizeof head, "event: %s\ndata: ", name);
    return buf_append(out, head, (size_t)n) && api_emit(data, "", "\n\n", out);
}

static cJSON *typed(const char *type) {
    cJSON *o = cJSON_CreateObject();
    api_add_text(o, "type", type);
    return o;
}

/* message_start and a ping, once. */
static bool start(api_reply *r, buf *out) {
    if (r->started)
        return true;
    r->started = true;
    r->block = -1;
    cJSON *root = typed("message_start"), *msg = cJSON_CreateObject();
    char id[64];
    message_id(r, id, sizeof id);
    api_add_text(msg, "id", id);
    cJSON_AddStringToObject(msg, "type", "message");
    cJSON_AddStringToObject(msg, "role", "assistant");
    api_add_text(msg, "model", r->model);
    cJSON_AddItemToObject(msg, "content", cJSON_CreateArray());
    cJSON_AddNullToObject(msg, "stop_reason");
    cJSON_AddNullToObject(msg, "stop_sequence");
    cJSON_AddItemToObject(msg, "usage", usage(r->prompt_tokens, 0));
    cJSON_AddItemToObject(root, "message", msg);
    return event(out, "message_start", root) && event(out, "ping", typed("ping"));
}

static bool close_block(api_reply *r, buf *out) {
    if (r->block < 0)
        return true;
    cJSON *stop = typed("content_block_stop");
    cJSON_AddNumberToObject(stop, "index", r->block);
    r->block = -1;
    r->block_type = BLOCK_NONE;
    return event(out, "content_block_stop", stop);
}

/* Opens a block of the type (closing the one open), with its start's content_block. */
static bool open_block(api_reply *r, int type, cJSON *content_block, buf *out) {
    if (!close_block(r, out)) {
        cJSON_Delete(content_block);
        return false;
    }
    r->block = r->n_blocks++;
    r->block_type = type;
    cJSON *s = typed("content_block_start");
    cJSON_AddNumberToObject(s, "index", r->block);
    cJSON_AddItemToObject(s, "content_block", content_block);
    return event(out, "content_block_start", s);
}

static bool delta(api_reply *r, const char *type, const char *field, const char *text, size_t len, buf *out) {
    cJSON *d = typed("content_block_delta"), *inner = typed(type);
    cJSON_AddNumberToObject(d, "index", r->block);
    cJSON_AddItemToObject(inner, field, api_text(text, len));
    cJSON_AddItemToObject(d, "delta", inner);
    return event(out, "content_block_delta", d);
}

static bool anthropic_chunk(api_reply *r, const api_message *m, buf *out) {
    bool ok = start(r, out);
    if (ok && m->reasoning_len) {
        if (r->block_type != BLOCK_THINKING) {
            cJSON *b = typed("thinking");
            cJSON_AddStringToObject(b, "thinking", "");
            cJSON_AddStringToObject(b, "signature", "");
            ok = open_block(r, BLOCK_THINKING, b, out);
        }
        ok = ok && delta(r, "thinking_delta", "thinking", m->reasoning, m->reasoning_len, out);
    }
    if (ok && m->content_len) {
        if (r->block_type != BLOCK_TEXT) {
            cJSON *b = typed("text");
            cJSON_AddStringToObject(b, "text", "");
            ok = open_block(r, BLOCK_TEXT, b, out);
        }
        ok = ok && delta(r, "text_delta", "text", m->content, m->content_len, out);
    }
    for (size_t i = 0; ok && i < m->n_calls; i++) {
        const char *args = m->calls[i].arguments;
        ok = open_block(r, BLOCK_TOOL_USE, tool_use_block(&m->calls[i], true), out) &&
             delta(r, "input_json_delta", "partial_json", args, strlen(args), out);
    }
    return ok;
}

static bool anthropic_end(api_reply *r, const api_end *end, buf *out) {
    if (!start(r, out) || !close_block(r, out))
        return false;
    cJSON *d = typed("message_delta"), *inner = cJSON_CreateObject(), *u = cJSON_CreateObject();
    api_add_text(inner, "stop_reason", stop_reason(end));
    if (end->stop_string)
        cJSON_AddItemToObject(inner, "stop_sequence", api_text(end->stop_string, strlen(end->stop_string)));
    else
        cJSON_AddNullToObject(inner, "stop_sequence");
    cJSON_AddItemToObject(d, "delta", inner);
    cJSON_AddNumberToObject(u, "output_tokens", end->completion_tokens);
    cJSON_AddItemToObject(d, "usage", u);
    return event(out, "message_delta", d) && event(out, "message_stop", typed("message_stop"));
}

static bool anthropic_stream_error(api_reply *r, const char *message, buf *out) {
    (void)r;
    return event(out, "error", error_object(500, message));
}

static bool anthropic_count(int32_t tokens, buf *out) {
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return false;
    cJSON_AddNumberToObject(root, "input_tokens", tokens);
    return api_emit(root, "", "", out);
}

static bool anthropic_models(api_action action, const api_model_info *models, size_t n, int64_t started, buf *out) {
    (void)action;
    cJSON *data;
    cJSON *root = api_object_with_array("data", &data);
    if (!root)
        return false;
    for (size_t i = 0; i < n; i++) {
        cJSON *m = typed("model");
        char when[48];
        api_iso_time((double)(models[i].modified ? models[i].modified : started), when, sizeof when);
        api_add_text(m, "id", models[i].name);
        api_add_text(m, "display_name", models[i].name);
        api_add_text(m, "created_at", when);
        cJSON_AddItemToArray(data, m);
    }
    cJSON_AddBoolToObject(root, "has_more", false);
    if (n) {
        api_add_text(root, "first_id", models[0].name);
        api_add_text(root, "last_id", models[n - 1].name);
    } else {
        cJSON_AddNullToObject(root, "first_id");
        cJSON_AddNullToObject(root, "last_id");
    }
    return api_emit(root, "", "", out);
}

static const api_endpoint anthropic_endpoints[] = {
    { "POST", "/v1/messages", API_GENERATE, API_CHAT },
    { "POST", "/v1/messages/count_tokens", API_COUNT_TOKENS, API_CHAT },
    { "GET", "/v1/models", API_MODELS, API_CHAT },
};

const api_dialect api_anthropic = {
    .name = "anthropic",
    .endpoints = anthropic_endpoints,
    .n_endpoints = sizeof anthropic_endpoints / sizeof anthropic_endpoints[0],
    .stream_type = "text/event-stream; charset=utf-8",
    .parse = anthropic_parse,
    .whole = anthropic_whole,
    .chunk = anthropic_chunk,
    .end = anthropic_end,
    .stream_error = anthropic_stream_error,
    .error = anthropic_error,
    .count = anthropic_count,
    .models = anthropic_models,
};
