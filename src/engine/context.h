/* context.h: what the engine's other files need of a context beyond the public API: forward passes
 * that end with the final hidden states instead of logits (embeddings, embed.c) and the host
 * memory the context set aside for them. */
#ifndef BRASA_ENGINE_CONTEXT_H
#define BRASA_ENGINE_CONTEXT_H

#include <stdint.h>

#include "backend/backend.h"
#include "brasa.h"
#include "engine/pipeline.h"

/* Tokens (and runs) one pass takes at most. */
int32_t ctx_batch_size(const brasa_context *c);

/* Host memory for a batch's final hidden states (batch size * n_embd floats), set aside at
 * creation for a model that makes embeddings; NULL for any other. */
float *ctx_embd_rows(brasa_context *c);

/* An error unless every token is a row of the model's embedding table. */
brasa_status ctx_check_tokens(const brasa_context *c, const brasa_token *tokens, size_t n, brasa_error *err);

/* One forward pass over n_segs runs of tokens (together at most the batch size; tokens checked),
 * leaving the final hidden states of all of them, run after run, in *hidden (n rows of n_embd on
 * the device of the last layers). A causal model continues sequence seq[i]'s cache with run i, at
 * its next positions, which then advance; a model without causal attention takes each run as a
 * whole input at positions 0.. and keeps nothing (seq is not read). */
brasa_status ctx_eval_hidden(brasa_context *c, int n_segs, const int32_t *seq, const int64_t *len, const brasa_token *tokens,
                             bk_tensor *hidden, brasa_error *err);

/* ---- a process of a pipeline other than process 0 (pipeline.c) ---- */

/* A context running only layers first .. end - 1 of m: their caches and weights, no embeddings or
 * head. */
brasa_status ctx_create_stage(const brasa_model *m, const brasa_context_params *p, int32_t first, int32_t end,
                              brasa_context **out, brasa_error *err);

/* A stage's hand-offs of the residual stream: in fills a step's n rows (row_bytes apart) before
 * its first layer, out hands them on after its last. */
typedef struct ctx_stage_io {
    brasa_status (*in)(const pipe_step *s, void *rows, size_t row_bytes, void *user, brasa_error *err);
    brasa_status (*out)(const pipe_step *s, const void *rows, size_t row_bytes, void *user, brasa_error *err);
    void *user;
} ctx_stage_io;

/* Runs a step (checked against the context's sizes) through the stage's layers. */
brasa_status ctx_stage_step(brasa_context *c, const pipe_step *s, const ctx_stage_io *io, brasa_error *err);
/* Copies sequence src's first n positions to dst in the stage's caches. */
brasa_status ctx_stage_copy(brasa_context *c, int32_t src, int32_t dst, int32_t n, brasa_error *err);

#endif
