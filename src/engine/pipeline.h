/* pipeline.h: one model split across the processes of the group (dist/dist.h) as a pipeline of
 * layers. Process r runs layers first[r] .. end[r] - 1, and the residual stream's rows go from r to
 * r + 1; process 0 also looks the tokens up at the start and runs the output head at the end, for
 * the rows whose logits are wanted, which the last process sends back. Process 0 drives: it
 * tokenizes, samples and serves as a single process does, and every other process loads the same
 * model and serves what reaches it along the chain 0 -> 1 -> ... (pipe_worker_run): contexts made
 * and freed, steps, cache copies, the end. A step's header travels with its rows, so that a
 * process holds only its own layers' caches and weights and no other state. */
#ifndef BRASA_ENGINE_PIPELINE_H
#define BRASA_ENGINE_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "brasa.h"

#define PIPE_PROCESSES_MAX 64

/* A prompt's tokens per step in a pipeline: process 0 hands a step on and starts the next, so that
 * several are in flight and every process works at once (the first and last steps leave the
 * others idle: 8 steps of 64 for a 512-token prompt over two processes lose 1/9). */
#define PIPE_MICRO_TOKENS 64

/* The layers each process runs, in order: process r has first[r] .. end[r] - 1 (end[r] is
 * first[r + 1]; the last end is n_layer). */
typedef struct pipe_plan {
    int n;
    int32_t first[PIPE_PROCESSES_MAX], end[PIPE_PROCESSES_MAX];
} pipe_plan;

/* A run of a step's tokens: sequence seq's positions pos0 .. pos0 + len - 1. */
typedef struct pipe_seg {
    int32_t seq, len, pos0;
} pipe_seg;

/* A step as every process sees it: n tokens in n_segs runs; the logits of rows first .. n - 1 are
 * wanted (the last process sends those rows back to process 0). */
typedef struct pipe_step {
    int64_t n, first;
    int32_t n_segs;
    const pipe_seg *segs;
} pipe_step;

/* The split rule, one for the engine and for `brasa fit --hosts`: the layers in order over
 * out->n processes, process r's part ending where the bytes so far (process 0's counted from
 * head, the embeddings and output it holds, which may be 0) pass its cumulative share of
 * share[0..n); each keeps one layer at least (n <= n_layer). */
void pipe_share_layers(const uint64_t *layer_bytes, int32_t n_layer, uint64_t head, const double *share, pipe_plan *out);

/* Whether this process is one of several running one model. */
bool pipe_active(void);

/* ---- process 0 ---- */

/* The layers each process runs: the other processes' reports (they all opened the same file: the
 * same size and header, checked here) and memory decide, each taking layers in proportion to its
 * available memory, process 0's share counting the embedding table and head it holds; or split
 * gives the proportions ("3,1": three quarters of the layers' bytes to process 0). An error when
 * a process could not open the model, the files differ, or a process would get no layer. */
brasa_status pipe_plan_layers(const brasa_model *m, const char *split, pipe_plan *out, brasa_error *err);
/* Every other process makes its part of a context for params (its layers per plan) and says
 * whether it could; process 0 waits for all. */
brasa_status pipe_contexts_create(const brasa_context_params *params, const pipe_plan *plan, brasa_error *err);
/* Every other process frees its part. */
void pipe_contexts_free(void);
/* Every other process copies sequence src's first n positions to dst in its layers' caches. */
brasa_status pipe_seq_copy(int32_t src, int32_t dst, int32_t n, brasa_error *err);
/* Hands a step and its rows (n of row_bytes, after process 0's layers) to process 1. */
brasa_status pipe_step_send(const pipe_step *s, const void *rows, size_t row_bytes, brasa_error *err);
/* Receives the rows first .. n - 1 of the step just sent, after the last layer, into rows. */
brasa_status pipe_rows_back(const pipe_step *s, void *rows, size_t row_bytes, brasa_error *err);
/* Tells every other process to end (pipe_worker_run returns); once, before dist_stop. */
void pipe_finish(void);

/* ---- the other processes ---- */

/* Serves process 0 with model m (NULL when it could not be opened: why says why, and process 0
 * reports it) until it ends the pipeline; returns 0, or 1 after an error it printed. */
int pipe_worker_run(const brasa_model *m, const char *why);

#endif
