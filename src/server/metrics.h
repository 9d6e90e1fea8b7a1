/* metrics.h: the server's counters and latency histograms, rendered as Prometheus text. Every call
 * is thread-safe (one mutex; updates are a few additions). */
#ifndef BRASA_SERVER_METRICS_H
#define BRASA_SERVER_METRICS_H

#include <stdint.h>

#include "core/buf.h"

typedef struct metrics metrics;

metrics *metrics_create(void);
void metrics_free(metrics *m);

/* One finished HTTP request: its route ("chat", "completions", "embeddings", "count_tokens",
 * "models", "other"; whatever the API dialect) and status. */
void metrics_request(metrics *m, const char *route, int status);
void metrics_tokens(metrics *m, int64_t prompt_tokens, int64_t generated_tokens);
void metrics_time_to_first_token(metrics *m, double seconds);
void metrics_token_latency(metrics *m, double seconds);

/* Appends the exposition text; queued and active come from the scheduler. */
bool metrics_render(metrics *m, int queued, int active, int slots, buf *out);

#endif
