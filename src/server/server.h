/* server.h: `brasa serve`: an OpenAI-compatible HTTP server (libmicrohttpd, one thread per
 * connection) in front of the continuous-batching scheduler, with a lock that makes it the only
 * server of its device, and a clean shutdown on SIGINT/SIGTERM. */
#ifndef BRASA_SERVER_SERVER_H
#define BRASA_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct srv_config {
    const char *const *model_paths; /* the -m files */
    size_t n_models;
    const char *models_dir;  /* every .gguf there too; may be NULL */
    double keep_alive;     /* seconds an idle model stays loaded; < 0: forever for one model, 5 min for several */
    uint64_t max_memory;   /* bytes the loaded models may take together; 0: 90% of what is free at the start */
    const char *host;      /* an IPv4 or IPv6 address, or "localhost" */
    int port;              /* 0: any free port (the chosen one is printed) */
    int parallel;          /* slots */
    int ctx;               /* tokens per slot */
    int threads;           /* 0: physical cores */
    int32_t kv_type;       /* a brasa_kv_type */
    const char *device;    /* "cpu" (NULL), "cuda", "hip:1": lowercase letters, digits, one ':' */
    const char *split;     /* as brasa_context_params.pipeline_split; NULL: by memory */
    int32_t gpu_layers;    /* as brasa_context_params.gpu_layers */
    const char *api_key;   /* NULL: none */
    const char *chat_template; /* a Jinja chat template's text to use instead of the model's; NULL: the model's */
    bool no_auth;          /* the explicit choice to serve a non-loopback address without a key */
    int timeout_s;         /* an idle connection is closed after this long */
    int max_queue;
    size_t max_body;
} srv_config;

/* Runs until SIGINT/SIGTERM; returns the exit status (0 after a clean stop). Prints to stderr. */
int srv_run(const srv_config *cfg);

/* The web chat page served at / (HTML with its CSS and script inline). */
extern const char srv_webui_html[];

#endif
