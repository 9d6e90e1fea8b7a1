/* model.c: opening a model file and describing it: hyper-parameters from the {arch}.* keys,
 * metadata rendered as text, tensor listings. Nothing here depends on the architecture beyond the
 * key names the GGUF convention gives every architecture. */
#include "model/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "quant/quant.h"

brasa_model_params brasa_model_default_params(void) {
    brasa_model_params p;
    memset(&p, 0, sizeof p);
    return p;
}

/* Copies a metadata string into m->strings (offsets are fixed up after all copies). */
static size_t keep_string(buf *b, const gguf_file *f, const char *key) {
    gguf_str s = { "", 0 };
    gguf_get_str(f, key, &s);
    size_t at = b->len;
    if (!buf_append(b, s.data, (size_t)s.len) || !buf_append(b, "", 1))
        return SIZE_MAX;
    return at;
}

static brasa_status describe(brasa_model *m, brasa_error *err) {
    const gguf_file *f = m->file;
    brasa_model_desc *d = &m->desc;
    const gguf_kv *arch_kv = gguf_find(f, "general.architecture");
    if (arch_kv && arch_kv->type != GGUF_TYPE_STRING)
        return err_set(err, BRASA_ERR_FORMAT, "general.architecture must be a string");
    buf b = { 0 };
    size_t arch_at = keep_string(&b, f, "general.architecture");
    size_t name_at = keep_string(&b, f, "general.name");
    size_t tmodel_at = keep_string(&b, f, "tokenizer.ggml.model");
    size_t tpre_at = keep_string(&b, f, "tokenizer.ggml.pre");
    char scaling_key[300];
    snprintf(scaling_key, sizeof scaling_key, "%s.rope.scaling.type", b.data ? b.data + arch_at : "");
    size_t scaling_at = keep_string(&b, f, scaling_key);
    size_t template_at = keep_string(&b, f, "tokenizer.chat_template");
    size_t tool_use_at = keep_string(&b, f, "tokenizer.chat_template.tool_use");
    if (tool_use_at == SIZE_MAX ||
        arch_at == SIZE_MAX || name_at == SIZE_MAX || tmodel_at == SIZE_MAX || tpre_at == SIZE_MAX ||
        scaling_at == SIZE_MAX || template_at == SIZE_MAX) {
        buf_free(&b);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    m->strings = b.data;
    const char *arch = m->strings + arch_at;
    d->architecture = arch[0] ? arch : "unknown";
    d->name = m->strings + name_at;
    d->tokenizer_model = m->strings + tmodel_at;
    d->tokenizer_pre = m->strings + tpre_at;
    d->rope_scaling = m->strings[scaling_at] ? m->strings + scaling_at : "none";
    d->chat_template = gguf_find(f, "tokenizer.chat_template") ? m->strings + template_at : NULL;
    d->chat_template_tool_use =
        gguf_find(f, "tokenizer.chat_template.tool_use") ? m->strings + tool_use_at : NULL;

    d->gguf_version = gguf_version(f);
    d->file_bytes = gguf_file_size(f);
    for (size_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        d->n_params += t->n_elements; /* each tensor lies inside the file, so this cannot overflow */
        d->tensor_bytes += t->bytes;
    }
    /* the shape from the hyper-parameters, read once; as far as they could be read when brasa
     * cannot run the model (bind_architecture says why) */
    const arch_hparams *hp = &m->hp;
    d->n_layer = hp->n_layer;
    d->n_embd = hp->n_embd;
    d->n_ff = hp->n_ff;
    d->n_head = hp->n_head;
    d->n_head_kv = hp->n_head_kv;
    d->head_dim = hp->head_dim;
    d->n_ctx_train = hp->n_ctx_train;
    d->rope_dim = hp->rope_dim;
    d->rope_freq_base = hp->rope_base;
    d->rope_scaling_factor = hp->rope_scaling_factor;
    d->sliding_window = hp->sliding_window;
    d->n_expert = hp->n_expert;
    d->n_expert_used = hp->n_expert_used;
    d->n_ff_exp = hp->n_ff_exp;
    d->n_params_active = d->n_params;
    d->n_vocab = m->vocab.n_tokens;
    d->vocab_type = m->vocab.type;
    d->pooling = (brasa_pooling)hp->pooling;
    d->causal_attention = !hp->bidirectional;
    d->is_embedding = hp->encoder || (hp->pooling != BRASA_POOLING_NONE && hp->pooling != BRASA_POOLING_RANK);
    d->can_generate = !hp->encoder && !hp->bidirectional;
    d->embedding_dim = d->is_embedding ? hp->n_embd : 0;
    d->tokenizer_error = m->tokenizer_error[0] ? m->tokenizer_error : NULL;
    return BRASA_OK;
}

/* With a progress callback, reads one byte of every page of the tensor data so that the file is in
 * memory before the first token (the mapping would otherwise fault it in during inference), and
 * reports how far it got. Separate input embeddings are left out: a token reads one row of them,
 * so most of their pages are never needed (and brasa fit counts them out of memory). */
static void warm_pages(const brasa_model *m, const brasa_model_params *params) {
    const gguf_file *f = m->file;
    const void *skip = m->arch && m->weights.output.data != m->weights.tok_embd.data ? m->weights.tok_embd.data : NULL;
    uint64_t total = 0, done = 0, reported = 0;
    for (size_t i = 0; i < gguf_tensor_count(f); i++)
        if (gguf_tensor_at(f, i)->data != skip)
            total += gguf_tensor_at(f, i)->bytes;
    unsigned sum = 0;
    const uint64_t chunk = 32u << 20;
    for (size_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->data == skip)
            continue;
        const volatile unsigned char *p = t->data;
        for (uint64_t at = 0; at < t->bytes; at += 4096)
            sum += p[at];
        done += t->bytes;
        if (done - reported >= chunk) {
            reported = done;
            params->progress((float)((double)done / (double)total), params->progress_user_data);
        }
    }
    (void)sum;
    params->progress(1.0f, params->progress_user_data);
}

/* Elements one token computes with: every tensor's, but of routed experts only the used share. */
static int64_t active_params(const brasa_model *m) {
    int64_t sum = m->desc.n_params;
    for (int il = 0; il < m->hp.n_layer; il++)
        for (int i = 0; i < arch_layer_tensor_count; i++) {
            const bk_tensor *t = arch_layer_tensor(&m->weights.layers[il], i);
            if (t->data && t->ne2 > 1)
                sum -= t->ne0 * t->ne1 * (t->ne2 - m->hp.n_expert_used);
        }
    return sum;
}

/* Multiply-adds one token spends in the layers' weight products: every matrix of the layer tensor
 * table (a tensor of one row is a norm or a bias, added, not multiplied), of routed experts only
 * the used ones. The embedding lookup multiplies nothing and the output head runs for a prompt's
 * last token only, so this is prefill's arithmetic per token (attention over the cache aside). */
static int64_t layer_macs_per_token(const brasa_model *m) {
    int64_t sum = 0;
    for (int il = 0; il < m->hp.n_layer; il++)
        for (int i = 0; i < arch_layer_tensor_count; i++) {
            const bk_tensor *t = arch_layer_tensor(&m->weights.layers[il], i);
            if (t->data && arch_layer_tensors[i].ne[1] != ARCH_DIM_ONE)
                sum += t->ne0 * t->ne1 * (t->ne2 > 1 ? m->hp.n_expert_used : 1);
        }
    return sum;
}

/* Binds the architecture's weights. A model brasa cannot run can still be described, so failures
 * here are kept as run_error rather than failing the open. */
static void bind_architecture(brasa_model *m, const arch_def *arch, brasa_status hparams_status, const char *hparams_error) {
    brasa_error e;
    err_clear(&e);
    if (!arch) {
        snprintf(m->run_error, sizeof m->run_error, "architecture '%s' is not supported (brasa runs %s)",
                 m->desc.architecture, arch_names());
    } else if (hparams_status != BRASA_OK) {
        snprintf(m->run_error, sizeof m->run_error, "%s", hparams_error);
    } else if (arch_bind_weights(m->file, arch, &m->hp, &m->weights, &e) != BRASA_OK) {
        snprintf(m->run_error, sizeof m->run_error, "%s", e.message);
        arch_weights_free(&m->weights);
    } else if (m->vocab.type == BRASA_VOCAB_NONE) {
        snprintf(m->run_error, sizeof m->run_error, "%s", m->tokenizer_error);
    } else {
        m->arch = arch;
        m->desc.weight_bytes_per_token = arch_active_bytes(&m->hp, &m->weights);
        m->desc.n_params_active = active_params(m);
        m->desc.macs_per_token = layer_macs_per_token(m);
    }
    m->desc.run_error = m->run_error[0] ? m->run_error : NULL;
}

brasa_status model_open_gguf(gguf_file *file, const brasa_model_params *params, brasa_model **out,
                             brasa_error *err) {
    *out = NULL;
    brasa_model *m = calloc(1, sizeof *m);
    if (!m) {
        gguf_close(file);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    m->file = file;
    brasa_error tok_err;
    err_clear(&tok_err);
    brasa_status st = tok_vocab_load(&m->vocab, m->file, &tok_err);
    if (st == BRASA_ERR_UNSUPPORTED) {
        /* the model can still be described; tokenizing says why it cannot */
        memcpy(m->tokenizer_error, tok_err.message, sizeof m->tokenizer_error);
        st = BRASA_OK;
    } else if (st != BRASA_OK) {
        err_set(err, st, "%s", tok_err.message);
    }
    /* the hyper-parameters, once: describing the model and binding its weights both use them */
    const arch_def *arch = NULL;
    brasa_status hp_status = BRASA_OK;
    brasa_error hp_err;
    err_clear(&hp_err);
    if (st == BRASA_OK) {
        gguf_str name = { "", 0 };
        char arch_name[64] = "";
        if (gguf_get_str(file, "general.architecture", &name) && name.len < sizeof arch_name) {
            memcpy(arch_name, name.data, name.len);
            arch_name[name.len] = '\0';
        }
        arch = arch_find(arch_name);
        hp_status = arch_read_hparams(file, arch, &m->hp, &hp_err);
        st = describe(m, err);
    }
    if (st == BRASA_OK)
        bind_architecture(m, arch, hp_status, hp_err.message);
    if (st != BRASA_OK) {
        brasa_model_free(m);
        return st;
    }
    if (params && params->progress)
        warm_pages(m, params);
    *out = m;
    return BRASA_OK;
}

brasa_status brasa_model_open(const char *path, const brasa_model_params *params, brasa_model **out,
                              brasa_error *err) {
    if (!path || !out)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_model_open: path and out are required");
    *out = NULL;
    gguf_file *file = NULL;
    brasa_status st = gguf_open(path, &file, err);
    if (st != BRASA_OK)
        return st;
    return model_open_gguf(file, params, out, err);
}

void brasa_model_free(brasa_model *m) {
    if (!m)
        return;
    tok_vocab_free(&m->vocab);
    arch_weights_free(&m->weights);
    gguf_close(m->file);
    free(m->strings);
    free(m);
}

void brasa_model_describe(const brasa_model *m, brasa_model_desc *desc) {
    *desc = m->desc;
}

size_t brasa_model_meta_count(const brasa_model *m) {
    return gguf_kv_count(m->file);
}

const char *brasa_model_meta_key(const brasa_model *m, size_t index) {
    const gguf_kv *kv = gguf_kv_at(m->file, index);
    return kv ? kv->key : NULL;
}

const char *brasa_model_meta_type(const brasa_model *m, size_t index) {
    static const char *array_names[GGUF_TYPE_COUNT] = {
        "array[u8]", "array[i8]", "array[u16]", "array[i16]", "array[u32]", "array[i32]", "array[f32]",
        "array[bool]", "array[string]", "array[array]", "array[u64]", "array[i64]", "array[f64]",
    };
    const gguf_kv *kv = gguf_kv_at(m->file, index);
    if (!kv)
        return NULL;
    if (kv->type == GGUF_TYPE_ARRAY)
        return array_names[kv->elem_type];
    return gguf_type_name(kv->type);
}

/* Appends one scalar element as text. Strings are written raw (the CLI escapes them for display). */
static void render_scalar(buf *b, gguf_type t, const gguf_kv *kv, uint64_t index, gguf_iter *it) {
    char tmp[64];
    int n = 0;
    if (t == GGUF_TYPE_STRING) {
        gguf_str s;
        if (gguf_iter_next_str(it, &s))
            buf_append(b, s.data, (size_t)s.len);
        return;
    }
    if (t == GGUF_TYPE_BOOL)
        n = snprintf(tmp, sizeof tmp, "%s", gguf_kv_int_at(kv, index) ? "true" : "false");
    else if (t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64)
        n = snprintf(tmp, sizeof tmp, "%.9g", gguf_kv_float_at(kv, index));
    else if (t == GGUF_TYPE_UINT64)
        n = snprintf(tmp, sizeof tmp, "%" PRIu64, (uint64_t)gguf_kv_int_at(kv, index));
    else if (t != GGUF_TYPE_ARRAY)
        n = snprintf(tmp, sizeof tmp, "%" PRId64, gguf_kv_int_at(kv, index));
    else
        n = snprintf(tmp, sizeof tmp, "[...]");
    buf_append(b, tmp, (size_t)n);
}

size_t brasa_model_meta_value(const brasa_model *m, size_t index, char *out, size_t size) {
    const gguf_kv *kv = gguf_kv_at(m->file, index);
    buf b = { 0 };
    if (kv) {
        gguf_iter it;
        gguf_iter_init(&it, kv);
        if (kv->type != GGUF_TYPE_ARRAY) {
            render_scalar(&b, kv->type, kv, 0, &it);
        } else {
            /* arrays: the first few elements and the length, enough for a person */
            const uint64_t shown = kv->count < 8 ? kv->count : 8;
            buf_append(&b, "[", 1);
            for (uint64_t i = 0; i < shown && b.len < 400; i++) {
                if (i)
                    buf_append(&b, ", ", 2);
                render_scalar(&b, kv->elem_type, kv, i, &it);
            }
            char tail[64];
            int n = snprintf(tail, sizeof tail, "%s] (%" PRIu64 " items)", kv->count > shown ? ", ..." : "", kv->count);
            buf_append(&b, tail, (size_t)n);
        }
    }
    size_t len = b.len;
    if (size > 0) {
        size_t k = len < size - 1 ? len : size - 1;
        if (k)
            memcpy(out, b.data, k);
        out[k] = '\0';
    }
    buf_free(&b);
    return len;
}

size_t brasa_model_tensor_count(const brasa_model *m) {
    return gguf_tensor_count(m->file);
}

brasa_status brasa_model_tensor(const brasa_model *m, size_t index, brasa_tensor_desc *desc) {
    const gguf_tensor *t = gguf_tensor_at(m->file, index);
    if (!t)
        return BRASA_ERR_INVALID_ARGUMENT;
    desc->name = t->name;
    desc->type = t->type;
    desc->type_name = quant_name(t->type);
    desc->n_dims = t->n_dims;
    memcpy(desc->ne, t->ne, sizeof desc->ne);
    desc->offset = t->file_offset;
    desc->bytes = t->bytes;
    return BRASA_OK;
}
