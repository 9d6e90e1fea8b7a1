/* catalog.h: the shapes of popular open models, for two jobs: `brasa fit --params 7B` assumes the
 * shape of the nearest one (layers, KV heads, head size, window) to size its KV cache, and
 * `brasa doctor` lists the largest of them that brasa runs and that fit this machine. Shapes are the models' published
 * configurations. */
#ifndef BRASA_TOOLS_CATALOG_H
#define BRASA_TOOLS_CATALOG_H

#include <stddef.h>
#include <stdint.h>

typedef struct catalog_model {
    const char *name;          /* "Qwen2.5-7B-Instruct" */
    const char *arch;          /* its GGUF files' general.architecture: whether brasa runs it is arch_find's */
    double params;             /* all parameters */
    double active_params;      /* parameters one token uses (MoE: the routed experts only) */
    int32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx_train;
    int32_t sliding_window;    /* 0: none */
    int32_t swa_pattern;       /* every swa_pattern-th layer is global (0: all layers local) */
} catalog_model;

/* A quantization people download, with its average bits per weight over a whole model. */
typedef struct catalog_quant {
    const char *name; /* "Q4_K_M" */
    double bits;
} catalog_quant;

size_t catalog_count(void);
const catalog_model *catalog_get(size_t i);
/* The catalog model whose parameter count is nearest (by ratio) to params. */
const catalog_model *catalog_nearest(double params);

size_t catalog_quant_count(void);
const catalog_quant *catalog_quant_get(size_t i);

#endif
