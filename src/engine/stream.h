/* stream.h: the text side of generation, shared by brasa_generate and the server's slots: decoded
 * text is handed out as it comes, except a tail that might be the start of a stop string, which is
 * held back until it is known not to be; a stop string ends the text before it. */
#ifndef BRASA_ENGINE_STREAM_H
#define BRASA_ENGINE_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

typedef struct gen_stream {
    const char *const *stop;  /* NULL-terminated, non-empty strings; may be NULL */
    bool (*on_text)(const char *text, size_t len, void *user_data); /* false: stop */
    void *user_data;
    buf pending;   /* decoded text not yet handed out */
    bool stopped;  /* on_text asked to stop */
    bool matched;  /* a stop string appeared */
    int matched_index; /* which one (the earliest in the text), when matched */
} gen_stream;

/* Adds text, hands out what is safe and detects stop strings; false when out of memory. */
bool gen_stream_push(gen_stream *s, const char *text, size_t n);
/* Hands out whatever is still held back (at the end, when no stop string matched). */
void gen_stream_flush(gen_stream *s);
void gen_stream_free(gen_stream *s);

#endif
