/* constraint.h: what the sampler uses of a brasa_constraint (constraint.c): one state per
 * sampler that follows the output byte by byte through the compiled grammar, asks whether a token's
 * text may come next, and masks the whole vocabulary when the model's choice may not. */
#ifndef BRASA_ENGINE_CONSTRAINT_H
#define BRASA_ENGINE_CONSTRAINT_H

#include <stdbool.h>
#include <stdint.h>

#include "brasa.h"

typedef struct constraint_state constraint_state;

brasa_status constraint_state_create(const brasa_constraint *c, constraint_state **out, brasa_error *err);
void constraint_state_free(constraint_state *s);
/* Back to the start of the output. */
void constraint_reset(constraint_state *s);
/* Whether token t may come next (an end-of-generation token: whether the output is complete). */
bool constraint_allows(const constraint_state *s, brasa_token t);
/* Follows token t (one that constraint_allows). */
void constraint_take(constraint_state *s, brasa_token t);
/* Whether the output is complete and nothing may follow: the sampler ends generation. */
bool constraint_finished(const constraint_state *s);
/* The token that ends generation. */
brasa_token constraint_end_token(const constraint_state *s);
/* Copies logits[0..n) to out with every token the constraint refuses at -infinity; returns how
 * many it allows. */
int32_t constraint_mask(constraint_state *s, const float *logits, int32_t n, float *out);

#endif
