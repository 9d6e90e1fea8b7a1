/* offload.c: the split of a model between a GPU and the CPU (see offload.h). */
#include "engine/offload.h"

#include "engine/layout.h"

static void add(const bk_tensor *t, const bk_tensor **out, size_t cap, size_t *n) {
    if (!t->data)
        return;
    if (*n < cap)
        out[*n] = t;
    (*n)++;
}

/* The embedding table goes to the GPU with the first layer; a head tied to it is the same rows. */
static bool embd_on_gpu(int32_t first_gpu_layer) { return first_gpu_layer <= 0; }
static bool head_is_embd(const arch_weights *w) { return w->output.data == w->tok_embd.data; }

size_t offload_gpu_tensors(const arch_hparams *hp, const arch_weights *w, int32_t first_gpu_layer, const bk_tensor **out,
                           size_t cap) {
    size_t n = 0;
    if (first_gpu_layer >= hp->n_layer)
        return 0;
    if (embd_on_gpu(first_gpu_layer))
        add(&w->tok_embd, out, cap, &n);
    for (int32_t il = first_gpu_layer < 0 ? 0 : first_gpu_layer; il < hp->n_layer; il++)
        for (int i = 0; i < arch_layer_tensor_count; i++)
            add(arch_layer_tensor(&w->layers[il], i), out, cap, &n);
    add(&w->rope_freqs, out, cap, &n);
    add(&w->output_norm, out, cap, &n);
    if (!(embd_on_gpu(first_gpu_layer) && head_is_embd(w)))
        add(&w->output, out, cap, &n);
    return n;
}

int32_t offload_layers(const arch_hparams *hp, const arch_weights *w, const brasa_context_params *p, uint64_t act_bytes,
                       uint64_t free_bytes, uint64_t total_bytes, bool weights_in_place) {
    const int32_t L = hp->n_layer;
    if (p->gpu_layers == BRASA_GPU_LAYERS_NONE)
        return 0;
    if (p->gpu_layers > 0)
        return p->gpu_layers < L ? p->gpu_layers : L;
    /* auto: add layers from the last while everything on the device stays within the budget */
    const uint64_t reserve = total_bytes / 16 < OFFLOAD_RESERVE_MAX ? total_bytes / 16 : OFFLOAD_RESERVE_MAX;
    if (free_bytes <= reserve + act_bytes)
        return 0;
    const uint64_t budget = free_bytes - reserve - act_bytes;
    const uint64_t weights = weights_in_place ? 0 : 1; /* a factor: in place, weights take no device memory */
    uint64_t used = weights * (bk_bytes(&w->output_norm) + bk_bytes(&w->output));
    int32_t n = 0;
    while (n < L) {
        const int32_t il = L - 1 - n;
        uint64_t more = weights * arch_layer_bytes(&w->layers[il]) + layout_layer_kv_bytes(hp, il, p);
        if (il == 0 && !head_is_embd(w))
            more += weights * bk_bytes(&w->tok_embd);
        if (used + more > budget)
            break;
        used += more;
        n++;
    }
    return n;
}
