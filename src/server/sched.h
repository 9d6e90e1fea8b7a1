/* sched.h: continuous batching. One scheduler thread owns the inference context and its slots (one
 * sequence each); requests queue as jobs, take a free slot, have their prompt evaluated in chunks
 * between decode steps, and then decode together with every other running job, one token each per
 * batched forward pass. The HTTP threads only submit jobs and read their text. */
#ifndef BRASA_SERVER_SCHED_H
#define BRASA_SERVER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"
#include "core/buf.h"
#include "server/metrics.h"

typedef struct sched sched;
typedef struct sched_job sched_job;

typedef struct sched_config {
    int32_t n_slots;   /* requests decoded together */
    int32_t n_ctx;     /* tokens per slot */
    int32_t n_threads;
    int32_t kv_type;   /* a brasa_kv_type */
    const char *device; /* as brasa_context_params.device; NULL: the CPU */
    const char *split;  /* as brasa_context_params.pipeline_split */
    int32_t gpu_layers; /* as brasa_context_params.gpu_layers */
    void (*progress)(float fraction, void *user_data); /* weights copied to a GPU; may be NULL */
    int32_t max_queue; /* jobs waiting for a slot before submissions are refused */
    metrics *metrics;  /* token counts and latencies go here; may be NULL */
} sched_config;

/* Why a job ended. */
typedef enum sched_finish {
    SCHED_RUNNING,
    SCHED_STOP,     /* end of turn or a stop string */
    SCHED_LENGTH,   /* max_tokens or the context */
    SCHED_CANCELLED,
    SCHED_FAILED
} sched_finish;

typedef struct sched_job_params {
    const brasa_token *prompt; /* copied */
    size_t n_prompt;
    int32_t max_tokens;        /* > 0 */
    brasa_sampler_params sampling;
    const char *const *stop;   /* NULL-terminated, copied; may be NULL */
    brasa_constraint *constraint; /* the output's grammar, taken over by the job (even when
                                   * sched_submit fails); may be NULL */
    int32_t logprobs;          /* -1: none; else record each token's log-probability and this many
                                * most likely alternatives (at most 20) */
    bool control_text;         /* the text holds control tokens' text (a tool-call parser reads it) */
    int32_t think_budget;      /* brasa_generation_params.think_*: 0, or a cap on the reasoning */
    const char *think_open, *think_close; /* copied */
} sched_job_params;

/* A generated token's log-probability and the most likely alternatives at its step. */
typedef struct sched_logprob {
    brasa_token token;
    float logprob;
    int32_t n_top;
    brasa_token_logprob top[20];
} sched_logprob;

typedef struct sched_logprobs {
    sched_logprob *data;
    size_t len, cap;
} sched_logprobs;

/* What a reader learns from sched_job_read. */
typedef struct sched_progress {
    sched_finish finish;
    int32_t n_prompt, n_generated;
    int32_t stop_index;       /* SCHED_STOP by a stop string: which one; else -1 */
    char error[512];          /* when SCHED_FAILED */
} sched_progress;

brasa_status sched_create(const brasa_model *model, const sched_config *cfg, sched **out, brasa_error *err);
/* Stops the thread; running and queued jobs end as cancelled, and later submissions are refused. */
void sched_stop(sched *s);
/* sched_stop, then frees everything. */
void sched_free(sched *s);
const char *sched_backend(const sched *s);
/* Why the GPU's tuning cache file was ignored (stale, foreign, damaged), or "". */
const char *sched_tuning_note(const sched *s);

/* Queues a job; NULL when the queue is full (or out of memory). The caller holds one reference. */
sched_job *sched_submit(sched *s, const sched_job_params *p);
/* Waits up to `seconds` for news, appends the job's new text to out (and, when lp is not NULL, the
 * log-probabilities of the tokens made since the last read), and reports where it stands.
 * Returns false when out of memory. */
bool sched_job_read(sched *s, sched_job *j, double seconds, buf *out, sched_logprobs *lp, sched_progress *progress);
/* Ends the job at the next step (a client went away); its slot is freed then. */
void sched_job_cancel(sched *s, sched_job *j);
/* Drops the caller's reference. */
void sched_job_release(sched *s, sched_job *j);

/* Waits until no job is queued or running, at most `seconds`; returns whether it got there. */
bool sched_drain(sched *s, double seconds);
void sched_counts(sched *s, int *queued, int *active);

#endif
