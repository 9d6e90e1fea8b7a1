/* offload.h: how a context splits a model between a GPU and the CPU (--gpu-layers). The GPU runs
 * the last layers and the output head, the CPU the first layers and the embedding lookup, so the
 * residual stream crosses once per pass. "auto" gives the GPU as many layers as its free memory
 * holds beside its share of the KV caches and a batch's activations, keeping a reserve. */
#ifndef BRASA_ENGINE_OFFLOAD_H
#define BRASA_ENGINE_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "brasa.h"
#include "models/arch.h"

/* Memory a device keeps free for its runtime and fragmentation when "auto" fills it: 1/16 of it,
 * at most this much. */
#define OFFLOAD_RESERVE_MAX ((uint64_t)512 << 20)

/* The weights a split puts on the GPU: the tensors of layers first_gpu_layer .. n_layer - 1, the
 * output norm and head, and the token embeddings when every layer is there (the lookup runs on the
 * first layer's device). Each tensor once (a tied head is the embedding table). Fills up to cap
 * pointers into w; returns how many there are (cap may be 0 to count). */
size_t offload_gpu_tensors(const arch_hparams *hp, const arch_weights *w, int32_t first_gpu_layer, const bk_tensor **out,
                           size_t cap);

/* Layers the GPU runs for a request (p->gpu_layers of resolved params p): N, all, none, or for
 * auto the most whose weights (unless the device reads them in place from host memory), KV caches
 * (p's sequences and context) and the batch's activations (act_bytes) fit in free_bytes less the
 * reserve of a total_bytes device. */
int32_t offload_layers(const arch_hparams *hp, const arch_weights *w, const brasa_context_params *p, uint64_t act_bytes,
                       uint64_t free_bytes, uint64_t total_bytes, bool weights_in_place);

#endif
