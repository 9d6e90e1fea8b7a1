/* fit.c: memory and speed predictions (see fit.h). The KV cache and activation sizes come from
 * the engine's own context plan, so for the CPU backend a prediction is what brasa allocates. */
#include "tools/fit.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "engine/layout.h"
#include "engine/pipeline.h"
#include "gguf/gguf.h"
#include "platform/platform.h"
#include "quant/quant.h"
#include "tools/catalog.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The part of a decode's time the memory system delivers weights at full speed. CPU: brasa bench
 * decode on a 2-core AVX2 machine reached 61-86% of the measured read bandwidth (the README's
 * table); GPUs and unified memory: what llama.cpp's kernels reach on RDNA2/3 and Ada, an
 * assumption until brasa's GPU backend is measured. */
#define DECODE_EFF_CPU 0.70
#define DECODE_EFF_GPU 0.75
/* Prefill reaches a smaller share of peak compute. CPU, where the device has no measured share of
 * its own (devices.c measures this machine's kernels): brasa bench pp512 of Qwen2.5-Coder-1.5B
 * Q4_K_M on a 2-core AVX2 machine ran 60 tokens/s: 0.19 T operations a second, 0.24 of the
 * nominal 8-bit rate of 0.77 TOPS.
 * GPUs: about a third of FP16 peak, llama.cpp's share on consumer cards. */
#define PREFILL_EFF_CPU 0.24
#define PREFILL_EFF_GPU 0.35
/* The process itself, beyond weights, caches and buffers: code, C library, thread stacks, and the
 * tokenizer's tables, which take about this many bytes per byte of vocabulary in the header. */
#define RUNTIME_BASE_BYTES (12u << 20)
#define TOKENIZER_BYTES_PER_HEADER_BYTE 3

const char *fit_kv_name(fit_kv_type kv) {
    return kv == FIT_KV_F32 ? "f32" : kv == FIT_KV_F16 ? "f16" : "q8_0";
}

bool fit_parse_count(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v <= 0)
        return false;
    double scale = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': scale = 1e3; end++; break;
    case 'm': scale = 1e6; end++; break;
    case 'b': case 'g': scale = 1e9; end++; break;
    case 't': scale = 1e12; end++; break;
    default: break;
    }
    if (*end != '\0')
        return false;
    *out = v * scale;
    return true;
}

/* Layer index of "blk.N.…", or -1. */
static int layer_of(const char *name) {
    if (strncmp(name, "blk.", 4) != 0 || !isdigit((unsigned char)name[4]))
        return -1;
    long n = strtol(name + 4, NULL, 10);
    return n >= 0 && n < ARCH_MAX_LAYERS ? (int)n : -1;
}

static bool read_shape(const gguf_file *f, const char *arch, fit_model *m, brasa_error *err) {
    const arch_def *def = arch_find(arch);
    if (arch_read_hparams(f, def, &m->hp, err) != BRASA_OK)
        return false;
    /* an architecture brasa does not run: any window is treated as global (every layer keeps the
     * whole context) unless the file gives the pattern */
    if (!def && m->hp.swa_pattern < 1)
        m->hp.swa_pattern = 1;
    return true;
}

brasa_status fit_model_from_file(const char *path, fit_model *m, brasa_error *err) {
    memset(m, 0, sizeof *m);
    gguf_file *f = NULL;
    brasa_status st = gguf_open(path, &f, err);
    if (st != BRASA_OK) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        return err_set(err, st, "%s: %s", path, msg);
    }
    gguf_str s = { "", 0 };
    if (!gguf_get_str(f, "general.architecture", &s) || s.len == 0 || s.len >= sizeof m->arch) {
        gguf_close(f);
        return err_set(err, BRASA_ERR_FORMAT, "%s: general.architecture is missing", path);
    }
    memcpy(m->arch, s.data, s.len);
    m->arch[s.len] = '\0';
    for (char *c = m->arch; *c; c++)
        if (!isprint((unsigned char)*c))
            *c = '?';
    gguf_str name = { "", 0 };
    gguf_get_str(f, "general.name", &name);
    snprintf(m->name, sizeof m->name, "%.*s", (int)(name.len < 120 ? name.len : 120), name.data);
    m->from_file = true;
    if (!read_shape(f, m->arch, m, err)) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        gguf_close(f);
        return err_set(err, BRASA_ERR_FORMAT, "%s: cannot read the model's shape: %s", path, msg);
    }
    const double expert_share = m->hp.n_expert > 0 ? (double)m->hp.n_expert_used / m->hp.n_expert : 1.0;

    uint64_t data_start = gguf_file_size(f);
    bool tied = true;
    int64_t embd_rows = 1, embd_elems = 0;
    double flop_params = 0;
    for (size_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        data_start = t->file_offset < data_start ? t->file_offset : data_start;
        m->weight_bytes += t->bytes;
        m->n_params += (double)t->n_elements;
        const bool expert = strstr(t->name, "_exps") != NULL;
        const double share = expert ? expert_share : 1.0;
        const int il = layer_of(t->name);
        if (il >= 0 && il < m->hp.n_layer) {
            m->layer_bytes[il] += t->bytes;
            m->layer_active[il] += (uint64_t)((double)t->bytes * share);
            if (t->n_dims >= 2)
                flop_params += (double)t->n_elements * share;
        } else if (strcmp(t->name, "token_embd.weight") == 0) {
            m->embd_bytes = t->bytes;
            embd_rows = t->ne[1] > 0 ? t->ne[1] : 1;
            embd_elems = t->n_elements;
        } else {
            if (strcmp(t->name, "output.weight") == 0) {
                tied = false;
                flop_params += (double)t->n_elements;
            }
            m->head_bytes += t->bytes;
        }
    }
    if (m->hp.n_vocab <= 0)
        m->hp.n_vocab = (int32_t)(embd_rows < INT32_MAX ? embd_rows : INT32_MAX);
    if (tied)
        flop_params += (double)embd_elems;
    m->embd_separate = !tied;
    m->n_params_active = flop_params;
    m->meta_bytes = data_start;
    for (int il = 0; il < m->hp.n_layer; il++)
        m->bytes_per_token += m->layer_active[il];
    /* the head reads the tied embeddings whole; otherwise a token reads one embedding row */
    m->bytes_per_token += m->head_bytes + (tied ? m->embd_bytes : m->embd_bytes / (uint64_t)embd_rows);
    gguf_close(f);
    if (m->weight_bytes == 0)
        return err_set(err, BRASA_ERR_FORMAT, "%s: the file holds no tensors", path);
    return BRASA_OK;
}

brasa_status fit_model_from_desc(double params, double bits, double active_params, fit_model *m, brasa_error *err) {
    memset(m, 0, sizeof *m);
    if (!(params >= 1e6 && params <= 1e14))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--params must be between 1M and 100T, not %g", params);
    if (!(bits >= 1.0 && bits <= 32.0))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--bits must be between 1 and 32, not %g", bits);
    if (active_params < 0 || active_params > params)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--active must be between 0 and --params");
    const catalog_model *c = catalog_nearest(params);
    if (active_params == 0)
        active_params = c->active_params < c->params ? params * c->active_params / c->params : params;
    snprintf(m->name, sizeof m->name, "%.4g B parameters at %.3g bits", params / 1e9, bits);
    snprintf(m->arch, sizeof m->arch, "described");
    snprintf(m->shape_note, sizeof m->shape_note,
             "shape of %s assumed: %d layers, %d KV heads of %d, %s", c->name, c->n_layer, c->n_head_kv, c->head_dim,
             c->sliding_window ? "sliding-window layers" : "no sliding window");
    arch_hparams *hp = &m->hp;
    hp->n_layer = c->n_layer;
    hp->n_embd = c->n_embd;
    hp->n_head = c->n_head;
    hp->n_head_kv = c->n_head_kv;
    hp->head_dim = c->head_dim;
    hp->n_ff = c->n_ff;
    hp->n_vocab = c->n_vocab;
    hp->sliding_window = c->sliding_window;
    hp->swa_pattern = c->swa_pattern;
    hp->n_ctx_train = c->n_ctx_train;
    m->n_params = params;
    m->n_params_active = active_params;
    m->weight_bytes = (uint64_t)(params * bits / 8);
    const double embd = (double)c->n_vocab * c->n_embd * bits / 8;
    m->embd_bytes = (uint64_t)fmin(embd, (double)m->weight_bytes / 4);
    m->head_bytes = m->embd_bytes; /* an output head as large as the embeddings */
    m->embd_separate = true;
    const uint64_t layers = m->weight_bytes - m->embd_bytes - m->head_bytes;
    const double active_share = active_params / params;
    for (int il = 0; il < hp->n_layer; il++) {
        m->layer_bytes[il] = layers / (uint64_t)hp->n_layer;
        m->layer_active[il] = (uint64_t)((double)m->layer_bytes[il] * active_share);
        m->bytes_per_token += m->layer_active[il];
    }
    m->bytes_per_token += m->head_bytes;
    m->meta_bytes = (uint64_t)c->n_vocab * 24; /* a vocabulary's strings, scores and types */
    return BRASA_OK;
}

static double kv_value_bytes(fit_kv_type kv) {
    return kv == FIT_KV_F32 ? 4.0 : kv == FIT_KV_F16 ? 2.0 : 34.0 / 32.0;
}

/* Bytes of one layer's keys and values for one sequence. */
static uint64_t kv_layer_bytes(const fit_model *m, int il, int32_t n_ctx, int32_t n_batch, fit_kv_type kv) {
    const int64_t width = (int64_t)m->hp.n_head_kv * m->hp.head_dim;
    const int32_t rows = arch_kv_rows(&m->hp, il, n_ctx, n_batch);
    if (kv == FIT_KV_F32 || kv == FIT_KV_F16) /* exactly as the context carves them */
        return 2 * layout_bytes(width, rows, kv == FIT_KV_F32 ? 4 : 2);
    return (uint64_t)(2.0 * (double)width * rows * kv_value_bytes(kv));
}

uint64_t fit_kv_bytes(const fit_model *m, int32_t n_ctx, int32_t n_parallel, int32_t n_batch, fit_kv_type kv) {
    uint64_t sum = 0;
    for (int il = 0; il < m->hp.n_layer; il++)
        sum += kv_layer_bytes(m, il, n_ctx, n_batch, kv);
    return sum * (uint64_t)(n_parallel > 0 ? n_parallel : 1);
}

typedef struct sizes {
    uint64_t kv, compute, overhead;
    int32_t n_batch;
} sizes;

/* KV, compute buffers and overhead at a context size, from the engine's plan. */
static bool size_at(const fit_model *m, const fit_request *r, int32_t n_ctx, const devtab_device *d, sizes *out,
                    brasa_error *err) {
    brasa_context_params p = brasa_context_default_params();
    p.n_ctx = n_ctx;
    p.n_seq = r->n_parallel;
    p.n_threads = r->n_threads;
    layout_plan plan;
    if (layout_plan_context(&m->hp, &p, &plan, err) != BRASA_OK)
        return false;
    out->n_batch = plan.params.n_batch;
    out->kv = fit_kv_bytes(m, plan.params.n_ctx, plan.params.n_seq, plan.params.n_batch, r->kv_type);
    /* the backend's scratch: per thread a chunk of dequantized rows and attention tiles, and the
     * batch's 8-bit activations */
    const int64_t widest = m->hp.n_ff > m->hp.n_embd ? m->hp.n_ff : m->hp.n_embd;
    const uint64_t scratch = (uint64_t)plan.params.n_threads * (uint64_t)widest * 16 * sizeof(float) +
                             (uint64_t)plan.params.n_batch * (uint64_t)widest * 2;
    out->compute = plan.act_bytes + plan.logit_bytes + scratch;
    /* a discrete GPU's driver share is already outside its usable memory; elsewhere the process
     * lives in the same memory as the model */
    out->overhead = d->kind == DEVTAB_GPU ? 0
                                          : RUNTIME_BASE_BYTES + TOKENIZER_BYTES_PER_HEADER_BYTE * m->meta_bytes;
    return true;
}

/* req with its defaults resolved into r, and the sizes at its context. */
static bool resolve(const fit_model *m, const fit_request *req, const devtab_device *d, fit_request *r, sizes *sz,
                    brasa_error *err) {
    *r = *req;
    if (r->n_parallel <= 0)
        r->n_parallel = 1;
    if (r->n_threads <= 0) /* once here, not in each of the plans a bisection makes */
        r->n_threads = plat_physical_cores();
    if (r->n_ctx < 0 || r->n_ctx > (1 << 22)) {
        err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--ctx must be between 1 and %d", 1 << 22);
        return false;
    }
    if (!size_at(m, r, r->n_ctx, d, sz, err))
        return false;
    if (r->n_ctx == 0)
        r->n_ctx = m->hp.n_ctx_train > 0 && m->hp.n_ctx_train < LAYOUT_DEFAULT_MAX_CTX ? m->hp.n_ctx_train : LAYOUT_DEFAULT_MAX_CTX;
    return true;
}

brasa_status fit_plan(const fit_model *m, const fit_request *req, const devtab_device *d, fit_result *out,
                      brasa_error *err) {
    memset(out, 0, sizeof *out);
    fit_request r;
    sizes sz;
    if (!resolve(m, req, d, &r, &sz, err))
        return err->status;
    out->req = r;
    out->weights = m->weight_bytes - (m->embd_separate ? m->embd_bytes : 0);
    out->kv = sz.kv;
    out->compute = sz.compute;
    out->overhead = sz.overhead;
    out->total = out->weights + out->kv + out->compute + out->overhead;
    out->usable = devtab_usable_bytes(d);
    out->fits = (double)out->total <= out->usable;

    /* the longest context that fits whole: the total grows with the context, so bisect */
    const int32_t cap = m->hp.n_ctx_train > 0 ? m->hp.n_ctx_train : 1 << 17;
    int32_t lo = 0, hi = cap;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo + 1) / 2;
        sizes s;
        brasa_error ignored;
        if (size_at(m, &r, mid, d, &s, &ignored) &&
            (double)(out->weights + s.kv + s.compute + s.overhead) <= out->usable)
            lo = mid;
        else
            hi = mid - 1;
    }
    out->max_ctx = lo;

    /* layers on the device, the last first (as the engine splits: offload.h), while they and their
     * caches fit beside the buffers and head */
    const int32_t L = m->hp.n_layer;
    if (out->fits || d->kind != DEVTAB_GPU) {
        out->gpu_layers = out->fits ? L : 0;
        out->device_bytes = out->fits ? out->weights : 0;
    } else {
        double budget = out->usable - (double)sz.compute - (double)sz.overhead - (double)m->head_bytes;
        int32_t n = 0;
        uint64_t used = 0;
        while (n < L) {
            const int32_t il = L - 1 - n;
            const uint64_t cost = m->layer_bytes[il] + kv_layer_bytes(m, il, r.n_ctx, sz.n_batch, r.kv_type) * (uint64_t)r.n_parallel;
            if ((double)(used + cost) > budget)
                break;
            used += cost;
            n++;
        }
        out->gpu_layers = n;
        for (int32_t il = L - n; il < L; il++)
            out->device_bytes += m->layer_bytes[il];
        if (n > 0)
            out->device_bytes += m->head_bytes;
    }
    out->host_bytes = m->weight_bytes - out->device_bytes;
    if (!out->fits) {
        out->host_total = out->host_bytes + sz.overhead;
        for (int32_t il = 0; il < L - out->gpu_layers; il++)
            out->host_total += kv_layer_bytes(m, il, r.n_ctx, sz.n_batch, r.kv_type) * (uint64_t)r.n_parallel;
    }

    /* speed: each byte a token reads, at the bandwidth of the memory it lives in */
    const bool cpu = d->kind == DEVTAB_CPU;
    out->decode_eff = cpu ? DECODE_EFF_CPU : DECODE_EFF_GPU;
    out->prefill_eff = d->prefill_eff > 0 ? d->prefill_eff : cpu ? PREFILL_EFF_CPU : PREFILL_EFF_GPU;
    const double dev_bw = d->bandwidth_gbs * 1e9 * out->decode_eff;
    const double host_bw = (d->kind == DEVTAB_GPU ? FIT_HOST_BANDWIDTH_GBS : d->bandwidth_gbs) * 1e9 * DECODE_EFF_CPU;
    double dev_read = 0, host_read = 0;
    for (int32_t il = 0; il < L; il++)
        *(il >= L - out->gpu_layers ? &dev_read : &host_read) += (double)m->layer_active[il];
    /* the head (and an embedding row) goes with the layers when any are on the device */
    const double head_read = (double)m->bytes_per_token - dev_read - host_read;
    *(out->gpu_layers > 0 || d->kind != DEVTAB_GPU ? &dev_read : &host_read) += head_read > 0 ? head_read : 0;
    if (d->kind != DEVTAB_GPU) {
        dev_read += host_read;
        host_read = 0;
    }
    const double kv_full_per_seq = (double)fit_kv_bytes(m, r.n_ctx, 1, sz.n_batch, r.kv_type);
    const double kv_dev_share = L > 0 ? (double)out->gpu_layers / L : 0;
    const double t_empty = dev_read / dev_bw + host_read / host_bw;
    const double t_full = t_empty + (d->kind == DEVTAB_GPU ? kv_full_per_seq * kv_dev_share / dev_bw +
                                                                 kv_full_per_seq * (1 - kv_dev_share) / host_bw
                                                           : kv_full_per_seq / dev_bw);
    out->decode_tps = t_empty > 0 ? 1.0 / t_empty : 0;
    out->decode_tps_full = t_full > 0 ? 1.0 / t_full : 0;
    /* prefill: two operations per active parameter and token, split like the layers */
    const double flops = 2.0 * m->n_params_active;
    const double dev_ops = d->tflops * 1e12 * out->prefill_eff, host_ops = FIT_HOST_TOPS * 1e12 * PREFILL_EFF_CPU;
    const double dev_share = d->kind == DEVTAB_GPU ? (L > 0 ? (double)out->gpu_layers / L : 0) : 1.0;
    const double t_prefill = flops * dev_share / (dev_ops > 0 ? dev_ops : 1) + flops * (1 - dev_share) / host_ops;
    out->prefill_tps = t_prefill > 0 ? 1.0 / t_prefill : 0;
    return BRASA_OK;
}

bool fit_parse_hosts(const char *s, fit_host *hosts, int *n, char *why, size_t why_size) {
    *n = 0;
    for (const char *p = s; *p;) {
        const char *colon = strchr(p, ':'), *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        if (!colon || colon > end || colon == p || (size_t)(colon - p) >= sizeof hosts[0].name) {
            snprintf(why, why_size, "each host is NAME:MEMORY, e.g. boxa:128G (at most %zu characters of name)",
                     sizeof hosts[0].name - 1);
            return false;
        }
        if (*n == FIT_HOSTS_MAX) {
            snprintf(why, why_size, "at most %d hosts", FIT_HOSTS_MAX);
            return false;
        }
        char num[32];
        const size_t len = (size_t)(end - colon - 1);
        if (len == 0 || len >= sizeof num) {
            snprintf(why, why_size, "'%.*s': the memory is a number of GiB such as 128G", (int)(end - p), p);
            return false;
        }
        memcpy(num, colon + 1, len);
        num[len] = '\0';
        char *unit;
        double v = strtod(num, &unit);
        const double scale = strcmp(unit, "G") == 0 || strcmp(unit, "GB") == 0 || strcmp(unit, "GiB") == 0 ? 1.0
                             : strcmp(unit, "T") == 0 || strcmp(unit, "TB") == 0 || strcmp(unit, "TiB") == 0 ? 1024.0
                                                                                                               : 0.0;
        if (unit == num || scale == 0.0 || !(v > 0.0) || v * scale > 1e6) {
            snprintf(why, why_size, "'%.*s': the memory is a number of GiB such as 128G (or T for TiB)", (int)(end - p), p);
            return false;
        }
        fit_host *h = &hosts[(*n)++];
        memcpy(h->name, p, (size_t)(colon - p));
        h->name[colon - p] = '\0';
        h->memory_gib = v * scale;
        h->available_gib = 0;
        p = comma ? comma + 1 : end;
    }
    if (*n == 0) {
        snprintf(why, why_size, "no hosts: NAME:MEMORY,NAME:MEMORY");
        return false;
    }
    return true;
}

/* One try of the hosts' plan: the split with head counted (or not) in the first host's share. */
static void hosts_try(const fit_model *m, const fit_request *r, const sizes *sz, const devtab_device *d, const fit_host *hosts,
                      int n, uint64_t head, fit_hosts_result *out) {
    double share[FIT_HOSTS_MAX] = { 0 };
    for (int i = 0; i < n; i++)
        share[i] = hosts[i].available_gib > 0 ? hosts[i].available_gib : hosts[i].memory_gib;
    pipe_plan plan = { .n = n };
    pipe_share_layers(m->layer_bytes, m->hp.n_layer, head, share, &plan);
    out->fits = true;
    for (int i = 0; i < n; i++) {
        devtab_device dh = *d;
        dh.memory_gib = hosts[i].memory_gib;
        dh.available_gib = hosts[i].available_gib;
        out->host[i].first = plan.first[i];
        out->host[i].end = plan.end[i];
        out->host[i].weights = i == 0 ? m->head_bytes + m->embd_bytes : 0;
        out->host[i].kv = 0;
        for (int32_t il = plan.first[i]; il < plan.end[i]; il++) {
            out->host[i].weights += m->layer_bytes[il];
            out->host[i].kv += kv_layer_bytes(m, il, r->n_ctx, sz->n_batch, r->kv_type) * (uint64_t)r->n_parallel;
        }
        out->host[i].total = out->host[i].weights + out->host[i].kv + sz->compute + sz->overhead;
        out->host[i].usable = devtab_usable_bytes(&dh);
        out->host[i].fits = (double)out->host[i].total <= out->host[i].usable;
        out->fits = out->fits && out->host[i].fits;
    }
}

brasa_status fit_plan_hosts(const fit_model *m, const fit_request *req, const devtab_device *d, const fit_host *hosts, int n,
                            fit_hosts_result *out, brasa_error *err) {
    memset(out, 0, sizeof *out);
    if (n < 1 || n > FIT_HOSTS_MAX || n > m->hp.n_layer)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%d hosts for %d layers: each host needs a layer at least", n,
                       m->hp.n_layer);
    fit_request r;
    sizes sz;
    if (!resolve(m, req, d, &r, &sz, err))
        return err->status;
    out->req = r;
    out->n = n;
    /* as the engine: equal memory, equal layers; the head counted when the first host lacks room */
    hosts_try(m, &r, &sz, d, hosts, n, 0, out);
    if (!out->host[0].fits)
        hosts_try(m, &r, &sz, d, hosts, n, m->head_bytes + m->embd_bytes, out);
    /* speed: a token reads each host's layers (the first host's head too) at that host's bandwidth,
     * one host after another; a prompt's steps keep every host busy, so the slowest sets the pace */
    const double bw = d->bandwidth_gbs * 1e9 * (d->kind == DEVTAB_CPU ? DECODE_EFF_CPU : DECODE_EFF_GPU);
    const double eff = d->prefill_eff > 0 ? d->prefill_eff : d->kind == DEVTAB_CPU ? PREFILL_EFF_CPU : PREFILL_EFF_GPU;
    const double ops = d->tflops * 1e12 * eff;
    double active = 0, t_decode = 0, t_slowest = 0;
    for (int32_t il = 0; il < m->hp.n_layer; il++)
        active += (double)m->layer_active[il];
    const double head_read = (double)m->bytes_per_token - active;
    for (int i = 0; i < n; i++) {
        double read = i == 0 && head_read > 0 ? head_read : 0;
        for (int32_t il = out->host[i].first; il < out->host[i].end; il++)
            read += (double)m->layer_active[il];
        t_decode += read / bw;
        const double t_prefill = active > 0 ? 2.0 * m->n_params_active * (read / (double)m->bytes_per_token) / ops : 0;
        t_slowest = t_prefill > t_slowest ? t_prefill : t_slowest;
    }
    out->decode_tps = t_decode > 0 ? 1.0 / t_decode : 0;
    out->prefill_tps = t_slowest > 0 ? 1.0 / t_slowest : 0;
    return BRASA_OK;
}
