/* metrics.c: counters and fixed-bucket histograms (Prometheus' cumulative "le" buckets). */
#include "server/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

static const char *const routes[] = { "chat", "completions", "embeddings", "count_tokens", "models", "other" };
#define N_ROUTES 6
static const int statuses[] = { 200, 400, 401, 404, 405, 413, 429, 500, 503 };
#define N_STATUSES 9

static const double ttft_bounds[] = { 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };
static const double token_bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1 };
#define MAX_BUCKETS 9

typedef struct histogram {
    const double *bounds;
    int n_bounds;
    uint64_t counts[MAX_BUCKETS + 1]; /* the last: above every bound */
    uint64_t total;
    double sum;
} histogram;

struct metrics {
    plat_mutex *mu;
    uint64_t requests[N_ROUTES][N_STATUSES + 1]; /* the last: any other status */
    uint64_t prompt_tokens, generated_tokens;
    histogram ttft, token;
};

metrics *metrics_create(void) {
    metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->mu = plat_mutex_create();
    if (!m->mu) {
        free(m);
        return NULL;
    }
    m->ttft = (histogram){ .bounds = ttft_bounds, .n_bounds = 9 };
    m->token = (histogram){ .bounds = token_bounds, .n_bounds = 8 };
    return m;
}

void metrics_free(metrics *m) {
    if (!m)
        return;
    plat_mutex_free(m->mu);
    free(m);
}

void metrics_request(metrics *m, const char *route, int status) {
    int r = N_ROUTES - 1, s = N_STATUSES;
    for (int i = 0; i < N_ROUTES; i++)
        if (strcmp(route, routes[i]) == 0)
            r = i;
    for (int i = 0; i < N_STATUSES; i++)
        if (status == statuses[i])
            s = i;
    plat_mutex_lock(m->mu);
    m->requests[r][s]++;
    plat_mutex_unlock(m->mu);
}

void metrics_tokens(metrics *m, int64_t prompt_tokens, int64_t generated_tokens) {
    plat_mutex_lock(m->mu);
    m->prompt_tokens += (uint64_t)prompt_tokens;
    m->generated_tokens += (uint64_t)generated_tokens;
    plat_mutex_unlock(m->mu);
}

static void observe(metrics *m, histogram *h, double v) {
    int b = 0;
    while (b < h->n_bounds && v > h->bounds[b])
        b++;
    plat_mutex_lock(m->mu);
    h->counts[b]++;
    h->total++;
    h->sum += v;
    plat_mutex_unlock(m->mu);
}

void metrics_time_to_first_token(metrics *m, double seconds) { observe(m, &m->ttft, seconds); }
void metrics_token_latency(metrics *m, double seconds) { observe(m, &m->token, seconds); }

static bool put(buf *out, const char *fmt, ...) {
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < sizeof line && buf_append(out, line, (size_t)n);
}

static bool render_histogram(buf *out, const char *name, const char *help, const histogram *h) {
    bool ok = put(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int b = 0; b < h->n_bounds; b++) {
        cum += h->counts[b];
        ok = ok && put(out, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[b], (unsigned long long)cum);
    }
    ok = ok && put(out, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->total);
    ok = ok && put(out, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->total);
    return ok;
}

bool metrics_render(metrics *m, int queued, int active, int slots, buf *out) {
    plat_mutex_lock(m->mu);
    bool ok = put(out, "# HELP brasa_requests_total HTTP requests by route and status.\n"
                       "# TYPE brasa_requests_total counter\n");
    for (int r = 0; r < N_ROUTES; r++)
        for (int s = 0; s <= N_STATUSES; s++)
            if (m->requests[r][s])
                ok = ok && put(out, "brasa_requests_total{route=\"%s\",status=\"%s%d\"} %llu\n", routes[r],
                               s == N_STATUSES ? "other" : "", s == N_STATUSES ? 0 : statuses[s],
                               (unsigned long long)m->requests[r][s]);
    ok = ok && put(out, "# HELP brasa_prompt_tokens_total Prompt tokens evaluated.\n# TYPE brasa_prompt_tokens_total counter\n"
                        "brasa_prompt_tokens_total %llu\n", (unsigned long long)m->prompt_tokens);
    ok = ok && put(out, "# HELP brasa_generated_tokens_total Tokens generated.\n# TYPE brasa_generated_tokens_total counter\n"
                        "brasa_generated_tokens_total %llu\n", (unsigned long long)m->generated_tokens);
    ok = ok && render_histogram(out, "brasa_time_to_first_token_seconds", "From a request's arrival to its first token.", &m->ttft);
    ok = ok && render_histogram(out, "brasa_token_latency_seconds", "Between consecutive tokens of a stream.", &m->token);
    ok = ok && put(out, "# HELP brasa_queue_depth Requests waiting for a slot.\n# TYPE brasa_queue_depth gauge\nbrasa_queue_depth %d\n", queued);
    ok = ok && put(out, "# HELP brasa_active_slots Slots generating.\n# TYPE brasa_active_slots gauge\nbrasa_active_slots %d\n", active);
    ok = ok && put(out, "# HELP brasa_slots Slots in all.\n# TYPE brasa_slots gauge\nbrasa_slots %d\n", slots);
    plat_mutex_unlock(m->mu);
    return ok;
}
