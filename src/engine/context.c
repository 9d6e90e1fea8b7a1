/* context.c: inference contexts: the KV cache and the activation buffers, sized once for n_ctx and
 * n_batch, and brasa_decode, which runs the architecture's forward pass over batches of tokens.
 * Nothing is allocated per token: every tensor is a view into buffers made at creation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/error.h"
#include "model/model.h"
#include "models/decoder.h"
#include "platform/platform.h"
#include "quant/quant.h"

#define DEFAULT_MAX_CTX 4096
#define DEFAULT_BATCH 64

struct brasa_context {
    const brasa_model *model;
    bk_device *dev;
    int32_t n_ctx, n_batch, n_past, n_threads;
    bk_buffer *kv_buf, *act_buf;
    bk_tensor *k_cache, *v_cache; /* (n_layer) */
    bk_tensor x, h, o, q, k, v, att, gate, up, logits; /* each with n_batch rows */
    int32_t *pos;                 /* (n_batch) */
    float *last_logits;           /* (n_vocab) */
    char backend_name[32];
    bool have_logits;
};

brasa_context_params brasa_context_default_params(void) {
    brasa_context_params p;
    memset(&p, 0, sizeof p);
    return p;
}

/* Carves an f32 tensor of `rows` rows of ne0 out of a buffer at *offset (64-byte aligned). */
static bk_tensor carve(bk_device *dev, char *base, size_t *offset, int64_t ne0, int64_t rows) {
    bk_tensor t = bk_view(dev, QUANT_F32, ne0, rows, base + *offset);
    *offset += ((size_t)ne0 * (size_t)rows * sizeof(float) + 63) & ~(size_t)63;
    return t;
}

static size_t f32_bytes(int64_t ne0, int64_t rows) {
    return ((size_t)ne0 * (size_t)rows * sizeof(float) + 63) & ~(size_t)63;
}

brasa_status brasa_context_create(const brasa_model *m, const brasa_context_params *params, brasa_context **out,
                                  brasa_error *err) {
    if (!m || !out)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_context_create: model and out are required");
    *out = NULL;
    if (!m->arch)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "cannot run this model: %s", m->run_error);
    brasa_context_params p = params ? *params : brasa_context_default_params();
    const arch_hparams *hp = &m->hp;
    if (p.n_ctx < 0 || p.n_batch < 0 || p.n_threads < 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "context size, batch and threads must not be negative");
    if (p.n_ctx == 0) {
        p.n_ctx = m->desc.n_ctx_train > 0 && m->desc.n_ctx_train < DEFAULT_MAX_CTX ? m->desc.n_ctx_train : DEFAULT_MAX_CTX;
    }
    if (p.n_ctx > (1 << 22))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "context of %d tokens is beyond brasa's limit of %d", p.n_ctx, 1 << 22);
    if (p.n_batch == 0)
        p.n_batch = DEFAULT_BATCH;
    if (p.n_batch > p.n_ctx)
        p.n_batch = p.n_ctx;
    if (p.n_batch > 4096)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "batch of %d tokens is beyond the limit of 4096", p.n_batch);
    if (p.n_threads == 0)
        p.n_threads = plat_physical_cores(); /* hyper-threads share the vector units: no gain */
    if (p.n_threads > 1024)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%d threads is beyond the limit of 1024", p.n_threads);

    brasa_context *c = calloc(1, sizeof *c);
    if (!c)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    c->model = m;
    c->n_ctx = p.n_ctx;
    c->n_batch = p.n_batch;
    c->n_threads = p.n_threads;
    brasa_status st = bk_cpu_create(p.n_threads, &c->dev, err);
    if (st != BRASA_OK) {
        free(c);
        return st;
    }
    snprintf(c->backend_name, sizeof c->backend_name, "cpu/%s", bk_cpu_kernels_name(c->dev));
    const int64_t E = hp->n_embd, Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
    const int64_t B = c->n_batch, V = hp->n_vocab, L = hp->n_layer;
    const size_t kv_bytes = 2 * (size_t)L * f32_bytes(KV, c->n_ctx);
    const size_t act_bytes = 3 * f32_bytes(E, B) + 2 * f32_bytes(Q, B) + 2 * f32_bytes(KV, B) + 2 * f32_bytes(hp->n_ff, B) +
                             f32_bytes(V, B);
    c->k_cache = calloc((size_t)L, sizeof *c->k_cache);
    c->v_cache = calloc((size_t)L, sizeof *c->v_cache);
    c->pos = malloc((size_t)B * sizeof *c->pos);
    c->last_logits = malloc((size_t)V * sizeof *c->last_logits);
    if (!c->k_cache || !c->v_cache || !c->pos || !c->last_logits)
        st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    if (st == BRASA_OK)
        st = c->dev->ops->buffer_alloc(c->dev, kv_bytes, &c->kv_buf, err);
    if (st == BRASA_OK)
        st = c->dev->ops->buffer_alloc(c->dev, act_bytes, &c->act_buf, err);
    if (st != BRASA_OK) {
        brasa_context_free(c);
        if (st == BRASA_ERR_NO_MEMORY)
            err_set(err, st, "out of memory: a %d-token context needs %.1f MB of KV cache and %.1f MB of scratch "
                    "(try a smaller --ctx)", p.n_ctx, (double)kv_bytes / 1e6, (double)act_bytes / 1e6);
        return st;
    }
    char *kv = c->dev->ops->buffer_base(c->kv_buf);
    size_t off = 0;
    for (int64_t l = 0; l < L; l++) {
        c->k_cache[l] = carve(c->dev, kv, &off, KV, c->n_ctx);
        c->v_cache[l] = carve(c->dev, kv, &off, KV, c->n_ctx);
    }
    char *act = c->dev->ops->buffer_base(c->act_buf);
    off = 0;
    c->x = carve(c->dev, act, &off, E, B);
    c->h = carve(c->dev, act, &off, E, B);
    c->o = carve(c->dev, act, &off, E, B);
    c->q = carve(c->dev, act, &off, Q, B);
    c->att = carve(c->dev, act, &off, Q, B);
    c->k = carve(c->dev, act, &off, KV, B);
    c->v = carve(c->dev, act, &off, KV, B);
    c->gate = carve(c->dev, act, &off, hp->n_ff, B);
    c->up = carve(c->dev, act, &off, hp->n_ff, B);
    c->logits = carve(c->dev, act, &off, V, B);
    *out = c;
    return BRASA_OK;
}

void brasa_context_free(brasa_context *c) {
    if (!c)
        return;
    if (c->dev) {
        c->dev->ops->buffer_free(c->kv_buf);
        c->dev->ops->buffer_free(c->act_buf);
    }
    bk_cpu_free(c->dev);
    free(c->k_cache);
    free(c->v_cache);
    free(c->pos);
    free(c->last_logits);
    free(c);
}

int32_t brasa_context_size(const brasa_context *c) { return c->n_ctx; }
int32_t brasa_context_used(const brasa_context *c) { return c->n_past; }
int32_t brasa_logits_size(const brasa_context *c) { return c->model->hp.n_vocab; }
const float *brasa_logits(const brasa_context *c) { return c->have_logits ? c->last_logits : NULL; }

void brasa_context_reset(brasa_context *c) {
    c->n_past = 0;
    c->have_logits = false;
}

void brasa_context_truncate(brasa_context *c, int32_t n) {
    if (n >= 0 && n < c->n_past) {
        c->n_past = n;
        c->have_logits = false;
    }
}

/* Runs the forward pass over tokens[0..n) (n <= n_batch) at positions n_past.. */
static brasa_status eval_batch(brasa_context *c, const brasa_token *tokens, int64_t n, bool want_all, float *all_logits,
                               bool want_last, brasa_error *err) {
    const brasa_model *m = c->model;
    for (int64_t i = 0; i < n; i++)
        c->pos[i] = c->n_past + (int32_t)i;
    const int64_t first = want_all ? 0 : want_last ? n - 1 : n;
    fwd f = {
        .dev = c->dev, .hp = &m->hp, .w = &m->weights, .n = n, .tokens = tokens, .pos = c->pos,
        .x = bk_rows(&c->x, 0, n), .h = bk_rows(&c->h, 0, n), .o = bk_rows(&c->o, 0, n),
        .q = bk_rows(&c->q, 0, n), .k = bk_rows(&c->k, 0, n), .v = bk_rows(&c->v, 0, n),
        .att = bk_rows(&c->att, 0, n), .gate = bk_rows(&c->gate, 0, n), .up = bk_rows(&c->up, 0, n),
        .k_cache = c->k_cache, .v_cache = c->v_cache, .logits_first = first,
        .logits = bk_rows(&c->logits, 0, n - first), .err = err,
    };
    brasa_status st = m->arch->forward(&f);
    if (st != BRASA_OK)
        return st;
    c->n_past += (int32_t)n;
    if (want_all)
        st = c->dev->ops->download(&f.logits, all_logits, 0, n, err);
    if (st == BRASA_OK && (want_all || want_last)) {
        st = c->dev->ops->download(&f.logits, c->last_logits, f.logits.ne1 - 1, 1, err);
        c->have_logits = st == BRASA_OK;
    }
    return st;
}

brasa_status brasa_decode(brasa_context *c, const brasa_token *tokens, size_t n, float *all_logits, brasa_error *err) {
    if (!c || (!tokens && n))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_decode: invalid arguments");
    if (n == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "nothing to evaluate: no tokens");
    if (n > (size_t)(c->n_ctx - c->n_past))
        return err_set(err, BRASA_CONTEXT_FULL, "the context is full: %zu more tokens do not fit in %d (%d used); "
                       "use a larger --ctx or a shorter prompt", n, c->n_ctx, c->n_past);
    const int32_t rows = c->model->weights.tok_embd.ne1 > INT32_MAX ? INT32_MAX : (int32_t)c->model->weights.tok_embd.ne1;
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= rows)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "token %d is outside the model's %d embeddings", tokens[i], rows);
    const int32_t start = c->n_past;
    const int32_t V = c->model->hp.n_vocab;
    for (size_t done = 0; done < n;) {
        size_t chunk = n - done < (size_t)c->n_batch ? n - done : (size_t)c->n_batch;
        bool last = done + chunk == n;
        brasa_status st = eval_batch(c, tokens + done, (int64_t)chunk, all_logits != NULL,
                                     all_logits ? all_logits + done * (size_t)V : NULL, last, err);
        if (st != BRASA_OK) {
            c->n_past = start; /* a failed decode leaves the cache as it was */
            c->have_logits = false;
            return st;
        }
        done += chunk;
    }
    return BRASA_OK;
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
