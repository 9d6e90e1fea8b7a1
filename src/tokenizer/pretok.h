/* pretok.h: the pre-tokenizer of byte-level BPE: splitting text into the pieces that BPE then merges
 * within. Each split is a hand-written matcher equivalent to the regular expression that the model's
 * reference tokenizer uses (written out in vocab.h), including its backtracking rules. */
#ifndef BRASA_TOKENIZER_PRETOK_H
#define BRASA_TOKENIZER_PRETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/vocab.h"

/* Called once per piece, in order; return false to stop (e.g. out of memory). */
typedef bool (*pretok_emit)(const char *piece, size_t len, void *ctx);

/* Splits text (n bytes; ill-formed UTF-8 bytes count as one symbol each, neither letter, digit nor
 * space) into pieces. Returns false when emit stopped or memory ran out. */
bool pretok_split(tok_pre pre, const char *text, size_t n, pretok_emit emit, void *ctx);

#endif
