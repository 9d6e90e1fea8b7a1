/* sched.c: the scheduler thread and its slots (see sched.h).
 *
 * Each turn of the loop: admit queued jobs into free slots, evaluate one token for every decoding
 * slot in one batched step, then one prompt chunk of one prefilling slot (round robin), so a long
 * prompt delays running streams by one chunk at most. Exactness: the engine gives a token in a step
 * of at most BK_BATCH_EXACT_MAX sequences the logits it gets alone, and prompts are cut into chunks
 * at fixed multiples of the batch size whatever else runs, so a request's greedy output never
 * depends on its neighbours. A slot keeps its last prompt's whole chunks cached; a new job that
 * starts with them skips their evaluation (the same chunks, so the same cache contents). */
#include "server/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "platform/platform.h"

#define MAX_STOP 4
#define PROMPT_CHUNK 64

struct sched_job {
    brasa_token *prompt;
    size_t n_prompt;
    int32_t max_tokens;
    brasa_sampler_params sampling;
    char *stop[MAX_STOP + 1];
    brasa_constraint *constraint;
    int32_t logprobs;
    bool control_text;
    int32_t think_budget;
    char *think_open, *think_close;
    /* shared with the readers, under the scheduler's mutex */
    buf text;
    sched_logprobs lp;
    sched_finish finish;
    int32_t n_generated;
    int32_t stop_index;      /* the stop string that ended it, or -1 */
    char error[512];
    bool cancelled;
    plat_cond *ready;        /* signalled when text comes or the job ends: its reader waits on it */
    int refs;
    double t_submit;
    sched_job *next; /* in the queue */
};

typedef struct slot {
    sched_job *job;          /* NULL when free */
    brasa_sampler *sampler;
    brasa_generation *gen;   /* the job's sampling, text and stop rules (engine/generate.c) */
    sched *owner;
    size_t prompt_done;      /* prompt tokens in the cache */
    bool has_next;           /* next: sampled, to be evaluated in the next step */
    bool has_news;           /* text came this step, its reader not yet woken */
    brasa_token next;
    brasa_token *cached;     /* prompt tokens whose cache rows are reusable (whole chunks) */
    size_t n_cached, cap_cached;
    double t_last;           /* when the last token came */
} slot;

struct sched {
    const brasa_model *model;
    brasa_context *ctx;
    sched_config cfg;
    plat_mutex *mu;
    plat_cond *wake;         /* the scheduler waits on it for jobs */
    plat_cond *news;         /* a job ended or left the queue (sched_drain waits on it) */
    plat_thread *thread;
    volatile int32_t stopping;
    sched_job *queue_head, *queue_tail;
    int queued, active;
    slot *slots;
    int32_t next_prefill;    /* round robin over prefilling slots */
};

static void job_unref_locked(sched_job *j) {
    if (--j->refs > 0)
        return;
    free(j->prompt);
    for (int i = 0; i < MAX_STOP; i++)
        free(j->stop[i]);
    free(j->think_open);
    free(j->think_close);
    buf_free(&j->text);
    free(j->lp.data);
    brasa_constraint_free(j->constraint);
    plat_cond_free(j->ready);
    free(j);
}

/* A job ended: its reader and sched_drain learn of it; under the mutex. */
static void job_ended_locked(sched *s, sched_job *j) {
    plat_cond_broadcast(j->ready);
    plat_cond_broadcast(s->news);
}

/* The generation's text: straight into the job. Its reader is woken once the whole step is sampled
 * (wake_readers): woken per token, the readers of every stream would take the cores from the
 * step's computing threads several times a step. */
static bool slot_text(const char *text, size_t len, void *user) {
    slot *sl = user;
    plat_mutex_lock(sl->owner->mu);
    const bool ok = buf_append(&sl->job->text, text, len);
    plat_mutex_unlock(sl->owner->mu);
    sl->has_news = true;
    return ok;
}

static void wake_readers(sched *s) {
    plat_mutex_lock(s->mu);
    for (int i = 0; i < s->cfg.n_slots; i++)
        if (s->slots[i].has_news) {
            s->slots[i].has_news = false;
            if (s->slots[i].job)
                plat_cond_broadcast(s->slots[i].job->ready);
        }
    plat_mutex_unlock(s->mu);
}

static void slot_finish(sched *s, slot *sl, sched_finish why, int32_t stop_index, const char *error) {
    sched_job *j = sl->job;
    brasa_generation_free(sl->gen);
    brasa_sampler_free(sl->sampler);
    sl->sampler = NULL;
    sl->gen = NULL;
    if (s->cfg.metrics)
        metrics_tokens(s->cfg.metrics, (int64_t)sl->prompt_done, j->n_generated);
    plat_mutex_lock(s->mu);
    j->finish = why;
    j->stop_index = stop_index;
    if (error)
        snprintf(j->error, sizeof j->error, "%s", error);
    sl->job = NULL;
    sl->has_news = false;
    s->active--;
    job_ended_locked(s, j);
    job_unref_locked(j);
    plat_mutex_unlock(s->mu);
}

/* The longest cached prefix of the slot that the job can reuse: whole chunks, and at least one
 * prompt token left to evaluate (its logits start the generation). */
static size_t reusable(const slot *sl, const sched_job *j) {
    size_t n = 0;
    while (n < sl->n_cached && n < j->n_prompt && sl->cached[n] == j->prompt[n])
        n++;
    if (n >= j->n_prompt)
        n = j->n_prompt - 1;
    return n / PROMPT_CHUNK * PROMPT_CHUNK;
}

/* Puts queued jobs into free slots (the one with the most reusable cache first); under the mutex. */
static void admit_locked(sched *s) {
    while (s->queue_head) {
        int best = -1;
        size_t best_reuse = 0;
        for (int i = 0; i < s->cfg.n_slots; i++) {
            if (s->slots[i].job)
                continue;
            const size_t r = reusable(&s->slots[i], s->queue_head);
            if (best < 0 || r > best_reuse) {
                best = i;
                best_reuse = r;
            }
        }
        if (best < 0)
            return;
        sched_job *j = s->queue_head;
        s->queue_head = j->next;
        if (!s->queue_head)
            s->queue_tail = NULL;
        s->queued--;
        if (j->cancelled) {
            j->finish = SCHED_CANCELLED;
            job_ended_locked(s, j);
            job_unref_locked(j);
            continue;
        }
        slot *sl = &s->slots[best];
        brasa_error err;
        brasa_generation_params gp = brasa_generation_default_params();
        gp.n_predict = j->max_tokens;
        gp.stop = (const char *const *)j->stop;
        gp.detokenize_flags = j->control_text ? BRASA_DETOKENIZE_SPECIAL : BRASA_DETOKENIZE_DEFAULT;
        gp.top_logprobs = j->logprobs;
        gp.on_text = slot_text;
        gp.user_data = sl;
        gp.think_budget = j->think_budget;
        gp.think_open = j->think_open;
        gp.think_close = j->think_close;
        if (brasa_sampler_create(&j->sampling, &sl->sampler, &err) != BRASA_OK ||
            (j->constraint && brasa_sampler_set_constraint(sl->sampler, j->constraint, &err) != BRASA_OK) ||
            brasa_generation_create(s->ctx, best, sl->sampler, &gp, &sl->gen, &err) != BRASA_OK) {
            brasa_sampler_free(sl->sampler);
            sl->sampler = NULL;
            j->finish = SCHED_FAILED;
            snprintf(j->error, sizeof j->error, "%s", err.message);
            job_ended_locked(s, j);
            job_unref_locked(j);
            continue;
        }
        sl->job = j;
        sl->has_next = false;
        brasa_seq_truncate(s->ctx, best, (int32_t)best_reuse);
        best_reuse = (size_t)brasa_seq_used(s->ctx, best); /* a sliding-window ring may not rewind that far */
        sl->prompt_done = best_reuse;
        sl->n_cached = best_reuse; /* the rest is overwritten from here on */
        for (size_t t = 0; t < best_reuse; t++)
            brasa_sampler_accept(sl->sampler, j->prompt[t]);
        s->active++;
    }
}

/* Records a token's log-probability for the job's reader. */
static bool record_logprob(sched *s, sched_job *j, const brasa_generation_step *step) {
    sched_logprob r = { .token = step->token, .logprob = step->logprob, .n_top = step->n_top };
    memcpy(r.top, step->top, (size_t)step->n_top * sizeof *r.top);
    plat_mutex_lock(s->mu);
    bool ok = true;
    if (j->lp.len == j->lp.cap) {
        const size_t cap = j->lp.cap ? j->lp.cap * 2 : 64;
        sched_logprob *p = realloc(j->lp.data, cap * sizeof *p);
        if (p) {
            j->lp.data = p;
            j->lp.cap = cap;
        } else {
            ok = false;
        }
    }
    if (ok)
        j->lp.data[j->lp.len++] = r;
    plat_mutex_unlock(s->mu);
    return ok;
}

/* The slot's next token, from its sequence's logits, through the generation step; ends the job
 * when the step says generation is over. */
static void slot_sample(sched *s, int seq) {
    slot *sl = &s->slots[seq];
    sched_job *j = sl->job;
    brasa_generation_step step;
    brasa_error err;
    if (brasa_generation_next(sl->gen, &step, &err) != BRASA_OK) {
        slot_finish(s, sl, SCHED_FAILED, -1, err.message);
        return;
    }
    if (step.has_logprob && !record_logprob(s, j, &step)) {
        slot_finish(s, sl, SCHED_FAILED, -1, "out of memory while sampling");
        return;
    }
    const double now = plat_time_seconds();
    if (s->cfg.metrics) {
        if (j->n_generated == 0)
            metrics_time_to_first_token(s->cfg.metrics, now - j->t_submit);
        else
            metrics_token_latency(s->cfg.metrics, now - sl->t_last);
    }
    sl->t_last = now;
    plat_mutex_lock(s->mu);
    j->n_generated++;
    plat_mutex_unlock(s->mu);
    if (step.done) {
        const bool length = step.stop_reason == BRASA_STOP_LENGTH || step.stop_reason == BRASA_STOP_CONTEXT;
        if (step.stop_reason == BRASA_STOP_ABORTED)
            slot_finish(s, sl, SCHED_FAILED, -1, "out of memory while streaming");
        else
            slot_finish(s, sl, length ? SCHED_LENGTH : SCHED_STOP, step.stop_index, NULL);
        return;
    }
    sl->next = step.token;
    sl->has_next = true;
}

/* Decode rounds (a token for each of a group's slots) a pipeline of processes runs before the loop
 * looks at its queue again, unless something needs it sooner (ring_must_stop). */
#define RING_ROUNDS 32
/* Slots per group of the pipelined decode: one step's most (brasa_seq_decode_step_begin). */
#define RING_GROUP_MAX 15

/* Whether the pipelined decode must hand back to the loop: a job waits for a slot or was
 * cancelled, a prompt waits for its evaluation, or the server stops. */
static bool ring_must_stop(sched *s) {
    plat_mutex_lock(s->mu);
    bool stop = s->queued > 0 || plat_atomic_load(&s->stopping);
    for (int i = 0; i < s->cfg.n_slots && !stop; i++) {
        const sched_job *j = s->slots[i].job;
        stop = j && (j->cancelled || s->slots[i].prompt_done < j->n_prompt);
    }
    plat_mutex_unlock(s->mu);
    return stop;
}

/* Ends the slots of a step that failed. */
static void fail_slots(sched *s, const int32_t *seqs, size_t n, const char *why) {
    for (size_t i = 0; i < n; i++)
        slot_finish(s, &s->slots[seqs[i]], SCHED_FAILED, -1, why);
}

/* A pipeline of processes (brasa_group_start): the decoding slots in two groups, whose steps take
 * turns, so that one is in the other processes while this one runs the other's first layers and
 * head. Each group's slots decode on together until one of them ends, RING_ROUNDS tokens, or
 * ring_must_stop; every step in flight is ended before this returns. Each sequence's logits are
 * the ones it gets alone, as with brasa_seq_decode_step. */
static void step_decode_ring(sched *s, const int32_t *seqs, const brasa_token *toks, size_t n) {
    struct {
        int32_t seqs[RING_GROUP_MAX];
        brasa_token toks[RING_GROUP_MAX];
        size_t n;
    } g[2];
    const size_t half = (n + 1) / 2;
    g[0].n = half;
    g[1].n = n - half;
    memcpy(g[0].seqs, seqs, half * sizeof *seqs);
    memcpy(g[0].toks, toks, half * sizeof *toks);
    memcpy(g[1].seqs, seqs + half, (n - half) * sizeof *seqs);
    memcpy(g[1].toks, toks + half, (n - half) * sizeof *toks);
    int order[2] = { 0, 0 }, in_flight = 0, rounds = 0;
    bool go = true;
    brasa_error err;
    for (int k = 0; k < 2; k++) {
        if (brasa_seq_decode_step_begin(s->ctx, g[k].seqs, g[k].toks, g[k].n, &err) != BRASA_OK) {
            fail_slots(s, g[k].seqs, g[k].n, err.message);
            go = false;
            continue;
        }
        order[in_flight++] = k;
    }
    while (in_flight > 0) {
        const int k = order[0];
        order[0] = order[1];
        in_flight--;
        if (brasa_seq_decode_step_end(s->ctx, &err) != BRASA_OK) {
            fail_slots(s, g[k].seqs, g[k].n, err.message);
            go = false;
            continue;
        }
        for (size_t i = 0; i < g[k].n; i++)
            slot_sample(s, g[k].seqs[i]);
        wake_readers(s);
        go = go && ++rounds < 2 * RING_ROUNDS && !ring_must_stop(s);
        for (size_t i = 0; go && i < g[k].n; i++)
            go = s->slots[g[k].seqs[i]].job && s->slots[g[k].seqs[i]].has_next;
        if (!go)
            continue; /* the slots keep their sampled tokens for the loop's next step */
        for (size_t i = 0; i < g[k].n; i++) {
            g[k].toks[i] = s->slots[g[k].seqs[i]].next;
            s->slots[g[k].seqs[i]].has_next = false;
        }
        if (brasa_seq_decode_step_begin(s->ctx, g[k].seqs, g[k].toks, g[k].n, &err) != BRASA_OK) {
            fail_slots(s, g[k].seqs, g[k].n, err.message);
            go = false;
            continue;
        }
        order[in_flight++] = k;
    }
}

/* One batched decode step for every slot with a sampled token. */
static void step_decode(sched *s) {
    int32_t seqs[256];
    brasa_token toks[256];
    size_t n = 0;
    for (int i = 0; i < s->cfg.n_slots; i++)
        if (s->slots[i].job && s->slots[i].has_next) {
            seqs[n] = i;
            toks[n++] = s->slots[i].next;
            s->slots[i].has_next = false;
        }
    if (n == 0)
        return;
    if (brasa_group_size() > 1 && n >= 2 && n <= 2 * RING_GROUP_MAX) {
        step_decode_ring(s, seqs, toks, n);
        return;
    }
    brasa_error err;
    if (brasa_seq_decode_step(s->ctx, seqs, toks, n, &err) != BRASA_OK) {
        for (size_t k = 0; k < n; k++)
            slot_finish(s, &s->slots[seqs[k]], SCHED_FAILED, -1, err.message);
        return;
    }
    for (size_t k = 0; k < n; k++)
        slot_sample(s, seqs[k]);
}

static bool remember_cached(slot *sl, const brasa_token *t, size_t n) {
    if (sl->n_cached + n > sl->cap_cached) {
        size_t cap = sl->cap_cached ? sl->cap_cached : 256;
        while (cap < sl->n_cached + n)
            cap *= 2;
        brasa_token *p = realloc(sl->cached, cap * sizeof *p);
        if (!p)
            return false;
        sl->cached = p;
        sl->cap_cached = cap;
    }
    memcpy(sl->cached + sl->n_cached, t, n * sizeof *t);
    sl->n_cached += n;
    return true;
}

/* The next chunk of one prefilling slot's prompt. */
static void step_prefill(sched *s) {
    for (int k = 0; k < s->cfg.n_slots; k++) {
        const int i = (s->next_prefill + k) % s->cfg.n_slots;
        slot *sl = &s->slots[i];
        sched_job *j = sl->job;
        if (!j || sl->prompt_done >= j->n_prompt)
            continue;
        s->next_prefill = (i + 1) % s->cfg.n_slots;
        const size_t end = (sl->prompt_done / PROMPT_CHUNK + 1) * PROMPT_CHUNK;
        const size_t n = (end < j->n_prompt ? end : j->n_prompt) - sl->prompt_done;
        brasa_error err;
        if (brasa_seq_decode(s->ctx, i, j->prompt + sl->prompt_done, n, NULL, &err) != BRASA_OK) {
            sl->n_cached = 0;
            slot_finish(s, sl, SCHED_FAILED, -1, err.message);
            return;
        }
        for (size_t t = 0; t < n; t++)
            brasa_sampler_accept(sl->sampler, j->prompt[sl->prompt_done + t]);
        /* only whole chunks are kept for reuse: a part chunk would be cut differently next time */
        if (n == PROMPT_CHUNK && sl->n_cached == sl->prompt_done && !remember_cached(sl, j->prompt + sl->prompt_done, n))
            sl->n_cached = 0;
        sl->prompt_done += n;
        if (sl->prompt_done == j->n_prompt)
            slot_sample(s, i);
        return;
    }
}

static void sched_loop(void *arg) {
    sched *s = arg;
    plat_mutex_lock(s->mu);
    for (;;) {
        /* cancelled jobs leave their slots now */
        for (int i = 0; i < s->cfg.n_slots; i++)
            if (s->slots[i].job && (s->slots[i].job->cancelled || plat_atomic_load(&s->stopping))) {
                plat_mutex_unlock(s->mu);
                s->slots[i].n_cached = 0;
                slot_finish(s, &s->slots[i], SCHED_CANCELLED, -1, NULL);
                plat_mutex_lock(s->mu);
            }
        if (plat_atomic_load(&s->stopping)) {
            while (s->queue_head) {
                sched_job *j = s->queue_head;
                s->queue_head = j->next;
                s->queued--;
                j->finish = SCHED_CANCELLED;
                job_ended_locked(s, j);
                job_unref_locked(j);
            }
            s->queue_tail = NULL;
            plat_cond_broadcast(s->news);
            break;
        }
        admit_locked(s);
        if (s->active == 0) {
            plat_cond_wait(s->wake, s->mu);
            continue;
        }
        plat_mutex_unlock(s->mu);
        step_decode(s);
        step_prefill(s);
        wake_readers(s);
        plat_mutex_lock(s->mu);
    }
    plat_mutex_unlock(s->mu);
}

brasa_status sched_create(const brasa_model *model, const sched_config *cfg, sched **out, brasa_error *err) {
    *out = NULL;
    if (cfg->n_slots < 1 || cfg->n_slots > 256 || cfg->max_queue < 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%d slots: give 1 to 256", cfg->n_slots);
    sched *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    s->model = model;
    s->cfg = *cfg;
    s->slots = calloc((size_t)cfg->n_slots, sizeof *s->slots);
    s->mu = plat_mutex_create();
    s->wake = plat_cond_create();
    s->news = plat_cond_create();
    brasa_status st = BRASA_OK;
    if (!s->slots || !s->mu || !s->wake || !s->news) {
        sched_free(s);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < cfg->n_slots; i++)
        s->slots[i].owner = s;
    brasa_context_params cp = brasa_context_default_params();
    cp.n_ctx = cfg->n_ctx;
    cp.n_batch = PROMPT_CHUNK;
    cp.n_threads = cfg->n_threads;
    cp.n_seq = cfg->n_slots;
    cp.kv_type = cfg->kv_type;
    cp.device = cfg->device;
    cp.pipeline_split = cfg->split;
    cp.gpu_layers = cfg->gpu_layers;
    cp.progress = cfg->progress;
    st = brasa_context_create(model, &cp, &s->ctx, err);
    if (st == BRASA_OK)
        st = plat_thread_start(&s->thread, sched_loop, s, err);
    if (st != BRASA_OK) {
        sched_free(s);
        return st;
    }
    *out = s;
    return BRASA_OK;
}

void sched_stop(sched *s) {
    plat_atomic_store(&s->stopping, 1);
    if (!s->thread)
        return;
    plat_mutex_lock(s->mu);
    plat_cond_broadcast(s->wake);
    plat_mutex_unlock(s->mu);
    plat_thread_join(s->thread);
    s->thread = NULL;
}

void sched_free(sched *s) {
    if (!s)
        return;
    sched_stop(s);
    for (int i = 0; s->slots && i < s->cfg.n_slots; i++)
        free(s->slots[i].cached);
    brasa_context_free(s->ctx);
    free(s->slots);
    plat_cond_free(s->wake);
    plat_cond_free(s->news);
    plat_mutex_free(s->mu);
    free(s);
}

const char *sched_backend(const sched *s) {
    return brasa_context_backend(s->ctx);
}

const char *sched_tuning_note(const sched *s) {
    const char *note = "";
    brasa_context_tuning(s->ctx, &note);
    return note;
}

sched_job *sched_submit(sched *s, const sched_job_params *p) {
    sched_job *j = calloc(1, sizeof *j);
    if (!j) {
        brasa_constraint_free(p->constraint);
        return NULL;
    }
    j->constraint = p->constraint;
    j->logprobs = p->logprobs < 20 ? p->logprobs : 20;
    j->control_text = p->control_text;
    j->prompt = malloc(p->n_prompt * sizeof *j->prompt);
    j->ready = plat_cond_create();
    bool ok = j->prompt != NULL && j->ready != NULL;
    if (ok)
        memcpy(j->prompt, p->prompt, p->n_prompt * sizeof *j->prompt);
    j->n_prompt = p->n_prompt;
    j->max_tokens = p->max_tokens;
    if (ok && p->think_budget > 0) {
        j->think_budget = p->think_budget;
        j->think_open = buf_str_copy(p->think_open ? p->think_open : "");
        j->think_close = buf_str_copy(p->think_close ? p->think_close : "");
        ok = j->think_open && j->think_close;
    }
    j->sampling = p->sampling;
    for (int i = 0; ok && p->stop && p->stop[i] && i < MAX_STOP; i++)
        ok = (j->stop[i] = buf_str_copy(p->stop[i])) != NULL;
    j->stop_index = -1;
    j->refs = 2; /* the caller's and the scheduler's */
    j->t_submit = plat_time_seconds();
    plat_mutex_lock(s->mu);
    /* free slots take jobs without waiting: only the jobs beyond them count against the queue */
    if (!ok || s->queued - (s->cfg.n_slots - s->active) >= s->cfg.max_queue ||
        plat_atomic_load(&s->stopping)) {
        j->refs = 1;
        job_unref_locked(j);
        plat_mutex_unlock(s->mu);
        return NULL;
    }
    if (s->queue_tail)
        s->queue_tail->next = j;
    else
        s->queue_head = j;
    s->queue_tail = j;
    s->queued++;
    plat_cond_broadcast(s->wake);
    plat_mutex_unlock(s->mu);
    return j;
}

bool sched_job_read(sched *s, sched_job *j, double seconds, buf *out, sched_logprobs *lp, sched_progress *pr) {
    plat_mutex_lock(s->mu);
    if (j->text.len == 0 && j->finish == SCHED_RUNNING && seconds > 0)
        plat_cond_timedwait(j->ready, s->mu, seconds);
    bool ok = buf_append(out, j->text.data, j->text.len);
    if (ok)
        j->text.len = 0;
    if (ok && lp && j->lp.len > 0) {
        if (lp->len + j->lp.len > lp->cap) {
            const size_t cap = lp->len + j->lp.len + 64;
            sched_logprob *p = realloc(lp->data, cap * sizeof *p);
            if (p) {
                lp->data = p;
                lp->cap = cap;
            } else {
                ok = false;
            }
        }
        if (ok) {
            memcpy(lp->data + lp->len, j->lp.data, j->lp.len * sizeof *lp->data);
            lp->len += j->lp.len;
            j->lp.len = 0;
        }
    }
    pr->finish = j->finish;
    pr->n_prompt = (int32_t)j->n_prompt;
    pr->n_generated = j->n_generated;
    pr->stop_index = j->stop_index;
    snprintf(pr->error, sizeof pr->error, "%s", j->error);
    plat_mutex_unlock(s->mu);
    return ok;
}

void sched_job_cancel(sched *s, sched_job *j) {
    plat_mutex_lock(s->mu);
    j->cancelled = true;
    plat_cond_broadcast(s->wake);
    plat_mutex_unlock(s->mu);
}

void sched_job_release(sched *s, sched_job *j) {
    if (!j)
        return;
    plat_mutex_lock(s->mu);
    job_unref_locked(j);
    plat_mutex_unlock(s->mu);
}

bool sched_drain(sched *s, double seconds) {
    const double until = plat_time_seconds() + seconds;
    plat_mutex_lock(s->mu);
    while ((s->queued > 0 || s->active > 0) && plat_time_seconds() < until)
        plat_cond_timedwait(s->news, s->mu, 0.1);
    const bool drained = s->queued == 0 && s->active == 0;
    plat_mutex_unlock(s->mu);
    return drained;
}

void sched_counts(sched *s, int *queued, int *active) {
    plat_mutex_lock(s->mu);
    *queued = s->queued;
    *active = s->active;
    plat_mutex_unlock(s->mu);
}
