/* sampler.c: turning logits into a token: penalties over recent tokens, then top-k, top-p and min-p
 * filters, temperature, and a draw from a seeded xoshiro256** generator, so that a seed reproduces a
 * run on any machine and any thread count. Scratch for the candidates is kept between calls. A
 * constraint (constraint.c) checks the token drawn and, only when it refuses it, masks the
 * vocabulary and draws again. Also the log-probabilities the API reports. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brasa.h"
#include "core/error.h"
#include "engine/constraint.h"

typedef struct candidate {
    int32_t id;
    float logit;
    double p;
} candidate;

struct brasa_sampler {
    brasa_sampler_params p;
    uint64_t seed;
    uint64_t rng[4];
    candidate *cand;
    int32_t cap;
    brasa_token *recent; /* ring of the last penalty_last_n tokens */
    int32_t n_recent, head;
    constraint_state *constraint; /* NULL: free text */
    float *masked;       /* scratch: the logits the constraint allows */
    int32_t masked_cap;
};

brasa_sampler_params brasa_sampler_default_params(void) {
    brasa_sampler_params p;
    memset(&p, 0, sizeof p);
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.0f;
    p.penalty_last_n = 64;
    p.seed = BRASA_SEED_RANDOM;
    return p;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t next_u64(uint64_t s[4]) {
    const uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static double next_unit(uint64_t s[4]) {
    return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) with 53 bits */
}

static void seed_rng(brasa_sampler *s) {
    uint64_t x = s->seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);
}

brasa_status brasa_sampler_create(const brasa_sampler_params *params, brasa_sampler **out, brasa_error *err) {
    if (!out)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_sampler_create: out is required");
    *out = NULL;
    brasa_sampler_params p = params ? *params : brasa_sampler_default_params();
    if (isnan(p.temperature) || p.temperature > 100.0f)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "temperature %g is outside 0..100", (double)p.temperature);
    if (p.top_k < 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "top-k %d must not be negative", p.top_k);
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "top-p %g is outside (0, 1]", (double)p.top_p);
    if (!(p.min_p >= 0.0f && p.min_p < 1.0f))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "min-p %g is outside [0, 1)", (double)p.min_p);
    if (!(p.repeat_penalty > 0.0f && p.repeat_penalty <= 10.0f))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "repeat penalty %g is outside (0, 10]", (double)p.repeat_penalty);
    if (!(fabsf(p.presence_penalty) <= 10.0f) || !(fabsf(p.frequency_penalty) <= 10.0f))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "presence and frequency penalties must be within -10..10");
    if (p.penalty_last_n < 0 || p.penalty_last_n > (1 << 20))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "penalty window %d is outside 0..%d", p.penalty_last_n, 1 << 20);
    brasa_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    s->p = p;
    s->seed = p.seed;
    if (s->seed == BRASA_SEED_RANDOM) {
        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)s << 16);
        s->seed = splitmix64(&x) & 0x7fffffffffffffffull;
    }
    seed_rng(s);
    if (p.penalty_last_n > 0) {
        s->recent = malloc((size_t)p.penalty_last_n * sizeof *s->recent);
        if (!s->recent) {
            free(s);
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
        }
    }
    *out = s;
    return BRASA_OK;
}

void brasa_sampler_free(brasa_sampler *s) {
    if (!s)
        return;
    free(s->cand);
    free(s->recent);
    constraint_state_free(s->constraint);
    free(s->masked);
    free(s);
}

brasa_status brasa_sampler_set_constraint(brasa_sampler *s, const brasa_constraint *c, brasa_error *err) {
    if (!s)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_sampler_set_constraint: no sampler");
    constraint_state *next = NULL;
    if (c) {
        brasa_status st = constraint_state_create(c, &next, err);
        if (st != BRASA_OK)
            return st;
    }
    constraint_state_free(s->constraint);
    s->constraint = next;
    return BRASA_OK;
}

uint64_t brasa_sampler_seed(const brasa_sampler *s) {
    return s->seed;
}

void brasa_sampler_reset(brasa_sampler *s) {
    s->n_recent = 0;
    s->head = 0;
    seed_rng(s);
    if (s->constraint)
        constraint_reset(s->constraint);
}

void brasa_sampler_accept(brasa_sampler *s, brasa_token t) {
    if (s->p.penalty_last_n <= 0)
        return;
    s->recent[s->head] = t;
    s->head = (s->head + 1) % s->p.penalty_last_n;
    if (s->n_recent < s->p.penalty_last_n)
        s->n_recent++;
}

/* Highest logit first; ties by lower id, so the order (and greedy) never depends on the sort. */
static int by_logit(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Whether the penalties would change any logit. */
static bool penalties_apply(const brasa_sampler *s) {
    const brasa_sampler_params *p = &s->p;
    return s->n_recent > 0 && (p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f);
}

static void apply_penalties(brasa_sampler *s, int32_t n_vocab) {
    const brasa_sampler_params *p = &s->p;
    if (!penalties_apply(s))
        return;
    /* candidates are still indexed by id here */
    for (int32_t i = 0; i < s->n_recent; i++) {
        brasa_token t = s->recent[i];
        if (t < 0 || t >= n_vocab || s->cand[t].p < 0)
            continue; /* already penalized for this id */
        int32_t count = 0;
        for (int32_t j = 0; j < s->n_recent; j++)
            count += s->recent[j] == t;
        float *l = &s->cand[t].logit;
        *l = *l > 0 ? *l / p->repeat_penalty : *l * p->repeat_penalty;
        *l -= p->presence_penalty + (float)count * p->frequency_penalty;
        s->cand[t].p = -1; /* mark */
    }
}

static brasa_token sample_free(brasa_sampler *s, const float *logits, int32_t n_vocab);

/* Under a constraint: the model's own choice when the constraint allows it, else a draw from the
 * logits the constraint allows (the end token when it allows nothing: a dead end cannot go on). */
static brasa_token sample_constrained(brasa_sampler *s, const float *logits, int32_t n_vocab) {
    constraint_state *c = s->constraint;
    if (constraint_finished(c))
        return constraint_end_token(c);
    brasa_token t = sample_free(s, logits, n_vocab);
    if (t != BRASA_TOKEN_NONE && constraint_allows(c, t)) {
        constraint_take(c, t);
        return t;
    }
    if (s->masked_cap < n_vocab) {
        float *m = realloc(s->masked, (size_t)n_vocab * sizeof *m);
        if (!m)
            return BRASA_TOKEN_NONE;
        s->masked = m;
        s->masked_cap = n_vocab;
    }
    if (constraint_mask(c, logits, n_vocab, s->masked) == 0)
        return constraint_end_token(c);
    t = sample_free(s, s->masked, n_vocab);
    if (t == BRASA_TOKEN_NONE || !constraint_allows(c, t)) {
        /* a draw can only land on a refused token through rounding at the very end: take the best allowed */
        t = 0;
        for (int32_t i = 1; i < n_vocab; i++)
            if (s->masked[i] > s->masked[t])
                t = i;
    }
    constraint_take(c, t);
    return t;
}

brasa_token brasa_sampler_sample(brasa_sampler *s, const float *logits, int32_t n_vocab) {
    if (!s || !logits || n_vocab <= 0)
        return BRASA_TOKEN_NONE;
    return s->constraint ? sample_constrained(s, logits, n_vocab) : sample_free(s, logits, n_vocab);
}

static brasa_token sample_free(brasa_sampler *s, const float *logits, int32_t n_vocab) {
    const brasa_sampler_params *p = &s->p;
    if (p->temperature <= 0.0f && !penalties_apply(s)) {
        /* greedy without penalties: the first largest logit, as below, without copying them all */
        int32_t best = 0;
        for (int32_t i = 1; i < n_vocab; i++)
            if (logits[i] > logits[best])
                best = i;
        return best;
    }
    if (s->cap < n_vocab) {
        candidate *c = realloc(s->cand, (size_t)n_vocab * sizeof *c);
        if (!c)
            return BRASA_TOKEN_NONE;
        s->cand = c;
        s->cap = n_vocab;
    }
    candidate *c = s->cand;
    for (int32_t i = 0; i < n_vocab; i++)
        c[i] = (candidate){ i, logits[i], 0.0 };
    apply_penalties(s, n_vocab);
    if (p->temperature <= 0.0f) {
        int32_t best = 0;
        for (int32_t i = 1; i < n_vocab; i++)
            if (c[i].logit > c[best].logit)
                best = i;
        return best;
    }
    int32_t n = n_vocab;
    if (p->top_k > 0 && p->top_k <= 64 && p->top_k < n) {
        /* a small k: one pass keeping the k best in order (most candidates fail the first compare) */
        candidate top[64];
        int32_t kept = 0;
        for (int32_t i = 0; i < n; i++) {
            if (kept == p->top_k && by_logit(&c[i], &top[kept - 1]) >= 0)
                continue;
            int32_t j = kept < p->top_k ? kept++ : kept - 1;
            while (j > 0 && by_logit(&c[i], &top[j - 1]) < 0) {
                top[j] = top[j - 1];
                j--;
            }
            top[j] = c[i];
        }
        memcpy(c, top, (size_t)kept * sizeof *c);
        n = kept;
    } else {
        qsort(c, (size_t)n, sizeof *c, by_logit);
        if (p->top_k > 0 && p->top_k < n)
            n = p->top_k;
    }
    /* probabilities of what is left, before temperature (as the filters define them) */
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        c[i].p = exp((double)c[i].logit - (double)c[0].logit);
        sum += c[i].p;
    }
    if (p->top_p < 1.0f) {
        double cum = 0.0;
        for (int32_t i = 0; i < n; i++) {
            cum += c[i].p / sum;
            if (cum >= p->top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (p->min_p > 0.0f) {
        int32_t keep = 1;
        while (keep < n && c[keep].p >= p->min_p * c[0].p)
            keep++;
        n = keep;
    }
    /* temperature, then draw */
    sum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        c[i].p = exp(((double)c[i].logit - (double)c[0].logit) / (double)p->temperature);
        sum += c[i].p;
    }
    double r = next_unit(s->rng) * sum, cum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        cum += c[i].p;
        if (r < cum)
            return c[i].id;
    }
    return c[n - 1].id;
}

float brasa_logprobs(const float *logits, int32_t n_vocab, brasa_token token, int32_t n_top, brasa_token_logprob *top) {
    if (!logits || n_vocab <= 0)
        return -INFINITY;
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++)
        max = logits[i] > max ? logits[i] : max;
    double sum = 0.0;
    for (int32_t i = 0; i < n_vocab; i++)
        sum += exp((double)logits[i] - (double)max);
    const double log_z = (double)max + log(sum > 1.0 ? sum : 1.0); /* the largest logit alone adds 1 */
    n_top = n_top < 0 ? 0 : n_top > 20 ? 20 : n_top > n_vocab ? n_vocab : n_top;
    int32_t kept = 0;
    for (int32_t i = 0; i < n_vocab && top && n_top > 0; i++) {
        /* insertion into the n_top best so far; ties by lower id, as the sampler orders them */
        if (kept == n_top && logits[i] <= logits[top[kept - 1].token])
            continue;
        int32_t j = kept < n_top ? kept++ : kept - 1;
        while (j > 0 && logits[i] > logits[top[j - 1].token]) {
            top[j] = top[j - 1];
            j--;
        }
        top[j].token = i;
    }
    for (int32_t k = 0; k < kept; k++)
        top[k].logprob = (float)((double)logits[top[k].token] - log_z);
    return token >= 0 && token < n_vocab ? (float)((double)logits[token] - log_z) : -INFINITY;
}
