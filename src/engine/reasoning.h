/* reasoning.h: a reply in a chat format that reasons (qwen3) split into its reasoning and its
 * answer as it streams. The text of a leading <think> ... </think> block is reasoning (the block
 * may also be open from the start, when the prompt opened it), the whitespace right after
 * </think> is dropped, and everything else is answer, a later <think> included. Chunks may end
 * anywhere, inside a tag or inside a UTF-8 character: what might still be a tag, or the rest of a
 * character, is held back until the next chunk says what it is, so no byte is lost or handed out
 * twice and every piece ends on a whole character (bytes that can never complete one go out as
 * they are). No allocation: the state is a few bytes. */
#ifndef BRASA_ENGINE_REASONING_H
#define BRASA_ENGINE_REASONING_H

#include <stdbool.h>
#include <stddef.h>

#include "brasa.h"

typedef enum reasoning_part { REASONING_THOUGHT, REASONING_ANSWER } reasoning_part;

/* Receives the pieces in order; returns false to stop (the splitter then returns false too). */
typedef bool (*reasoning_emit_fn)(reasoning_part part, const char *text, size_t len, void *user_data);

typedef struct reasoning_splitter {
    int state;
    size_t matched;          /* bytes of the tag being matched, held back (the tag's own text) */
    char partial[4];         /* the start of a character not yet complete */
    size_t n_partial;
    reasoning_part partial_part;
    bool stopped;            /* emit said stop */
    reasoning_emit_fn emit;
    void *user_data;
} reasoning_splitter;

/* start: how the reply begins (brasa_chat_reasoning_start); BRASA_REASONING_NONE makes all of it
 * answer. */
void reasoning_init(reasoning_splitter *s, brasa_chat_reasoning start, reasoning_emit_fn emit, void *user_data);
/* Feeds the next chunk; false when emit said stop. */
bool reasoning_push(reasoning_splitter *s, const char *text, size_t len);
/* The end of the reply: hands out what was held back (an unfinished tag is text of its part, an
 * unterminated block is reasoning to the end). */
bool reasoning_finish(reasoning_splitter *s);

#endif
