/* chat.h: what the public chat API (chat.c) uses of the formats built into brasa
 * (chat_builtin.c), which serve model files that carry no chat template, and what the engine
 * asks of chat.c beyond the public API. */
#ifndef BRASA_ENGINE_CHAT_H
#define BRASA_ENGINE_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "brasa.h"
#include "core/buf.h"

/* A rendered chat: its text and where the format's own markers are (pairs [start, end)), the only
 * places control tokens are recognized. */
typedef struct chat_text {
    buf text;
    size_t *spans;
    size_t n_spans, cap;
    bool oom;
} chat_text;

/* The template that renders a chat with params p (p->template_text, else the model's tool-use
 * template when tools are given and it has one, else its template), or NULL for a built-in format. */
const char *chat_template_for(const brasa_model *m, const brasa_chat_params *p);

const char *chat_builtin_names(void);            /* "chatml, gemma, ..." */
const char *chat_builtin_detect(const brasa_model *m); /* the format the template or vocabulary suggests, or NULL */
int chat_builtin_find(const char *name);         /* the format's index, or -1 */
brasa_chat_reasoning chat_builtin_reasoning(const brasa_model *m, int format, const brasa_chat_params *p);
/* Renders messages (roles system, user, assistant) in format f. */
brasa_status chat_builtin_render(const brasa_model *m, int format, const brasa_chat_message *msgs, size_t n,
                                 const brasa_chat_params *p, chat_text *c, brasa_error *err);

#endif
