/* tokenizer.h: text <-> tokens for a loaded vocabulary. Encoding first cuts out special tokens
 * (user-defined ones always, control ones only when asked), then runs the model's algorithm on the
 * text between: BPE with merges (tok_bpe.c), SentencePiece-style merging by score (tok_spm.c) or
 * WordPiece (tok_wpm.c). */
#ifndef BRASA_TOKENIZER_H
#define BRASA_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>

#include "brasa.h"
#include "core/buf.h"
#include "tokenizer/vocab.h"

/* Appends the tokens of text (n bytes, any bytes) to out. flags: BRASA_TOKENIZE_*. */
brasa_status tok_encode(const tok_vocab *v, const char *text, size_t n, unsigned flags, ivec *out,
                        brasa_error *err);

/* As tok_encode, but control tokens are recognized only inside the byte ranges spans[2k] ..
 * spans[2k+1] (a chat format's own markers), never in the text between (the messages). The
 * ranges come in text order and do not overlap, as a rendering that appends them makes them. */
brasa_status tok_encode_spans(const tok_vocab *v, const char *text, size_t n, const size_t *spans, size_t n_spans,
                              ivec *out, brasa_error *err);

/* Appends the bytes of one token to out. at_start: the token opens the text (SentencePiece drops
 * the space it prefixed). flags: BRASA_DETOKENIZE_*. Returns false when out of memory. */
bool tok_decode_append(const tok_vocab *v, brasa_token t, unsigned flags, bool at_start, buf *out);

/* The algorithms, on text that holds no special token. */
bool tok_bpe_encode(const tok_vocab *v, const char *text, size_t n, ivec *out);
bool tok_spm_encode(const tok_vocab *v, const char *text, size_t n, ivec *out);
bool tok_wpm_encode(const tok_vocab *v, const char *text, size_t n, ivec *out);

/* Appends text to out as SentencePiece-style vocabularies spell it: U+0020 as U+2581, each maximal
 * ill-formed UTF-8 subpart as U+FFFD (tok_spm.c; Gemma 4's BPE uses it too). */
bool tok_escape_spaces(const char *text, size_t n, buf *out);

/* The API's buffer convention: sets *n_tokens to ids->len and copies the ids into tokens when they
 * fit in capacity, else returns BRASA_ERR_BUFFER_TOO_SMALL. */
brasa_status tok_copy_out(const ivec *ids, brasa_token *tokens, size_t capacity, size_t *n_tokens, brasa_error *err);

/* How many bytes at the end of p[0..n) are the start of a UTF-8 sequence that more bytes could
 * still complete (0 to 3): a streaming decoder holds exactly these back. */
size_t tok_utf8_incomplete_tail(const char *p, size_t n);

#endif
