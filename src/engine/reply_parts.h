/* reply_parts.h: a chat reply split into its parts as it streams, for the server and the
 * terminal alike: reasoning (a leading <think> block, reasoning.c; harmony's analysis channel),
 * content, and tool calls (toolcall.c, in the syntax of the model's family). The two readers run
 * in a row: what the <think> splitter calls answer goes through the tool-call parser when the
 * reply has one. Whether it has one is decided here too (reply_parts_format), so that every
 * front end reads a model's replies the same way.
 *
 * Usage: reply_parts_init once per reply, reply_parts_push each decoded chunk (decoded with
 * control tokens' text when the format is not TOOLCALL_NONE: harmony's <|channel|> is one),
 * reply_parts_finish, reply_parts_free. */
#ifndef BRASA_ENGINE_REPLY_PARTS_H
#define BRASA_ENGINE_REPLY_PARTS_H

#include <stdbool.h>
#include <stddef.h>

#include "brasa.h"
#include "core/json.h"
#include "engine/reasoning.h"
#include "engine/toolcall.h"

typedef struct reply_parts {
    reasoning_splitter split;
    toolcall_parser *calls; /* NULL: the answer is all content */
    toolcall_emit_fn emit;
    void *user_data;
} reply_parts;

/* The tool-call syntax of the template that renders a chat with these params (the template
 * brasa_chat_render picks); TOOLCALL_NONE for a built-in format. */
toolcall_format reply_parts_template_format(const brasa_model *m, const brasa_chat_params *params);
/* The parser a reply needs: the template's call syntax when tools are offered; harmony always,
 * since its channels carry the reasoning and the answer too; else none. */
toolcall_format reply_parts_format(toolcall_format template_format, bool tools_offered);

/* start: how the reply begins (brasa_chat_reasoning_start); format: reply_parts_format's choice;
 * tools: the request's tools (borrowed, for the XML formats' value types) or NULL. Events go to
 * emit in order, as toolcall.h describes them (reasoning, content, calls). On failure (only with a
 * format: out of memory) p is left safe to free. */
brasa_status reply_parts_init(reply_parts *p, brasa_chat_reasoning start, toolcall_format format,
                              const json_value *tools, toolcall_emit_fn emit, void *user_data, brasa_error *err);
void reply_parts_free(reply_parts *p);
/* Feeds the next chunk (it may end anywhere); false when emit said stop or memory ran out. */
bool reply_parts_push(reply_parts *p, const char *text, size_t len);
/* The end of the reply: what either reader held back goes out. */
bool reply_parts_finish(reply_parts *p);

#endif
