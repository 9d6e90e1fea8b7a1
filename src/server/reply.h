/* reply.h: a job's text turned into the parts of a chat reply as it streams (engine/reply_parts.h):
 * reasoning (a leading <think> block; harmony's analysis channel), content, and tool calls in the
 * syntax the model's family writes them, as the API writes them. The parts gather until they are
 * taken, for one stream chunk or the whole reply. */
#ifndef BRASA_SERVER_REPLY_H
#define BRASA_SERVER_REPLY_H

#include <stdbool.h>
#include <stddef.h>

#include "brasa.h"
#include "core/buf.h"
#include "core/json.h"
#include "engine/reply_parts.h"
#include "server/api.h"

typedef struct reply {
    reply_parts parts;
    json_doc *tools_doc;     /* the request's tools, for the parser's value types */
    buf reasoning, content;  /* not yet taken */
    api_tool_call *calls;    /* every call so far (their strings owned); the first n_taken were taken */
    size_t n_calls, cap_calls, n_taken;
    bool single_call;        /* parallel_tool_calls false: calls after the first are dropped */
    bool drop_reasoning;     /* the client asked not to see the reasoning (set after reply_init) */
    bool oom;
    char id_stem[48];
} reply;

/* start: how the reply begins (brasa_chat_reasoning_start); format: reply_parts_format's choice
 * (the calls' syntax when tools are offered; harmony always, since it carries the reasoning);
 * tools_json: the request's tools or NULL; id_stem: makes the call ids ("call_<stem>_<n>"). */
brasa_status reply_init(reply *r, brasa_chat_reasoning start, toolcall_format format, const char *tools_json,
                        bool parallel_calls, const char *id_stem, brasa_error *err);
void reply_free(reply *r);
/* Feeds the job's next text (decoded with control tokens' text); false when out of memory. */
bool reply_push(reply *r, const char *text, size_t len);
/* The end of the reply: what was held back goes out. */
bool reply_finish(reply *r);
/* The parts gathered since the last take, as an api_message (pointers into r, valid until the next
 * push, finish or take). */
void reply_take(reply *r, api_message *m);
/* Clears what reply_take handed out. */
void reply_taken(reply *r);

#endif
