/* fit.h: will a model fit a device, at what context, split how, and how fast will it go. The
 * model comes from a GGUF header (no weights read) or from a description (parameters and bits per
 * weight, with the shape of the nearest well-known model). Memory is weights + KV cache (sized by
 * the engine's own plan, layout.h, sliding-window rings included) + compute buffers + runtime
 * overhead; speed is bandwidth x efficiency / bytes per token for decoding and compute x
 * efficiency / FLOPs per token for prefill. */
#ifndef BRASA_TOOLS_FIT_H
#define BRASA_TOOLS_FIT_H

#include <stdbool.h>
#include <stdint.h>

#include "brasa.h"
#include "models/arch.h"
#include "tools/devices.h"

typedef struct fit_model {
    char name[128];
    char arch[32];
    bool from_file;
    char shape_note[192];      /* descriptions: which model's shape was assumed */
    arch_hparams hp;           /* the shape (n_layer, heads, window, trained context, experts...) */
    double n_params, n_params_active;
    uint64_t weight_bytes;     /* every tensor */
    uint64_t bytes_per_token;  /* weights one decoded token reads (MoE: the routed experts only) */
    uint64_t embd_bytes;       /* token embeddings */
    bool embd_separate;        /* the output head is its own tensor: the embeddings are only looked up,
                                * a row per token, so they stay (mapped) in system memory */
    uint64_t head_bytes;       /* output head and the other tensors outside the layers */
    uint64_t layer_bytes[ARCH_MAX_LAYERS];  /* (n_layer) each layer's weights */
    uint64_t layer_active[ARCH_MAX_LAYERS]; /* (n_layer) what one token reads of them */
    uint64_t meta_bytes;       /* the header: metadata, vocabulary, tensor table */
} fit_model;

typedef enum fit_kv_type { FIT_KV_F32, FIT_KV_F16, FIT_KV_Q8_0 } fit_kv_type;

typedef struct fit_request {
    int32_t n_ctx;       /* tokens per sequence; 0: the trained context, at most 4096 (as brasa run) */
    int32_t n_parallel;  /* sequences (server slots), each with its own cache */
    fit_kv_type kv_type;
    int32_t n_threads;   /* CPU threads (their scratch); 0: one per physical core */
} fit_request;

/* How the host around a discrete GPU is assumed to be, for layers left in system memory. */
#define FIT_HOST_BANDWIDTH_GBS 64.0 /* dual-channel DDR5 desktop */
#define FIT_HOST_TOPS 3.0           /* 8 AVX2 cores, 8-bit products */

typedef struct fit_result {
    fit_request req;           /* with defaults resolved */
    uint64_t weights;          /* the weights the device holds: all but separate input embeddings */
    uint64_t kv, compute, overhead, total;
    double usable;             /* what the device offers a model */
    bool fits;                 /* everything on the device */
    int32_t max_ctx;           /* the longest context (per sequence) that fits whole; 0: none */
    int32_t gpu_layers;        /* layers on the device: n_layer when it fits */
    uint64_t device_bytes, host_bytes; /* weights on the device and in system memory (sum: weights) */
    uint64_t host_total;       /* system memory the split needs (its weights and their KV) */
    double decode_eff, prefill_eff;
    double decode_tps;         /* tokens/s right after a short prompt */
    double decode_tps_full;    /* tokens/s with the context full */
    double prefill_tps;
} fit_result;

/* Reads a model's shape and tensor sizes from its GGUF header. */
brasa_status fit_model_from_file(const char *path, fit_model *m, brasa_error *err);
/* A model described by its parameter count (active_params: the MoE's per-token share, or 0 for
 * dense) and average bits per weight, in the shape of the nearest catalog model. */
brasa_status fit_model_from_desc(double params, double bits, double active_params, fit_model *m, brasa_error *err);

/* KV cache bytes of n_parallel sequences of n_ctx tokens decoded in batches of n_batch. */
uint64_t fit_kv_bytes(const fit_model *m, int32_t n_ctx, int32_t n_parallel, int32_t n_batch, fit_kv_type kv);
const char *fit_kv_name(fit_kv_type kv);

/* The whole answer for one device. */
brasa_status fit_plan(const fit_model *m, const fit_request *req, const devtab_device *d, fit_result *out,
                      brasa_error *err);

/* A host of a pipeline over several machines (mpirun --host a,b brasa ...: engine/pipeline.h). */
typedef struct fit_host {
    char name[64];
    double memory_gib;    /* its share of the machine's memory */
    double available_gib; /* of which free now, as measured (0: not measured) */
} fit_host;
#define FIT_HOSTS_MAX 64

typedef struct fit_hosts_result {
    fit_request req; /* with defaults resolved */
    int n;
    struct {
        int32_t first, end;     /* its layers */
        uint64_t weights, kv;   /* its layers' (and on the first host the head's) weights, their KV cache */
        uint64_t total;         /* with its buffers and runtime */
        double usable;
        bool fits;
    } host[FIT_HOSTS_MAX];
    bool fits;              /* on every host */
    double decode_tps;      /* a token passes every host in turn (short context; the links not counted) */
    double prefill_tps;     /* a prompt's steps flow through all at once: the slowest host's rate */
} fit_hosts_result;

/* The model as a pipeline over n hosts, each as fast as device d with its own memory: the layers
 * shared as the engine shares them (pipe_share_layers, by available memory where measured, else by
 * memory; the head counted in the first host's share where it would not fit otherwise), each
 * host's weights, KV cache, buffers and runtime against its usable memory, and the speeds. */
brasa_status fit_plan_hosts(const fit_model *m, const fit_request *req, const devtab_device *d, const fit_host *hosts, int n,
                            fit_hosts_result *out, brasa_error *err);
/* Parses "a:128G,b:96G" (G: GiB, T: TiB) into at most FIT_HOSTS_MAX hosts; false after writing why. */
bool fit_parse_hosts(const char *s, fit_host *hosts, int *n, char *why, size_t why_size);

/* Parses "120B", "7b", "1.5B", "270M", "8e9" into a count; false when it is not one. */
bool fit_parse_count(const char *s, double *out);

#endif
