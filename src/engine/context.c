/* context.c: inference contexts: the KV caches of one or more sequences and the activation
 * buffers, sized once for n_ctx, n_seq and n_batch, and the decode calls, which run the
 * architecture's forward pass over batches of tokens (of one sequence, or one token of each of
 * several). Nothing is allocated per token: every tensor is a view into buffers made at creation.
 * With a GPU the layers are split between it and the CPU (offload.h): each device is a "place"
 * holding the caches of its layers and a batch's activations; the GPU's weights are copied at
 * creation and its stored kernel choices read from the tuning cache (gpu_tuning.h). Passes that
 * make embeddings instead of logits (embed.c) go through ctx_eval_hidden (context.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/gpu_loader.h"
#include "backend/gpu_tuning.h"
#include "core/error.h"
#include "engine/context.h"
#include "engine/layout.h"
#include "engine/offload.h"
#include "engine/pipeline.h"
#include "dist/dist.h"
#include "model/model.h"
#include "models/decoder.h"
#include "platform/platform.h"
#include "quant/quant.h"

/* One sequence (conversation): its KV cache and the logits of its last evaluated token. */
typedef struct ctx_seq {
    int32_t n_past;
    bool have_logits;
    bk_tensor *k_cache, *v_cache; /* (n_layer) each on the device of the place running its layer */
    float *last_logits;           /* (n_vocab) */
} ctx_seq;

/* A device of the context and what lives there: the KV caches of the layers it runs (from
 * first_layer to the next place's) and one batch's activations. */
typedef struct ctx_place {
    fwd_place acts;     /* its device, first layer and activations, each with n_batch rows */
    bk_buffer *kv_buf, *act_buf;
} ctx_place;

/* A context's part in a pipeline of processes (pipeline.h). */
enum { CTX_ALONE, CTX_LEAD, CTX_STAGE };

struct brasa_context {
    const brasa_model *model;
    int role;                     /* CTX_ALONE, CTX_LEAD (process 0 of a pipeline) or CTX_STAGE */
    int32_t layer_first, layer_end; /* the layers this process runs: all, or its part of a pipeline */
    pipe_seg *steps;              /* (n_batch) a step's runs, as the pipeline sends them */
    struct {                      /* decode steps begun and not ended, oldest first */
        int n;                    /* sequences, one token each: every row's logits come back */
        bool done;                /* evaluated whole at the beginning (no pipeline) */
        int32_t seqs[BK_BATCH_EXACT_MAX];
    } flight[2];
    int n_flight;
    bk_device *cpu;               /* the CPU device, when it runs any layer */
    bk_device *gpu_dev;           /* the GPU device named by params.device, if any */
    const bk_gpu_module *gpu;     /* the module gpu_dev comes from */
    int32_t gpu_layers;           /* the last layers, run on gpu_dev */
    bk_gpu_info gpu_info;         /* gpu_dev's, as it was opened */
    int32_t tuned;                /* product choices gpu_dev took from the tuning cache */
    char tuning_note[640];        /* why a tuning cache file was ignored, or "" */
    ctx_place places[FWD_PLACES_MAX]; /* (n_places) in layer order: the CPU's layers, then the GPU's */
    int n_places;
    int32_t n_ctx, n_batch, n_threads, n_seq;
    ctx_seq *seqs;                /* (n_seq) */
    bk_tensor *caches;            /* (n_seq * 2 * n_layer) the views the sequences point into */
    int32_t *pos;                 /* (n_batch) */
    fwd_seq *fseqs;               /* (n_batch) a batch's sequences */
    uint64_t kv_bytes, scratch_bytes;
    int32_t rewind_max;           /* positions a sequence can drop and still continue (ring caches) */
    float *logit_store;           /* (n_seq * n_vocab) */
    int32_t *token_types;         /* (n_batch) zeros: every token is in the first segment */
    float *embd_rows;             /* (n_batch * n_embd) a batch's hidden states on the host, for
                                   * pooling; NULL for a model that makes no embeddings */
    char backend_name[480];
};

static brasa_status land(brasa_context *c, brasa_error *err);

brasa_context_params brasa_context_default_params(void) {
    brasa_context_params p;
    memset(&p, 0, sizeof p);
    return p;
}

/* Carves a tensor of `rows` rows of ne0 values of type (f32 or f16) out of a buffer at *offset
 * (64-byte aligned). */
static bk_tensor carve_typed(bk_device *dev, uint32_t type, char *base, size_t *offset, int64_t ne0, int64_t rows) {
    bk_tensor t = bk_view(dev, type, ne0, rows, base + *offset);
    *offset += (size_t)layout_bytes(ne0, rows, (uint32_t)quant_get(type)->type_size);
    return t;
}

static bool is_cpu(const char *device) {
    return !device || !*device || strcmp(device, "cpu") == 0;
}

/* Opens the GPU device params.device names ("cuda", "hip:1"), filling info. */
static brasa_status open_gpu(brasa_context *c, const char *device, bk_gpu_info *info, char *name, size_t name_size,
                             brasa_error *err) {
    char backend[24];
    int index = 0;
    const size_t len = strcspn(device, ":");
    if (len == 0 || len >= sizeof backend)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "unknown device \"%s\" (cpu, cuda, hip, or cuda:N, hip:N)", device);
    memcpy(backend, device, len);
    backend[len] = '\0';
    if (device[len] == ':') {
        char *end = NULL;
        const long v = strtol(device + len + 1, &end, 10);
        if (end == device + len + 1 || *end || v < 0 || v > 1023)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "device \"%s\": the index after ':' must be a number from 0", device);
        index = (int)v;
    }
    char why[1200];
    bk_gpu_backend *b = bk_gpu_open(backend, why, sizeof why);
    if (!b)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "device \"%s\": backend %s: %s", device, backend, why);
    const bk_gpu_module *m = bk_gpu_module_of(b);
    brasa_status st = m->device_create(index, &c->gpu_dev, err);
    if (st == BRASA_OK)
        st = m->device_info(index, info, err);
    if (st != BRASA_OK) {
        m->device_free(c->gpu_dev);
        c->gpu_dev = NULL;
        return st;
    }
    c->gpu = m;
    snprintf(name, name_size, "%s:%d/%s (%s)", m->name, index, info->name, info->arch);
    return BRASA_OK;
}

/* The weights the GPU's layers use (offload_gpu_tensors), in an array the caller frees; NULL when
 * out of memory. */
static const bk_tensor **gpu_tensor_list(const brasa_context *c, size_t *n) {
    const brasa_model *m = c->model;
    const int32_t first = m->hp.n_layer - c->gpu_layers;
    *n = offload_gpu_tensors(&m->hp, &m->weights, first, NULL, 0);
    const bk_tensor **list = malloc((*n ? *n : 1) * sizeof(const bk_tensor *));
    if (list)
        offload_gpu_tensors(&m->hp, &m->weights, first, list, *n);
    return list;
}

/* The weights of the GPU's layers that products read: matrices, not norms or biases, and not the
 * embedding table unless it is also the output head (else only looked up). */
static bool is_product_weight(const arch_weights *w, const bk_tensor *t) {
    return t->ne1 > 1 && (t->data != w->tok_embd.data || w->output.data == w->tok_embd.data);
}

/* The product weights the CPU's layers use, in an array the caller frees (NULL when out of
 * memory): every one when it runs every layer (the head too), else those of the layers before the
 * GPU's. */
static const bk_tensor **cpu_tensor_list(const brasa_context *c, size_t *n) {
    const brasa_model *m = c->model;
    if (c->role != CTX_ALONE) { /* a part of a pipeline (on the CPU): its layers, and process 0 the head */
        const size_t cap = (size_t)(c->layer_end - c->layer_first) * (size_t)arch_layer_tensor_count + 1;
        const bk_tensor **list = malloc(cap * sizeof(const bk_tensor *));
        *n = 0;
        for (int32_t il = c->layer_first; list && il < c->layer_end; il++)
            for (int i = 0; i < arch_layer_tensor_count; i++) {
                const bk_tensor *t = arch_layer_tensor(&m->weights.layers[il], i);
                if (t->data && is_product_weight(&m->weights, t))
                    list[(*n)++] = t;
            }
        if (list && c->role == CTX_LEAD && m->weights.output.data && is_product_weight(&m->weights, &m->weights.output))
            list[(*n)++] = &m->weights.output;
        return list;
    }
    const int32_t first_gpu = m->hp.n_layer - c->gpu_layers;
    const size_t cap = c->gpu_layers == 0 ? offload_gpu_tensors(&m->hp, &m->weights, 0, NULL, 0)
                                          : (size_t)first_gpu * (size_t)arch_layer_tensor_count;
    const bk_tensor **list = malloc((cap ? cap : 1) * sizeof(const bk_tensor *));
    *n = 0;
    if (!list)
        return NULL;
    if (c->gpu_layers == 0) {
        const size_t all = offload_gpu_tensors(&m->hp, &m->weights, 0, list, cap);
        for (size_t i = 0; i < all; i++)
            if (is_product_weight(&m->weights, list[i]))
                list[(*n)++] = list[i];
        return list;
    }
    for (int32_t il = 0; il < first_gpu; il++)
        for (int i = 0; i < arch_layer_tensor_count; i++) {
            const bk_tensor *t = arch_layer_tensor(&m->weights.layers[il], i);
            if (t->data && is_product_weight(&m->weights, t))
                list[(*n)++] = t;
        }
    return list;
}

/* Readies n tensors on dev (its keep op), counting their bytes into *done for progress over total. */
static brasa_status keep_tensors(bk_device *dev, const bk_tensor **list, size_t n, uint64_t total, uint64_t *done,
                                 const brasa_context_params *p, brasa_error *err) {
    for (size_t i = 0; dev && dev->ops->keep && i < n; i++) {
        brasa_status st = dev->ops->keep(dev, list[i], err);
        if (st != BRASA_OK)
            return st;
        *done += bk_bytes(list[i]);
        if (p->progress)
            p->progress(total ? (float)((double)*done / (double)total) : 1.0f, p->progress_user_data);
    }
    return BRASA_OK;
}

/* Readies every place's weights on its device now, with progress, rather than during the first
 * tokens: the GPU copies its layers' weights to its memory, the CPU lays out the product weights of
 * the rest for its kernels (the first tokens reach only part of a mixture's experts, so lazily each
 * new expert would stall one). */
static brasa_status prepare_weights(brasa_context *c, const brasa_context_params *p, brasa_error *err) {
    size_t n_cpu = 0, n_gpu = 0;
    const bk_tensor **cpu = c->cpu ? cpu_tensor_list(c, &n_cpu) : NULL;
    const bk_tensor **gpu = c->gpu_layers > 0 ? gpu_tensor_list(c, &n_gpu) : NULL;
    brasa_status st = BRASA_OK;
    uint64_t total = 0, done = 0;
    if ((c->cpu && !cpu) || (c->gpu_layers > 0 && !gpu)) {
        st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    } else {
        for (size_t i = 0; cpu && c->cpu->ops->keep && i < n_cpu; i++)
            total += bk_bytes(cpu[i]);
        for (size_t i = 0; gpu && c->gpu_dev->ops->keep && i < n_gpu; i++)
            total += bk_bytes(gpu[i]);
        st = keep_tensors(c->cpu, cpu, n_cpu, total, &done, p, err);
    }
    if (st == BRASA_OK)
        st = keep_tensors(c->gpu_dev, gpu, n_gpu, total, &done, p, err);
    free(cpu);
    free(gpu);
    return st;
}

/* Makes the places: which device runs which layers, their caches and activations. */
static brasa_status make_places(brasa_context *c, const layout_plan *plan, brasa_error *err) {
    const arch_hparams *hp = &c->model->hp;
    const brasa_context_params *p = &plan->params;
    const int32_t L = hp->n_layer;
    c->n_places = 0;
    if (c->gpu_layers < L)
        c->places[c->n_places++].acts = (fwd_place){ .dev = c->cpu, .first_layer = c->layer_first };
    if (c->gpu_layers > 0)
        c->places[c->n_places++].acts = (fwd_place){ .dev = c->gpu_dev, .first_layer = L - c->gpu_layers };
    brasa_status st = BRASA_OK;
    for (int i = 0; i < c->n_places && st == BRASA_OK; i++) {
        ctx_place *pl = &c->places[i];
        bk_device *dev = pl->acts.dev;
        const int32_t end = i + 1 < c->n_places ? c->places[i + 1].acts.first_layer : c->layer_end;
        uint64_t kv_bytes = 0;
        for (int32_t il = pl->acts.first_layer; il < end; il++)
            kv_bytes += layout_layer_kv_bytes(hp, il, p);
        st = dev->ops->buffer_alloc(dev, (size_t)kv_bytes, &pl->kv_buf, err);
        if (st == BRASA_OK)
            st = dev->ops->buffer_alloc(dev, (size_t)plan->act_bytes, &pl->act_buf, err);
    }
    if (st != BRASA_OK)
        return st;

    const int64_t KV = (int64_t)hp->n_head_kv * hp->head_dim, V = arch_dim_size(hp, ARCH_DIM_OUTPUT);
    const uint32_t kv_type = layout_kv_quant(p);
    size_t off[FWD_PLACES_MAX] = { 0 };
    for (int64_t s = 0; s < c->n_seq; s++) {
        ctx_seq *sq = &c->seqs[s];
        sq->k_cache = c->caches + s * 2 * L;
        sq->v_cache = sq->k_cache + L;
        sq->last_logits = c->logit_store + (size_t)s * (size_t)V;
        for (int32_t l = c->layer_first; l < c->layer_end; l++) { /* other processes' layers have none here */
            const int i = c->n_places > 1 && l >= c->places[1].acts.first_layer ? 1 : 0;
            bk_device *dev = c->places[i].acts.dev;
            char *kv = dev->ops->buffer_base(c->places[i].kv_buf);
            const int32_t rows = arch_kv_rows(hp, (int)l, c->n_ctx, c->n_batch);
            sq->k_cache[l] = carve_typed(dev, kv_type, kv, &off[i], KV, rows);
            sq->v_cache[l] = carve_typed(dev, kv_type, kv, &off[i], KV, rows);
        }
    }
    for (int i = 0; i < c->n_places; i++) {
        fwd_place *a = &c->places[i].acts;
        bk_device *dev = a->dev;
        char *act = dev->ops->buffer_base(c->places[i].act_buf);
        size_t at = 0;
        for (int k = 0; k < fwd_act_count; k++)
            *fwd_act_at(&a->a, k) = carve_typed(dev, fwd_act_defs[k].type, act, &at, arch_dim_size(hp, fwd_act_defs[k].width),
                                                fwd_act_rows(hp, k, c->n_batch));
    }
    return BRASA_OK;
}

/* A context for role (CTX_*) running layers first .. end - 1 of m. */
static brasa_status create(const brasa_model *m, const brasa_context_params *params, int role, int32_t first, int32_t end,
                           brasa_context **out, brasa_error *err) {
    *out = NULL;
    if (!m->arch)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "cannot run this model: %s", m->run_error);
    const arch_hparams *hp = &m->hp;
    layout_plan plan;
    brasa_status st = layout_plan_context(hp, params, &plan, err);
    if (st != BRASA_OK)
        return st;
    const brasa_context_params p = plan.params;
    if (p.gpu_layers < 0 && p.gpu_layers != BRASA_GPU_LAYERS_NONE)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "gpu_layers %d is not a count, auto, all or none", p.gpu_layers);
    if (role != CTX_ALONE && !is_cpu(p.device) && p.gpu_layers != BRASA_GPU_LAYERS_NONE)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "the processes of a pipeline run their layers on their CPUs for now: "
                       "use the cpu device");
    /* the GPU kernels have no LayerNorm, exact GELU or attention over a whole input yet: refused
     * here rather than computed wrong */
    if ((hp->encoder || hp->bidirectional) && !is_cpu(p.device) && p.gpu_layers != BRASA_GPU_LAYERS_NONE)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%s is an embedding model, which brasa runs on the CPU only for now: "
                       "use the cpu device", m->desc.architecture);

    brasa_context *c = calloc(1, sizeof *c);
    if (!c)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    c->model = m;
    c->role = role;
    c->layer_first = first;
    c->layer_end = end;
    c->n_ctx = p.n_ctx;
    c->n_batch = p.n_batch;
    c->n_threads = p.n_threads;
    c->n_seq = p.n_seq;
    c->kv_bytes = plan.kv_bytes;
    c->scratch_bytes = plan.act_bytes + plan.logit_bytes + plan.embd_bytes;
    c->rewind_max = INT32_MAX;
    for (int il = 0; il < hp->n_layer && !hp->bidirectional; il++) {
        /* a ring of R rows over a window W can forget at most R - W + 1 positions (see seq_rewind) */
        const int32_t rows = arch_kv_rows(hp, il, p.n_ctx, p.n_batch);
        if (rows < p.n_ctx && rows - hp->sliding_window + 1 < c->rewind_max)
            c->rewind_max = rows - hp->sliding_window + 1;
    }
    const int64_t S = c->n_seq, L = hp->n_layer, V = arch_dim_size(hp, ARCH_DIM_OUTPUT), B = c->n_batch;
    c->seqs = calloc((size_t)S, sizeof *c->seqs);
    c->caches = calloc((size_t)(S * 2 * L), sizeof *c->caches);
    c->pos = malloc((size_t)B * sizeof *c->pos);
    c->fseqs = malloc((size_t)B * sizeof *c->fseqs);
    c->steps = malloc((size_t)B * sizeof *c->steps);
    c->logit_store = malloc(((size_t)S * (size_t)V + 1) * sizeof *c->logit_store); /* + 1: an encoder has none */
    c->token_types = calloc((size_t)B, sizeof *c->token_types);
    if (plan.embd_bytes)
        c->embd_rows = malloc((size_t)plan.embd_bytes);
    if (!c->seqs || !c->caches || !c->pos || !c->fseqs || !c->steps || !c->logit_store || !c->token_types ||
        (plan.embd_bytes && !c->embd_rows))
        st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");

    /* the devices: the GPU first, since how many layers it takes decides whether the CPU runs any */
    char gpu_name[300] = "";
    bool in_place = false;
    if (st == BRASA_OK && !is_cpu(p.device)) {
        st = open_gpu(c, p.device, &c->gpu_info, gpu_name, sizeof gpu_name, err);
        /* an integrated GPU reads the weights where the file is mapped: a model near the size of
         * the machine's memory still loads, since it is not held twice */
        if (st == BRASA_OK && c->gpu_dev && p.gpu_layers != BRASA_GPU_LAYERS_NONE && c->gpu_dev->ops->map_host &&
            gguf_part_count(m->file) == 1) /* a split model's weights are in several mappings: copied */
            in_place = c->gpu_dev->ops->map_host(c->gpu_dev, gguf_image(m->file), (size_t)gguf_file_size(m->file));
        if (st == BRASA_OK)
            c->gpu_layers = offload_layers(hp, &m->weights, &p, plan.act_bytes, c->gpu_info.free_bytes,
                                           c->gpu_info.total_bytes, in_place);
    }
    if (st == BRASA_OK && c->gpu_layers < L)
        st = bk_cpu_create(p.n_threads, &c->cpu, err);
    if (st == BRASA_OK) {
        const char *cpu_name = c->cpu ? bk_cpu_kernels_name(c->cpu) : "";
        if (!c->gpu_dev)
            snprintf(c->backend_name, sizeof c->backend_name, "cpu/%s", cpu_name);
        else if (c->gpu_layers == L)
            snprintf(c->backend_name, sizeof c->backend_name, "%s%s", gpu_name, in_place ? ", weights read in place" : "");
        else if (c->gpu_layers == 0)
            snprintf(c->backend_name, sizeof c->backend_name, "%s, none of the %d layers; cpu/%s runs them", gpu_name, (int)L,
                     cpu_name);
        else
            snprintf(c->backend_name, sizeof c->backend_name, "%s, the last %d of %d layers%s; cpu/%s runs the rest", gpu_name,
                     c->gpu_layers, (int)L, in_place ? " (weights read in place)" : "", cpu_name);
        if (role != CTX_ALONE) {
            const size_t at = strlen(c->backend_name);
            snprintf(c->backend_name + at, sizeof c->backend_name - at, ", layers %d-%d of %d here, in a pipeline of %d processes",
                     (int)first, (int)end - 1, (int)L, dist_size());
        }
    }
    if (st == BRASA_OK)
        st = make_places(c, &plan, err);
    if (st == BRASA_OK)
        st = prepare_weights(c, &p, err);
    if (st == BRASA_OK && c->gpu_layers > 0) {
        const gtune_device td = { c->gpu, c->gpu_dev, c->gpu_info };
        c->tuned = gtune_load(&td, c->tuning_note, sizeof c->tuning_note);
    }
    if (st != BRASA_OK) {
        const bool on_gpu = c->gpu != NULL;
        brasa_context_free(c);
        if (st == BRASA_ERR_NO_MEMORY) {
            char device_said[sizeof err->message] = "out of memory";
            if (on_gpu && err) /* the device's own figures: what it was asked for and what it has free */
                snprintf(device_said, sizeof device_said, "%s", err->message);
            err_set(err, st, "%s: %d sequence(s) of %d tokens need %.1f MB of KV cache and %.1f MB of scratch%s",
                    device_said, p.n_seq, p.n_ctx, (double)plan.kv_bytes / 1e6, (double)plan.act_bytes / 1e6,
                    on_gpu ? " (try fewer --gpu-layers, or a smaller --ctx)" : " (try a smaller --ctx)");
        }
        return st;
    }
    *out = c;
    return BRASA_OK;
}

brasa_status brasa_context_create(const brasa_model *m, const brasa_context_params *params, brasa_context **out,
                                  brasa_error *err) {
    if (!m || !out)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_context_create: model and out are required");
    *out = NULL;
    if (!pipe_active() && params && params->pipeline_split && params->pipeline_split[0])
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--split \"%s\" shares the layers among the processes of "
                       "mpirun -n N, and this process runs alone", params->pipeline_split);
    /* an embedding model runs whole in process 0: its passes are short, and keep no cache */
    if (!pipe_active() || !m->arch || m->hp.encoder || m->hp.bidirectional)
        return create(m, params, CTX_ALONE, 0, m->hp.n_layer, out, err);
    const brasa_context_params none = brasa_context_default_params();
    const brasa_context_params *p = params ? params : &none;
    pipe_plan plan;
    brasa_status st = pipe_plan_layers(m, p->pipeline_split, &plan, err);
    if (st == BRASA_OK)
        st = create(m, p, CTX_LEAD, plan.first[0], plan.end[0], out, err);
    if (st == BRASA_OK)
        st = pipe_contexts_create(p, &plan, err);
    if (st != BRASA_OK && *out) {
        brasa_context_free(*out);
        *out = NULL;
    }
    return st;
}

brasa_status ctx_create_stage(const brasa_model *m, const brasa_context_params *p, int32_t first, int32_t end,
                              brasa_context **out, brasa_error *err) {
    return create(m, p, CTX_STAGE, first, end, out, err);
}

void brasa_context_free(brasa_context *c) {
    if (!c)
        return;
    if (c->role == CTX_LEAD) {
        brasa_error err; /* a step in flight lands first: its rows are on their way to this process */
        (void)land(c, &err);
        pipe_contexts_free();
    }
    for (int i = 0; i < c->n_places; i++) {
        c->places[i].acts.dev->ops->buffer_free(c->places[i].kv_buf);
        c->places[i].acts.dev->ops->buffer_free(c->places[i].act_buf);
    }
    if (c->gpu)
        c->gpu->device_free(c->gpu_dev);
    bk_cpu_free(c->cpu);
    free(c->seqs);
    free(c->caches);
    free(c->pos);
    free(c->fseqs);
    free(c->steps);
    free(c->logit_store);
    free(c->token_types);
    free(c->embd_rows);
    free(c);
}

int32_t brasa_context_size(const brasa_context *c) { return c->n_ctx; }
int32_t brasa_context_seqs(const brasa_context *c) { return c->n_seq; }
int32_t brasa_logits_size(const brasa_context *c) { return (int32_t)arch_dim_size(&c->model->hp, ARCH_DIM_OUTPUT); }

static bool seq_ok(const brasa_context *c, int32_t seq) {
    return c && seq >= 0 && seq < c->n_seq;
}

int32_t brasa_seq_used(const brasa_context *c, int32_t seq) {
    return seq_ok(c, seq) ? c->seqs[seq].n_past : 0;
}

const float *brasa_seq_logits(const brasa_context *c, int32_t seq) {
    return seq_ok(c, seq) && c->seqs[seq].have_logits ? c->seqs[seq].last_logits : NULL;
}

/* Moves a sequence back to n tokens. A sliding-window layer's ring has overwritten the oldest rows
 * of the window that position n needs once more than rewind_max positions came after it (position
 * q lands on the row of q - rows); then the sequence starts over from nothing instead. */
static void seq_rewind(brasa_context *c, ctx_seq *sq, int32_t n) {
    sq->n_past = sq->n_past - n <= c->rewind_max ? n : 0;
    sq->have_logits = false;
}

void brasa_seq_truncate(brasa_context *c, int32_t seq, int32_t n) {
    if (seq_ok(c, seq) && n >= 0 && n < c->seqs[seq].n_past)
        seq_rewind(c, &c->seqs[seq], n);
}

brasa_status brasa_seq_copy(brasa_context *c, int32_t src, int32_t dst, int32_t n, brasa_error *err) {
    if (!seq_ok(c, src) || !seq_ok(c, dst))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_seq_copy: sequence outside 0..%d", c ? c->n_seq - 1 : -1);
    if (n < 0 || n > c->seqs[src].n_past)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_seq_copy: %d tokens, but sequence %d holds %d", n, src,
                       c->seqs[src].n_past);
    if (c->seqs[src].n_past - n > c->rewind_max)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_seq_copy: sequence %d's sliding-window cache no longer "
                       "holds what position %d needs", src, n);
    if (src == dst) {
        brasa_seq_truncate(c, dst, n);
        return BRASA_OK;
    }
    brasa_status st = land(c, err);
    if (st == BRASA_OK)
        st = ctx_stage_copy(c, src, dst, n, err);
    if (st == BRASA_OK && c->role == CTX_LEAD)
        st = pipe_seq_copy(src, dst, n, err);
    if (st != BRASA_OK) {
        c->seqs[dst].n_past = 0;
        c->seqs[dst].have_logits = false;
        return st;
    }
    c->seqs[dst].n_past = n;
    c->seqs[dst].have_logits = false;
    return BRASA_OK;
}

brasa_status ctx_stage_copy(brasa_context *c, int32_t src, int32_t dst, int32_t n, brasa_error *err) {
    if (!seq_ok(c, src) || !seq_ok(c, dst) || n < 0 || n > c->n_ctx)
        return err_set(err, BRASA_ERR_INTERNAL, "a copy of %d positions from sequence %d to %d", n, src, dst);
    for (int32_t l = c->layer_first; n > 0 && src != dst && l < c->layer_end; l++) {
        /* a ring holds position p at row p mod rows: copy every row the prefix uses */
        const int64_t rows = c->seqs[src].k_cache[l].ne1, used = n < rows ? n : rows;
        bk_tensor k = bk_rows(&c->seqs[src].k_cache[l], 0, used), v = bk_rows(&c->seqs[src].v_cache[l], 0, used);
        bk_tensor kd = bk_rows(&c->seqs[dst].k_cache[l], 0, used), vd = bk_rows(&c->seqs[dst].v_cache[l], 0, used);
        brasa_status st = bk_copy(&k, &kd, err);
        if (st == BRASA_OK)
            st = bk_copy(&v, &vd, err);
        if (st != BRASA_OK)
            return st;
    }
    return BRASA_OK;
}

int32_t brasa_context_used(const brasa_context *c) { return brasa_seq_used(c, 0); }
const float *brasa_logits(const brasa_context *c) { return brasa_seq_logits(c, 0); }
void brasa_context_truncate(brasa_context *c, int32_t n) { brasa_seq_truncate(c, 0, n); }

void brasa_context_reset(brasa_context *c) {
    for (int32_t s = 0; s < c->n_seq; s++) {
        c->seqs[s].n_past = 0;
        c->seqs[s].have_logits = false;
    }
}

/* A pass over n tokens in n_segs runs (c->fseqs, c->pos filled), logits wanted from row first: its
 * places' activation views (in places) and f, for this process's layers. */
static void start_pass(brasa_context *c, int64_t n, int n_segs, int64_t first, fwd_place *places, fwd *f, brasa_error *err) {
    const brasa_model *m = c->model;
    for (int i = 0; i < c->n_places; i++) {
        const fwd_place *a = &c->places[i].acts;
        places[i] = (fwd_place){ .dev = a->dev, .first_layer = a->first_layer, .a = fwd_acts_rows(&a->a, &m->hp, n) };
    }
    const ctx_place *head = &c->places[c->n_places - 1]; /* the output head runs on the last place */
    *f = (fwd){
        .stage = { .layer_first = c->layer_first, .layer_end = c->layer_end }, .places = places, .n_places = c->n_places,
        .hp = &m->hp, .w = &m->weights, .n = n, .pos = c->pos, .token_types = c->token_types, .seqs = c->fseqs,
        .n_seqs = n_segs, .logits_first = first, .logits = bk_rows(&head->acts.a.logits, 0, n - first), .err = err,
    };
}

/* A step of a pipeline, and a stage's hand-offs (NULL for process 0). */
typedef struct stage_call {
    const pipe_step *step;
    const ctx_stage_io *io;
} stage_call;

/* Process 0, after its layers: the step on to process 1, and back from the last process the rows
 * whose logits are wanted, for the head here. */
static brasa_status lead_out(fwd *f, void *user, bool *head_here) {
    const stage_call *k = user;
    *head_here = true;
    brasa_status st = pipe_step_send(k->step, f->a.x.data, f->a.x.row_bytes, f->err);
    if (st == BRASA_OK)
        st = pipe_rows_back(k->step, f->a.x.data, f->a.x.row_bytes, f->err);
    return st;
}

/* Process 0, a step begun: on to process 1, its rows back and the head later (end_step). */
static brasa_status lead_send(fwd *f, void *user, bool *head_here) {
    const stage_call *k = user;
    *head_here = false;
    return pipe_step_send(k->step, f->a.x.data, f->a.x.row_bytes, f->err);
}

static brasa_status stage_in(fwd *f, void *user) {
    const stage_call *k = user;
    return k->io->in(k->step, f->a.x.data, f->a.x.row_bytes, k->io->user, f->err);
}

static brasa_status stage_out(fwd *f, void *user, bool *head_here) {
    const stage_call *k = user;
    *head_here = false;
    return k->io->out(k->step, f->a.x.data, f->a.x.row_bytes, k->io->user, f->err);
}

brasa_status ctx_stage_step(brasa_context *c, const pipe_step *s, const ctx_stage_io *io, brasa_error *err) {
    if (!c || c->role != CTX_STAGE || s->n < 1 || s->n > c->n_batch || s->n_segs < 1 || s->n_segs > s->n || s->first < 0 ||
        s->first > s->n)
        return err_set(err, BRASA_ERR_INTERNAL, "a step of %lld tokens in %d runs for a stage of batch %d", (long long)s->n,
                       s->n_segs, c ? c->n_batch : 0);
    int64_t n = 0;
    for (int i = 0; i < s->n_segs; i++) {
        const pipe_seg *g = &s->segs[i];
        if (!seq_ok(c, g->seq) || g->len < 1 || g->len > s->n - n || g->pos0 < 0 || g->pos0 > c->n_ctx - g->len)
            return err_set(err, BRASA_ERR_INTERNAL, "a step's run of %d tokens at %d for sequence %d", g->len, g->pos0, g->seq);
        const ctx_seq *sq = &c->seqs[g->seq];
        c->fseqs[i] = (fwd_seq){ n, g->len, sq->k_cache, sq->v_cache };
        for (int32_t t = 0; t < g->len; t++)
            c->pos[n + t] = g->pos0 + t;
        n += g->len;
    }
    if (n != s->n)
        return err_set(err, BRASA_ERR_INTERNAL, "a step of %lld tokens whose runs hold %lld", (long long)s->n, (long long)n);
    fwd_place places[FWD_PLACES_MAX];
    fwd f;
    start_pass(c, n, s->n_segs, s->first, places, &f, err);
    stage_call call = { s, io };
    f.stage.in = stage_in;
    f.stage.out = stage_out;
    f.stage.user = &call;
    return c->model->arch->forward(&f);
}

/* Runs the forward pass over a batch (at most n_batch tokens) made of n_segs runs of tokens, run i
 * of len[i] tokens for sequence seq[i] at its next positions (a model without causal attention:
 * a whole input at positions 0.., no sequence). Logits: of every token into all_logits (one run
 * only) when given; of each run's last token into its sequence when want_last; none when hidden is
 * given, which receives the final hidden states instead. On success the sequences advance; on
 * failure none does. */
static brasa_status end_step(brasa_context *c, brasa_error *err);

/* Ends every decode step in flight, so that a pass can start that waits for its own rows. */
static brasa_status land(brasa_context *c, brasa_error *err) {
    brasa_status st = BRASA_OK;
    while (c->n_flight > 0 && st == BRASA_OK)
        st = end_step(c, err);
    return st;
}

static brasa_status eval_batch(brasa_context *c, int n_segs, const int32_t *seq, const int64_t *len,
                               const brasa_token *tokens, float *all_logits, bool want_last, bk_tensor *hidden,
                               bool defer, brasa_error *err) {
    if (!defer) {
        brasa_status landed = land(c, err);
        if (landed != BRASA_OK)
            return landed;
    }
    const brasa_model *m = c->model;
    const bool causal = !m->hp.bidirectional;
    int64_t n = 0;
    for (int i = 0; i < n_segs; i++) {
        ctx_seq *sq = causal ? &c->seqs[seq[i]] : NULL;
        c->fseqs[i] = (fwd_seq){ n, len[i], sq ? sq->k_cache : NULL, sq ? sq->v_cache : NULL };
        for (int64_t t = 0; t < len[i]; t++)
            c->pos[n + t] = (sq ? sq->n_past : 0) + (int32_t)t;
        n += len[i];
    }
    /* one run: the logits of its last token (or all); several: of every token, each a run's last */
    const int64_t first = hidden ? n : all_logits || n_segs > 1 ? 0 : want_last ? n - 1 : n;
    fwd_place places[FWD_PLACES_MAX];
    fwd f;
    start_pass(c, n, n_segs, first, places, &f, err);
    f.tokens = tokens;
    f.embeddings = hidden != NULL;
    /* process 0 of a pipeline: the step as the others see it */
    for (int i = 0; i < n_segs && c->role == CTX_LEAD; i++)
        c->steps[i] = (pipe_seg){ seq[i], (int32_t)len[i], c->pos[c->fseqs[i].row0] };
    const pipe_step step = { n, hidden ? 0 : first, n_segs, c->steps }; /* hidden states: every row comes back */
    stage_call call = { &step, NULL };
    if (c->role == CTX_LEAD) {
        f.stage.out = defer ? lead_send : lead_out;
        f.stage.user = &call;
    }
    const ctx_place *head = &c->places[c->n_places - 1]; /* the output head runs on the last place */
    brasa_status st = m->arch->forward(&f);
    if (st != BRASA_OK)
        return st;
    if (defer && c->role == CTX_LEAD) { /* in flight: the logits come with brasa_seq_decode_step_end */
        for (int i = 0; i < n_segs; i++) {
            c->seqs[seq[i]].n_past += (int32_t)len[i];
            c->seqs[seq[i]].have_logits = false;
        }
        return BRASA_OK;
    }
    if (hidden) {
        *hidden = f.hidden;
        for (int i = 0; i < n_segs && causal; i++)
            c->seqs[seq[i]].n_past += (int32_t)len[i];
        return BRASA_OK;
    }
    if (all_logits)
        st = head->acts.dev->ops->download(&f.logits, all_logits, 0, n, err);
    for (int i = 0; i < n_segs && st == BRASA_OK; i++) {
        ctx_seq *sq = &c->seqs[seq[i]];
        sq->n_past += (int32_t)len[i];
        sq->have_logits = false;
        if (want_last) {
            st = head->acts.dev->ops->download(&f.logits, sq->last_logits, c->fseqs[i].row0 + len[i] - 1 - first, 1, err);
            sq->have_logits = st == BRASA_OK;
        }
    }
    return st;
}

/* Next-token logits need an output head and causal attention: an encoder (bert), or a model whose
 * tokens see the whole input, makes embeddings only. */
static brasa_status need_logits(const brasa_context *c, brasa_error *err) {
    const arch_hparams *hp = &c->model->hp;
    if (hp->encoder || hp->bidirectional)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%s is an embedding model: it makes embeddings (brasa_embed, brasa "
                       "embed), not next-token logits", c->model->desc.architecture);
    return BRASA_OK;
}

static brasa_status check_tokens(const brasa_context *c, const brasa_token *tokens, size_t n, brasa_error *err) {
    const int64_t rows64 = c->model->weights.tok_embd.ne1;
    const int32_t rows = rows64 > INT32_MAX ? INT32_MAX : (int32_t)rows64;
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= rows)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "token %d is outside the model's %d embeddings", tokens[i], rows);
    return BRASA_OK;
}

brasa_status brasa_seq_decode(brasa_context *c, int32_t seq, const brasa_token *tokens, size_t n, float *all_logits,
                              brasa_error *err) {
    if (!c || (!tokens && n))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_decode: invalid arguments");
    if (!seq_ok(c, seq))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "sequence %d is outside 0..%d", seq, c->n_seq - 1);
    if (n == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "nothing to evaluate: no tokens");
    brasa_status st = need_logits(c, err);
    if (st != BRASA_OK)
        return st;
    ctx_seq *sq = &c->seqs[seq];
    if (n > (size_t)(c->n_ctx - sq->n_past))
        return err_set(err, BRASA_CONTEXT_FULL, "the context is full: %zu more tokens do not fit in %d (%d used); "
                       "use a larger --ctx or a shorter prompt", n, c->n_ctx, sq->n_past);
    st = check_tokens(c, tokens, n, err);
    if (st != BRASA_OK)
        return st;
    const int32_t start = sq->n_past;
    const int32_t V = c->model->hp.n_vocab;
    /* a pipeline takes a prompt in short steps, several in flight (pipeline.h) */
    const size_t most = c->role == CTX_LEAD && c->n_batch > PIPE_MICRO_TOKENS ? PIPE_MICRO_TOKENS : (size_t)c->n_batch;
    for (size_t done = 0; done < n;) {
        const int64_t chunk = (int64_t)(n - done < most ? n - done : most);
        const bool last = done + (size_t)chunk == n;
        st = eval_batch(c, 1, &seq, &chunk, tokens + done, all_logits ? all_logits + done * (size_t)V : NULL, last, NULL, false,
                        err);
        if (st != BRASA_OK) {
            seq_rewind(c, sq, start); /* a failed decode leaves the cache as it was, where a ring allows */
            return st;
        }
        done += (size_t)chunk;
    }
    return BRASA_OK;
}

brasa_status brasa_decode(brasa_context *c, const brasa_token *tokens, size_t n, float *all_logits, brasa_error *err) {
    return brasa_seq_decode(c, 0, tokens, n, all_logits, err);
}

/* The checks of a decode step: n distinct sequences with room, valid tokens. */
static brasa_status check_step(brasa_context *c, const int32_t *seqs, const brasa_token *tokens, size_t n, brasa_error *err) {
    if (!c || !seqs || !tokens || n == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_seq_decode_step: invalid arguments");
    brasa_status st = need_logits(c, err);
    if (st != BRASA_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        if (!seq_ok(c, seqs[i]))
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "sequence %d is outside 0..%d", seqs[i], c->n_seq - 1);
        for (size_t j = 0; j < i; j++)
            if (seqs[j] == seqs[i])
                return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "sequence %d appears twice in one step", seqs[i]);
        if (c->seqs[seqs[i]].n_past >= c->n_ctx)
            return err_set(err, BRASA_CONTEXT_FULL, "the context of sequence %d is full (%d tokens)", seqs[i], c->n_ctx);
    }
    for (int f = 0; f < c->n_flight; f++)
        for (int i = 0; i < c->flight[f].n; i++)
            for (size_t j = 0; j < n; j++)
                if (c->flight[f].seqs[i] == seqs[j])
                    return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "sequence %d has a step in flight", seqs[j]);
    return check_tokens(c, tokens, n, err);
}

brasa_status brasa_seq_decode_step(brasa_context *c, const int32_t *seqs, const brasa_token *tokens, size_t n,
                                   brasa_error *err) {
    brasa_status st = c ? land(c, err) : BRASA_OK;
    if (st == BRASA_OK)
        st = check_step(c, seqs, tokens, n, err);
    if (st != BRASA_OK)
        return st;
    /* batches small enough that every token's result is the one it gets alone */
    int64_t ones[BK_BATCH_EXACT_MAX];
    for (int i = 0; i < BK_BATCH_EXACT_MAX; i++)
        ones[i] = 1;
    const size_t per = (size_t)c->n_batch < BK_BATCH_EXACT_MAX ? (size_t)c->n_batch : BK_BATCH_EXACT_MAX;
    for (size_t done = 0; done < n; done += per) {
        const int k = (int)(n - done < per ? n - done : per);
        st = eval_batch(c, k, seqs + done, ones, tokens + done, NULL, true, NULL, false, err);
        if (st != BRASA_OK)
            return st; /* the sequences of earlier batches keep their token; this batch's have none */
    }
    return BRASA_OK;
}

brasa_status brasa_seq_decode_step_begin(brasa_context *c, const int32_t *seqs, const brasa_token *tokens, size_t n,
                                         brasa_error *err) {
    brasa_status st = check_step(c, seqs, tokens, n, err);
    if (st != BRASA_OK)
        return st;
    if (c->n_flight == 2 || n > BK_BATCH_EXACT_MAX || n > (size_t)c->n_batch)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_seq_decode_step_begin: %zu sequences with %d steps in flight "
                       "(at most %d sequences, and two steps)", n, c->n_flight,
                       c->n_batch < BK_BATCH_EXACT_MAX ? c->n_batch : BK_BATCH_EXACT_MAX);
    int64_t ones[BK_BATCH_EXACT_MAX];
    for (int i = 0; i < BK_BATCH_EXACT_MAX; i++)
        ones[i] = 1;
    const bool pipelined = c->role == CTX_LEAD;
    st = eval_batch(c, (int)n, seqs, ones, tokens, NULL, true, NULL, pipelined, err);
    if (st != BRASA_OK)
        return st;
    c->flight[c->n_flight].n = (int)n;
    c->flight[c->n_flight].done = !pipelined;
    memcpy(c->flight[c->n_flight].seqs, seqs, n * sizeof *seqs);
    c->n_flight++;
    return BRASA_OK;
}

/* The oldest step in flight: its rows back from the last process, the head here, the logits to its
 * sequences. */
static brasa_status end_step(brasa_context *c, brasa_error *err) {
    const int n = c->flight[0].n;
    int32_t seqs[BK_BATCH_EXACT_MAX];
    memcpy(seqs, c->flight[0].seqs, (size_t)n * sizeof *seqs);
    const bool done = c->flight[0].done;
    c->n_flight--;
    memmove(&c->flight[0], &c->flight[1], sizeof c->flight[0]);
    if (done)
        return BRASA_OK;
    fwd_place places[FWD_PLACES_MAX];
    fwd f;
    start_pass(c, n, n, 0, places, &f, err);
    f.place = c->n_places - 1;
    f.dev = places[f.place].dev;
    f.a = places[f.place].a;
    const pipe_step step = { n, 0, n, NULL };
    brasa_status st = pipe_rows_back(&step, f.a.x.data, f.a.x.row_bytes, err);
    if (st == BRASA_OK)
        st = fwd_output(&f);
    const ctx_place *head = &c->places[c->n_places - 1];
    for (int i = 0; i < n && st == BRASA_OK; i++) {
        ctx_seq *sq = &c->seqs[seqs[i]];
        st = head->acts.dev->ops->download(&f.logits, sq->last_logits, i, 1, err);
        sq->have_logits = st == BRASA_OK;
    }
    return st;
}

brasa_status brasa_seq_decode_step_end(brasa_context *c, brasa_error *err) {
    if (!c || c->n_flight == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_seq_decode_step_end: no step in flight");
    return end_step(c, err);
}

brasa_status ctx_check_tokens(const brasa_context *c, const brasa_token *tokens, size_t n, brasa_error *err) {
    return check_tokens(c, tokens, n, err);
}

int32_t ctx_batch_size(const brasa_context *c) {
    return c->n_batch;
}

float *ctx_embd_rows(brasa_context *c) {
    return c->embd_rows;
}

brasa_status ctx_eval_hidden(brasa_context *c, int n_segs, const int32_t *seq, const int64_t *len, const brasa_token *tokens,
                             bk_tensor *hidden, brasa_error *err) {
    int64_t n = 0;
    for (int i = 0; i < n_segs; i++)
        n += len[i];
    if (n_segs < 1 || n_segs > c->n_batch || n < 1 || n > c->n_batch)
        return err_set(err, BRASA_ERR_INTERNAL, "a pass of %lld tokens in %d runs for a batch of %d", (long long)n, n_segs,
                       c->n_batch);
    for (int i = 0; i < n_segs && !c->model->hp.bidirectional; i++)
        if (!seq_ok(c, seq[i]) || len[i] > c->n_ctx - c->seqs[seq[i]].n_past)
            return err_set(err, BRASA_ERR_INTERNAL, "a pass of %lld tokens past sequence %d's cache", (long long)len[i], seq[i]);
    return eval_batch(c, n_segs, seq, len, tokens, NULL, false, hidden, false, err);
}

void brasa_context_memory_use(const brasa_context *c, brasa_context_memory *out) {
    out->kv_bytes = c->kv_bytes;
    out->scratch_bytes = c->scratch_bytes;
}

const char *brasa_context_backend(const brasa_context *c) {
    return c->backend_name;
}

const brasa_model *brasa_context_model(const brasa_context *c) {
    return c->model;
}

int32_t brasa_context_threads(const brasa_context *c) {
    return c->n_threads;
}

int32_t brasa_context_gpu_layers(const brasa_context *c) {
    return c->gpu_layers;
}

brasa_tune_params brasa_tune_default_params(void) {
    brasa_tune_params p;
    memset(&p, 0, sizeof p);
    return p;
}


brasa_status brasa_context_tune(brasa_context *c, const brasa_tune_params *params, brasa_tune_report *report,
                                brasa_error *err) {
    if (!c || !report)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_context_tune: context and report are required");
    if (!c->gpu_dev || c->gpu_layers == 0)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "tuning is for a GPU device, and this context runs on %s", c->backend_name);
    size_t n = 0, k = 0;
    const bk_tensor **list = gpu_tensor_list(c, &n);
    if (!list)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (is_product_weight(&c->model->weights, list[i]))
            list[k++] = list[i];
    const brasa_tune_params p = params ? *params : brasa_tune_default_params();
    const gtune_device td = { c->gpu, c->gpu_dev, c->gpu_info };
    brasa_status st = gtune_measure(&td, list, k, &p, report, err);
    free(list);
    return st;
}

int32_t brasa_context_tuning(const brasa_context *c, const char **note) {
    if (note)
        *note = c->tuning_note;
    return c->tuned;
}
