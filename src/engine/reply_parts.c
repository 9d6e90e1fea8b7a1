/* reply_parts.c: see reply_parts.h. The <think> splitter runs first (a format's call markers never
 * sit inside a leading reasoning block), and its answer feeds the tool-call parser, whose events,
 * like the splitter's reasoning, go straight to the caller's emit. */
#include "engine/reply_parts.h"

#include <string.h>

#include "engine/chat.h"

toolcall_format reply_parts_template_format(const brasa_model *m, const brasa_chat_params *params) {
    return m && params ? toolcall_detect(chat_template_for(m, params)) : TOOLCALL_NONE;
}

toolcall_format reply_parts_format(toolcall_format template_format, bool tools_offered) {
    return tools_offered || template_format == TOOLCALL_HARMONY ? template_format : TOOLCALL_NONE;
}

/* The splitter's output: reasoning as is, the answer through the tool-call parser when there is one. */
static bool on_part(reasoning_part part, const char *text, size_t len, void *user) {
    reply_parts *p = user;
    if (part == REASONING_ANSWER && p->calls)
        return toolcall_push(p->calls, text, len);
    return p->emit(part == REASONING_THOUGHT ? TOOLCALL_REASONING : TOOLCALL_CONTENT, text, len, NULL, p->user_data);
}

brasa_status reply_parts_init(reply_parts *p, brasa_chat_reasoning start, toolcall_format format,
                              const json_value *tools, toolcall_emit_fn emit, void *user_data, brasa_error *err) {
    memset(p, 0, sizeof *p);
    p->emit = emit;
    p->user_data = user_data;
    reasoning_init(&p->split, start, on_part, p);
    if (format == TOOLCALL_NONE)
        return BRASA_OK;
    return toolcall_parser_create(format, tools, emit, user_data, &p->calls, err);
}

void reply_parts_free(reply_parts *p) {
    if (!p)
        return;
    toolcall_parser_free(p->calls);
    p->calls = NULL;
}

bool reply_parts_push(reply_parts *p, const char *text, size_t len) {
    return reasoning_push(&p->split, text, len);
}

bool reply_parts_finish(reply_parts *p) {
    bool ok = reasoning_finish(&p->split);
    if (p->calls)
        ok = toolcall_finish(p->calls) && ok;
    return ok;
}
