/* reply.c: see reply.h. The parts come from engine/reply_parts (the <think> splitter, then the
 * family's tool-call parser when tools are offered, and always for harmony, whose channels are
 * parsed there); its events land in the reply's reasoning, content and calls. */
#include "server/reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static bool on_event(toolcall_event kind, const char *text, size_t len, const toolcall_call *call, void *user) {
    reply *r = user;
    if (kind != TOOLCALL_CALL) {
        if (!buf_append(kind == TOOLCALL_REASONING ? &r->reasoning : &r->content, text, len))
            r->oom = true;
        return !r->oom;
    }
    if (r->single_call && r->n_calls > 0)
        return true;
    if (r->n_calls == r->cap_calls) {
        const size_t cap = r->cap_calls ? r->cap_calls * 2 : 4;
        api_tool_call *p = realloc(r->calls, cap * sizeof *p);
        if (!p) {
            r->oom = true;
            return false;
        }
        r->calls = p;
        r->cap_calls = cap;
    }
    char id[80];
    if (call->id && call->id[0]) /* Mistral writes its own ids: the history refers to them */
        snprintf(id, sizeof id, "%.79s", call->id);
    else
        snprintf(id, sizeof id, "call_%s_%zu", r->id_stem, r->n_calls);
    char *copies[3] = { buf_str_copy(id), buf_str_copy(call->name), buf_str_copy(call->arguments) };
    if (!copies[0] || !copies[1] || !copies[2]) {
        for (int i = 0; i < 3; i++)
            free(copies[i]);
        r->oom = true;
        return false;
    }
    r->calls[r->n_calls++] = (api_tool_call){ copies[0], copies[1], copies[2] };
    return true;
}

brasa_status reply_init(reply *r, brasa_chat_reasoning start, toolcall_format format, const char *tools_json,
                        bool parallel_calls, const char *id_stem, brasa_error *err) {
    memset(r, 0, sizeof *r);
    r->single_call = !parallel_calls;
    snprintf(r->id_stem, sizeof r->id_stem, "%s", id_stem ? id_stem : "0");
    if (format != TOOLCALL_NONE && tools_json) {
        brasa_status st = json_parse(tools_json, strlen(tools_json), &r->tools_doc, err);
        if (st != BRASA_OK)
            return st;
    }
    return reply_parts_init(&r->parts, start, format, r->tools_doc ? json_root(r->tools_doc) : NULL, on_event, r, err);
}

void reply_free(reply *r) {
    reply_parts_free(&r->parts);
    json_free(r->tools_doc);
    buf_free(&r->reasoning);
    buf_free(&r->content);
    for (size_t i = 0; i < r->n_calls; i++) {
        free((char *)r->calls[i].id);
        free((char *)r->calls[i].name);
        free((char *)r->calls[i].arguments);
    }
    free(r->calls);
    memset(r, 0, sizeof *r);
}

bool reply_push(reply *r, const char *text, size_t len) {
    return reply_parts_push(&r->parts, text, len) && !r->oom;
}

bool reply_finish(reply *r) {
    return reply_parts_finish(&r->parts) && !r->oom;
}

void reply_take(reply *r, api_message *m) {
    /* the whitespace models write around calls is no content */
    bool blank = r->n_calls > 0;
    for (size_t i = 0; blank && i < r->content.len; i++) {
        const char ch = r->content.data[i];
        blank = ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
    }
    if (blank)
        r->content.len = 0;
    *m = (api_message){ .content = r->content.data, .content_len = r->content.len, .reasoning = r->reasoning.data,
                        .reasoning_len = r->drop_reasoning ? 0 : r->reasoning.len, .calls = r->calls + r->n_taken,
                        .n_calls = r->n_calls - r->n_taken, .first_call_index = r->n_taken };
}

void reply_taken(reply *r) {
    r->content.len = r->reasoning.len = 0;
    r->n_taken = r->n_calls;
}
