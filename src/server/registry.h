/* registry.h: the models one server offers (several -m, or every GGUF of --models-dir), loaded on
 * first use and unloaded when idle past their keep-alive, or when another needs the memory: each
 * model's need is planned with fit (weights, the slots' KV cache, compute buffers) against the
 * server's memory budget, and the least recently used idle models make room. Requests hold a
 * reference to their model for their whole life; a request for a model that is loading, or that
 * waits for room, waits (it does not fail). */
#ifndef BRASA_SERVER_REGISTRY_H
#define BRASA_SERVER_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"
#include "platform/platform.h"
#include "server/sched.h"

#define REG_FOREVER 1e18 /* a keep-alive that never runs out */

typedef struct registry registry;

typedef enum reg_state { REG_UNLOADED, REG_LOADING, REG_LOADED } reg_state;

/* One model. Its name, path and header facts are fixed; the rest is valid while the holder of a
 * reference (reg_acquire) keeps it. */
typedef struct reg_model {
    char name[256];            /* the file's name without ".gguf" */
    char path[1024];
    plat_file_info file;
    uint64_t need_bytes;       /* fit's plan: what it takes in memory with the server's slots */
    brasa_model_desc header;   /* read at the scan (its strings owned below) */
    char arch[32], quant[16];
    char *chat_template;       /* the template the server renders (the file's or --chat-template-file's) */
    bool tools, thinking;      /* its template writes tool calls brasa reads; it thinks apart */
    /* loaded */
    brasa_model *model;
    brasa_model_desc desc;
    sched *sched;              /* NULL for an embedding model (it makes no text) */
    plat_mutex *embed_mu;      /* one embeddings request at a time, on embed_ctx */
    brasa_context *embed_ctx;  /* made on the first embeddings request */
    /* under the registry's lock */
    reg_state state;
    int refs;
    double last_used, expires; /* plat_time_seconds(); expires < 0: never */
    double keep_alive;
    char error[512];           /* why its last load failed */
} reg_model;

typedef struct reg_config {
    sched_config sched;        /* for each model's scheduler (metrics, slots, context, device...) */
    const char *chat_template; /* a template's text for every model, or NULL: each model's own */
    uint64_t budget_bytes;     /* memory the loaded models may take together */
    double keep_alive;         /* seconds a model stays loaded after its last request (REG_FOREVER) */
    void (*progress)(float fraction, void *user_data); /* model loading; may be NULL */
} reg_config;

/* A registry of the given files (each a GGUF path), headers read and plans made now: a file that
 * cannot be read is an error naming it. */
brasa_status reg_create(const reg_config *cfg, const char *const *paths, size_t n_paths, registry **out,
                        brasa_error *err);
/* The GGUF files of a folder, sorted by name, into paths (malloc'd strings, freed by the caller);
 * BRASA_ERR_IO when the folder cannot be read, or holds none. */
brasa_status reg_scan_dir(const char *dir, char ***paths, size_t *n, brasa_error *err);
void reg_free(registry *r);

size_t reg_count(const registry *r);
/* The model of that index (name, path and header facts; the rest only under a reference). */
const reg_model *reg_at(const registry *r, size_t i);
/* The model a request names: exactly its name, its file name, or (a server of one model) any. NULL
 * when no model has that name. */
reg_model *reg_find(registry *r, const char *name);
/* Takes a reference to m and has it loaded (loading it, or waiting while it loads or while the
 * memory it needs is taken by models in use). Returns BRASA_OK, or an error (its load failed, it
 * does not fit the budget at all, the server is stopping). */
brasa_status reg_acquire(registry *r, reg_model *m, brasa_error *err);
/* Drops the reference; keep_alive >= 0 sets how long m stays loaded when idle (the request's
 * choice), < 0 keeps the current setting. */
void reg_release(registry *r, reg_model *m, double keep_alive);
/* Unloads the idle models whose keep-alive ran out; called periodically. */
void reg_tick(registry *r);
/* Loaded models: their state, under the lock, for listings. */
void reg_snapshot(registry *r, size_t i, bool *loaded, double *expires);
/* Sums over the loaded models' schedulers, for /health and /metrics. */
void reg_counts(registry *r, int *queued, int *active);
/* Waits up to seconds until no model's scheduler has work; whether it got there. */
bool reg_drain(registry *r, double seconds);
/* Refuses further loads (waiters get an error) and stops every scheduler. */
void reg_stop(registry *r);

#endif
