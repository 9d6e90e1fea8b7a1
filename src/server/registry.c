/* registry.c: the server's models, loaded on demand within a memory budget (see registry.h). One
 * mutex guards every model's state; loading runs outside it (a model in REG_LOADING is waited
 * for), unloading inside it (only idle models are unloaded, so no request holds what goes). */
#include "server/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "engine/toolcall.h"
#include "tools/fit.h"

struct registry {
    reg_config cfg;
    reg_model *models;
    size_t n;
    plat_mutex *mu;
    plat_cond *changed;  /* a load ended, a reference was dropped, a model unloaded */
    bool stopping;
};

/* The quantization a file declares (general.file_type, llama.cpp's numbering), as people name it. */
static void quant_of(const brasa_model *m, char *out, size_t size) {
    static const char *const names[] = {
        [0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [7] = "Q8_0", [8] = "Q5_0", [9] = "Q5_1",
        [10] = "Q2_K", [11] = "Q3_K_S", [12] = "Q3_K_M", [13] = "Q3_K_L", [14] = "Q4_K_S", [15] = "Q4_K_M",
        [16] = "Q5_K_S", [17] = "Q5_K_M", [18] = "Q6_K", [19] = "IQ2_XXS", [20] = "IQ2_XS", [21] = "Q2_K_S",
        [22] = "IQ3_XS", [23] = "IQ3_XXS", [24] = "IQ1_S", [25] = "IQ4_NL", [26] = "IQ3_S", [27] = "IQ3_M",
        [28] = "IQ2_S", [29] = "IQ2_M", [30] = "IQ4_XS", [31] = "IQ1_M", [32] = "BF16", [36] = "TQ1_0",
        [37] = "TQ2_0", [38] = "MXFP4_MOE",
    };
    snprintf(out, size, "unknown");
    for (size_t i = 0; i < brasa_model_meta_count(m); i++) {
        if (strcmp(brasa_model_meta_key(m, i), "general.file_type") != 0)
            continue;
        char v[32];
        brasa_model_meta_value(m, i, v, sizeof v);
        const long t = strtol(v, NULL, 10);
        if (t >= 0 && (size_t)t < sizeof names / sizeof names[0] && names[t])
            snprintf(out, size, "%s", names[t]);
    }
}

/* The template a chat with this model is rendered with (as brasa_chat_render picks it). */
static const char *template_of(const brasa_model_desc *d, const char *override, bool tools) {
    if (override)
        return override;
    return tools && d->chat_template_tool_use ? d->chat_template_tool_use : d->chat_template;
}

/* Reads what listings show and what loading will need, without keeping the model. */
static brasa_status read_header(const reg_config *cfg, reg_model *m, brasa_error *err) {
    brasa_model_params mp = brasa_model_default_params();
    brasa_model *model = NULL;
    brasa_status st = brasa_model_open(m->path, &mp, &model, err);
    if (st != BRASA_OK)
        return st;
    brasa_model_describe(model, &m->header);
    snprintf(m->arch, sizeof m->arch, "%s", m->header.architecture);
    m->header.architecture = m->arch;
    m->header.name = "";
    m->header.tokenizer_model = m->header.tokenizer_pre = "";
    m->header.tokenizer_error = m->header.run_error = m->header.rope_scaling = NULL;
    m->header.chat_template_tool_use = NULL;
    quant_of(model, m->quant, sizeof m->quant);
    if (m->header.can_generate) {
        brasa_chat_params cp = brasa_chat_default_params();
        cp.template_text = cfg->chat_template;
        m->thinking = brasa_chat_reasoning_start(model, &cp) != BRASA_REASONING_NONE;
        brasa_model_desc d;
        brasa_model_describe(model, &d);
        m->tools = toolcall_detect(template_of(&d, cfg->chat_template, true)) != TOOLCALL_NONE;
        m->chat_template = buf_str_copy(template_of(&d, cfg->chat_template, false));
    }
    m->header.chat_template = m->chat_template;
    brasa_model_free(model);
    /* fit's plan of it on this machine with the server's slots: weights, KV cache, compute, overhead */
    fit_model fm;
    st = fit_model_from_file(m->path, &fm, err);
    if (st != BRASA_OK)
        return st;
    const int32_t kv = cfg->sched.kv_type;
    const fit_request req = { cfg->sched.n_ctx, cfg->sched.n_slots,
                              kv == BRASA_KV_F32 ? FIT_KV_F32 : FIT_KV_F16, cfg->sched.n_threads };
    devtab_device cpu = { .kind = DEVTAB_CPU, .memory_gib = 1e6, .bandwidth_gbs = 50, .tflops = 1 };
    snprintf(cpu.name, sizeof cpu.name, "cpu");
    fit_result fr;
    st = fit_plan(&fm, &req, &cpu, &fr, err);
    m->need_bytes = st == BRASA_OK ? fr.total : m->file.size;
    return BRASA_OK;
}

static void unload_locked(registry *r, reg_model *m, const char *why) {
    fprintf(stderr, "brasa serve: unloading %s (%s)\n", m->name, why);
    sched_free(m->sched);
    brasa_context_free(m->embed_ctx);
    plat_mutex_free(m->embed_mu);
    brasa_model_free(m->model);
    m->sched = NULL;
    m->embed_ctx = NULL;
    m->embed_mu = NULL;
    m->model = NULL;
    m->state = REG_UNLOADED;
    plat_cond_broadcast(r->changed);
}

brasa_status reg_create(const reg_config *cfg, const char *const *paths, size_t n_paths, registry **out,
                        brasa_error *err) {
    *out = NULL;
    if (n_paths == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "no model to serve");
    registry *r = calloc(1, sizeof *r);
    if (!r)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    r->cfg = *cfg;
    r->models = calloc(n_paths, sizeof *r->models);
    r->mu = plat_mutex_create();
    r->changed = plat_cond_create();
    if (!r->models || !r->mu || !r->changed) {
        reg_free(r);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < n_paths; i++) {
        reg_model *m = &r->models[r->n++];
        snprintf(m->path, sizeof m->path, "%s", paths[i]);
        const char *base = strrchr(paths[i], '/'), *base2 = strrchr(paths[i], '\\');
        base = base2 > base ? base2 : base;
        snprintf(m->name, sizeof m->name, "%s", base ? base + 1 : paths[i]);
        const size_t len = strlen(m->name);
        if (len > 5 && strcmp(m->name + len - 5, ".gguf") == 0)
            m->name[len - 5] = '\0';
        for (size_t k = 0; k + 1 < r->n; k++)
            if (strcmp(r->models[k].name, m->name) == 0) {
                err_set(err, BRASA_ERR_INVALID_ARGUMENT, "two models are named '%s': rename one", m->name);
                reg_free(r);
                return BRASA_ERR_INVALID_ARGUMENT;
            }
        plat_file_info_of(m->path, &m->file);
        m->keep_alive = cfg->keep_alive;
        m->expires = -1;
        const brasa_status st = read_header(cfg, m, err);
        if (st != BRASA_OK) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            reg_free(r);
            return err_set(err, st, "%s: %s", paths[i], why);
        }
    }
    *out = r;
    return BRASA_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct scan {
    const char *dir;
    char **paths;
    size_t n, cap;
    bool oom;
} scan;

static bool scan_entry(const char *name, bool is_dir, void *user) {
    scan *s = user;
    const size_t len = strlen(name);
    if (is_dir || len < 6 || strcmp(name + len - 5, ".gguf") != 0 || name[0] == '.')
        return true;
    if (s->n == s->cap) {
        const size_t cap = s->cap ? s->cap * 2 : 16;
        char **p = realloc(s->paths, cap * sizeof *p);
        if (!p) {
            s->oom = true;
            return false;
        }
        s->paths = p;
        s->cap = cap;
    }
    const size_t n = strlen(s->dir) + len + 2;
    char *path = malloc(n);
    if (!path) {
        s->oom = true;
        return false;
    }
    snprintf(path, n, "%s/%s", s->dir, name);
    s->paths[s->n++] = path;
    return true;
}

brasa_status reg_scan_dir(const char *dir, char ***paths, size_t *n, brasa_error *err) {
    scan s = { dir, NULL, 0, 0, false };
    *paths = NULL;
    *n = 0;
    const bool read = plat_list_dir(dir, scan_entry, &s);
    if (!read || s.oom || s.n == 0) {
        for (size_t i = 0; i < s.n; i++)
            free(s.paths[i]);
        free(s.paths);
        return s.oom ? err_set(err, BRASA_ERR_NO_MEMORY, "out of memory")
                     : err_set(err, BRASA_ERR_IO, !read ? "%s: cannot read the folder" : "%s holds no .gguf file", dir);
    }
    qsort(s.paths, s.n, sizeof *s.paths, by_name);
    *paths = s.paths;
    *n = s.n;
    return BRASA_OK;
}

void reg_free(registry *r) {
    if (!r)
        return;
    for (size_t i = 0; r->models && i < r->n; i++) {
        if (r->models[i].state == REG_LOADED)
            unload_locked(r, &r->models[i], "stopping");
        free(r->models[i].chat_template);
    }
    free(r->models);
    plat_cond_free(r->changed);
    plat_mutex_free(r->mu);
    free(r);
}

size_t reg_count(const registry *r) {
    return r->n;
}

const reg_model *reg_at(const registry *r, size_t i) {
    return &r->models[i];
}

reg_model *reg_find(registry *r, const char *name) {
    if (r->n == 1)
        return &r->models[0]; /* a server of one model answers whatever name a client was set up with */
    if (!name)
        return NULL;
    for (size_t i = 0; i < r->n; i++) {
        const reg_model *m = &r->models[i];
        const size_t len = strlen(m->name);
        if (strcmp(name, m->name) == 0 || (strncmp(name, m->name, len) == 0 && strcmp(name + len, ".gguf") == 0) ||
            (strncmp(name, m->name, len) == 0 && strcmp(name + len, ":latest") == 0))
            return &r->models[i];
    }
    return NULL;
}

static uint64_t loaded_bytes_locked(const registry *r) {
    uint64_t total = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->models[i].state != REG_UNLOADED)
            total += r->models[i].need_bytes;
    return total;
}

/* Unloads the least recently used idle model; false when none is idle. */
static bool evict_one_locked(registry *r) {
    reg_model *lru = NULL;
    for (size_t i = 0; i < r->n; i++) {
        reg_model *m = &r->models[i];
        if (m->state == REG_LOADED && m->refs == 0 && (!lru || m->last_used < lru->last_used))
            lru = m;
    }
    if (!lru)
        return false;
    unload_locked(r, lru, "room for another");
    return true;
}

static brasa_status load(registry *r, reg_model *m, brasa_error *err) {
    brasa_model_params mp = brasa_model_default_params();
    mp.progress = r->cfg.progress;
    brasa_status st = brasa_model_open(m->path, &mp, &m->model, err);
    if (st == BRASA_OK) {
        brasa_model_describe(m->model, &m->desc);
        m->embed_mu = plat_mutex_create();
        if (!m->embed_mu)
            st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    if (st == BRASA_OK && m->desc.can_generate)
        st = sched_create(m->model, &r->cfg.sched, &m->sched, err);
    if (st != BRASA_OK) {
        plat_mutex_free(m->embed_mu);
        brasa_model_free(m->model);
        m->embed_mu = NULL;
        m->model = NULL;
    }
    return st;
}

brasa_status reg_acquire(registry *r, reg_model *m, brasa_error *err) {
    plat_mutex_lock(r->mu);
    m->refs++;
    brasa_status st = BRASA_OK;
    for (;;) {
        if (m->state == REG_LOADED)
            break;
        if (r->stopping) {
            st = err_set(err, BRASA_ERR_UNSUPPORTED, "the server is shutting down");
            break;
        }
        if (m->state == REG_LOADING) {
            plat_cond_timedwait(r->changed, r->mu, 0.5);
            continue;
        }
        if (m->need_bytes > r->cfg.budget_bytes) {
            st = err_set(err, BRASA_ERR_NO_MEMORY, "%s needs %.1f GB with this server's slots, over its memory budget "
                         "of %.1f GB (--max-memory)", m->name, (double)m->need_bytes / 1e9,
                         (double)r->cfg.budget_bytes / 1e9);
            break;
        }
        if (loaded_bytes_locked(r) + m->need_bytes > r->cfg.budget_bytes) {
            if (!evict_one_locked(r)) /* every loaded model is in use: wait for one to be idle */
                plat_cond_timedwait(r->changed, r->mu, 0.5);
            continue;
        }
        m->state = REG_LOADING;
        if (r->n > 1)
            fprintf(stderr, "brasa serve: loading %s (%.0f MB with the slots)\n", m->name, (double)m->need_bytes / 1e6);
        plat_mutex_unlock(r->mu);
        st = load(r, m, err);
        plat_mutex_lock(r->mu);
        m->state = st == BRASA_OK ? REG_LOADED : REG_UNLOADED;
        if (st != BRASA_OK)
            snprintf(m->error, sizeof m->error, "%s", err->message);
        plat_cond_broadcast(r->changed);
        break;
    }
    if (st != BRASA_OK)
        m->refs--;
    else
        m->last_used = plat_time_seconds();
    plat_mutex_unlock(r->mu);
    return st;
}

void reg_release(registry *r, reg_model *m, double keep_alive) {
    plat_mutex_lock(r->mu);
    m->refs--;
    if (keep_alive >= 0)
        m->keep_alive = keep_alive;
    m->last_used = plat_time_seconds();
    m->expires = m->keep_alive >= REG_FOREVER ? -1 : m->last_used + m->keep_alive;
    plat_cond_broadcast(r->changed);
    plat_mutex_unlock(r->mu);
}

void reg_tick(registry *r) {
    plat_mutex_lock(r->mu);
    const double now = plat_time_seconds();
    for (size_t i = 0; i < r->n; i++) {
        reg_model *m = &r->models[i];
        if (m->state == REG_LOADED && m->refs == 0 && m->expires >= 0 && now >= m->expires && !r->stopping)
            unload_locked(r, m, "idle");
    }
    plat_mutex_unlock(r->mu);
}

void reg_snapshot(registry *r, size_t i, bool *loaded, double *expires) {
    plat_mutex_lock(r->mu);
    *loaded = r->models[i].state == REG_LOADED;
    *expires = r->models[i].refs > 0 ? -1 : r->models[i].expires;
    plat_mutex_unlock(r->mu);
}

void reg_counts(registry *r, int *queued, int *active) {
    *queued = *active = 0;
    plat_mutex_lock(r->mu);
    for (size_t i = 0; i < r->n; i++)
        if (r->models[i].state == REG_LOADED && r->models[i].sched) {
            int q = 0, a = 0;
            sched_counts(r->models[i].sched, &q, &a);
            *queued += q;
            *active += a;
        }
    plat_mutex_unlock(r->mu);
}

bool reg_drain(registry *r, double seconds) {
    const double until = plat_time_seconds() + seconds;
    bool drained = true;
    plat_mutex_lock(r->mu);
    r->stopping = true; /* no loads, no unloads from here: the schedulers below stay */
    plat_cond_broadcast(r->changed);
    plat_mutex_unlock(r->mu);
    for (size_t i = 0; i < r->n; i++) {
        sched *s = r->models[i].state == REG_LOADED ? r->models[i].sched : NULL;
        const double left = until - plat_time_seconds();
        if (s && !sched_drain(s, left > 0 ? left : 0))
            drained = false;
    }
    return drained;
}

void reg_stop(registry *r) {
    plat_mutex_lock(r->mu);
    r->stopping = true;
    plat_cond_broadcast(r->changed);
    for (size_t i = 0; i < r->n; i++)
        if (r->models[i].state == REG_LOADED && r->models[i].sched)
            sched_stop(r->models[i].sched);
    plat_mutex_unlock(r->mu);
}
