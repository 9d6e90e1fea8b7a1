/* grammar.h: output constrained to a JSON Schema (with literal text around it), for grammar-
 * constrained sampling. A schema compiles to a byte-level pushdown automaton (a recursive transition
 * network: rules that call rules, so recursive $ref schemas work); a grammar_state follows one
 * sequence's output byte by byte as a bounded set of stacks, and answers for a candidate token
 * whether its bytes keep the output a prefix of some valid output. grammar_state_mask answers that
 * for a whole vocabulary at once by walking a byte trie of it, so tokens sharing a prefix share the
 * work.
 *
 *   grammar *g;   grammar_from_schema(schema, &g, &err);          (once per request)
 *   grammar_state *s;  grammar_state_create(g, &s, &err);         (once per sequence)
 *   if (!grammar_state_accepts(s, piece, len)) grammar_state_mask(s, vocab, allowed);
 *   ... after sampling: grammar_state_advance(s, piece, len); stop when grammar_state_finished(s).
 *
 * A grammar and a vocab are immutable and may be shared between threads; a state belongs to one
 * sequence and is used by one thread at a time (its queries use scratch memory inside it). */
#ifndef BRASA_GRAMMAR_GRAMMAR_H
#define BRASA_GRAMMAR_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"
#include "core/json.h"

typedef struct grammar grammar; /* compiled, immutable, shareable */

typedef enum grammar_part_kind { GRAMMAR_LITERAL, GRAMMAR_SCHEMA } grammar_part_kind;

typedef struct grammar_part {
    grammar_part_kind kind;
    const char *literal; /* LITERAL: exact bytes */
    size_t literal_len;
    const json_value *schema; /* SCHEMA: a JSON Schema (the document must outlive only the compile) */
} grammar_part;

/* The output is the parts in order: e.g. "<tool_call>\n" + {json by schema} + "\n</tool_call>".
 * A schema value is JSON text with no whitespace before its first byte or after its last; inside
 * it, at most one space, or a newline and up to 20 spaces or tabs, between tokens. An unsupported
 * schema keyword is an error naming it and its JSON path: "schema at /properties/x:
 * 'patternProperties' is not supported" (BRASA_ERR_UNSUPPORTED; a malformed schema is
 * BRASA_ERR_INVALID_ARGUMENT). */
brasa_status grammar_compile(const grammar_part *parts, size_t n_parts, grammar **out, brasa_error *err);
/* Shorthand: one schema. */
brasa_status grammar_from_schema(const json_value *schema, grammar **out, brasa_error *err);
/* OpenAI's response_format {"type":"json_object"}: the schema {"type":"object"}. */
brasa_status grammar_json_object(grammar **out, brasa_error *err);
void grammar_free(grammar *g); /* accepts NULL */

typedef struct grammar_state grammar_state; /* where a partial output stands; one per sequence */

brasa_status grammar_state_create(const grammar *g, grammar_state **out, brasa_error *err);
void grammar_state_free(grammar_state *s); /* accepts NULL */
/* Back to the empty output. */
void grammar_state_reset(grammar_state *s);
/* Whether appending bytes keeps the output a prefix of a valid one (the state is not changed).
 * Appending nothing is always accepted. */
bool grammar_state_accepts(const grammar_state *s, const char *bytes, size_t n);
/* Appends bytes; false (state unchanged) when they are not accepted. */
bool grammar_state_advance(grammar_state *s, const char *bytes, size_t n);
/* Whether the output so far is complete (generation may end here). */
bool grammar_state_complete(const grammar_state *s);
/* Whether nothing more can follow (complete and no continuation accepted). */
bool grammar_state_finished(const grammar_state *s);

/* The vocabulary's token texts, indexed once per model for masking the whole vocabulary fast. */
typedef struct grammar_vocab grammar_vocab;

/* pieces[i] / lengths[i]: token i's bytes (copied); NULL or length 0: never allowed (the caller
 * handles end-of-generation and control tokens itself). */
brasa_status grammar_vocab_create(const char *const *pieces, const size_t *lengths, size_t n_tokens,
                                  grammar_vocab **out, brasa_error *err);
void grammar_vocab_free(grammar_vocab *v); /* accepts NULL */
size_t grammar_vocab_size(const grammar_vocab *v);
/* allowed[i] = 1 when token i's bytes are accepted from this state, else 0 (grammar_vocab_size
 * entries). Equal to grammar_state_accepts on every token, only faster. */
void grammar_state_mask(const grammar_state *s, const grammar_vocab *v, uint8_t *allowed);

#endif
