/* gpu_tuning.c: measuring product variants and keeping the winners (see gpu_tuning.h). */
#include "backend/gpu_tuning.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "platform/platform.h"
#include "quant/quant.h"

#define FORMAT_LINE "brasa-gpu-tuning 1"
#define HEADER_LINES 6
#define ENTRIES_MAX 256
#define FILE_MAX (1u << 20)
#define DIM_MAX ((int64_t)1 << 30)
#define US_MAX 1e9 /* a product slower than 1000 s is no measurement */

static const char *const kind_names[2] = { "decode", "prefill" };

typedef struct entry {
    int kind;
    uint32_t type;
    int64_t n_out, n_in;
    int variant;
    double us;
} entry;

typedef struct entries {
    entry e[ENTRIES_MAX];
    int n;
} entries;

/* Copies s without control characters (a name from a driver goes on one line of the file). */
static void one_line(char *out, size_t size, const char *s) {
    size_t i = 0;
    for (; s[i] && i + 1 < size; i++)
        out[i] = (unsigned char)s[i] < 32 ? ' ' : s[i];
    out[i] = '\0';
}

/* The header lines the file of this device must start with. */
static void header(const gtune_device *d, char lines[HEADER_LINES][300]) {
    char name[256], arch[32];
    one_line(name, sizeof name, d->info.name);
    one_line(arch, sizeof arch, d->info.arch);
    snprintf(lines[0], 300, "%s", FORMAT_LINE);
    snprintf(lines[1], 300, "backend %s", d->module->name);
    snprintf(lines[2], 300, "device %s", name);
    snprintf(lines[3], 300, "arch %s", arch);
    snprintf(lines[4], 300, "driver %d", d->info.driver_version);
    snprintf(lines[5], 300, "brasa %s", BRASA_VERSION_STRING);
}

bool gtune_path(const gtune_device *d, char *out, size_t size) {
    char dir[900], arch[32];
    if (!plat_cache_dir(dir, sizeof dir))
        return false;
    /* the name's hash tells apart two cards of one architecture; letters and digits only in the name */
    uint32_t h = 2166136261u;
    for (const char *p = d->info.name; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    size_t i = 0;
    for (const char *p = d->info.arch; *p && i + 1 < sizeof arch; p++)
        arch[i++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p : '_';
    arch[i] = '\0';
    const int n = snprintf(out, size, "%s/gpu-tuning-%s-%s-%08x.txt", dir, d->module->name, arch, h);
    return n > 0 && (size_t)n < size;
}

static bool type_from_name(const char *name, uint32_t *out) {
    for (uint32_t t = 0; t < 64; t++) {
        const char *n = quant_name(t);
        if (n && strcmp(n, name) == 0) {
            *out = t;
            return true;
        }
    }
    return false;
}

/* One shape line; false when it does not parse or names no variant of this module. */
static bool parse_entry(const gtune_device *d, const char *line, entry *e) {
    char kind[16], type[24];
    long long n_out = 0, n_in = 0;
    int variant = -1, used = 0;
    if (sscanf(line, "%15s %23s %lld %lld %d %lf%n", kind, type, &n_out, &n_in, &variant, &e->us, &used) != 6 || line[used])
        return false;
    e->kind = strcmp(kind, kind_names[0]) == 0 ? 0 : strcmp(kind, kind_names[1]) == 0 ? 1 : -1;
    e->n_out = n_out;
    e->n_in = n_in;
    e->variant = variant;
    return e->kind >= 0 && type_from_name(type, &e->type) && n_out > 0 && n_out <= DIM_MAX && n_in > 0 && n_in <= DIM_MAX &&
           variant >= 0 && variant < d->module->variants(e->kind) && e->us >= 0 && e->us <= US_MAX; /* NaN fails both */
}

/* Parses a file's text (len bytes, NUL-terminated, modified in place) into out. False, with the
 * reason in note, when it is stale, foreign or damaged; path names it in the note. */
static bool parse_text(const gtune_device *d, const char *path, char *text, size_t len, entries *out, char *note,
                       size_t note_size) {
    out->n = 0;
    if (memchr(text, '\0', len)) {
        snprintf(note, note_size, "%s is not a tuning file (it holds binary data); ignored (brasa tune writes it anew)", path);
        return false;
    }
    char want[HEADER_LINES][300];
    header(d, want);
    bool ok = true;
    int line_no = 0;
    for (char *line = text, *next; ok && line && line < text + len; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line[strcspn(line, "\r")] = '\0';
        line_no++;
        if (line_no <= HEADER_LINES) {
            if (strcmp(line, want[line_no - 1]) != 0) {
                const bool ours = line_no > 1;
                snprintf(note, note_size, "%s %s: it says \"%.80s\" where this device needs \"%.80s\"; ignored (brasa tune "
                         "measures again)", path, ours ? "is stale or for another device" : "is not a tuning file", line,
                         want[line_no - 1]);
                ok = false;
            }
        } else if (line[0] && line[0] != '#') {
            if (out->n == ENTRIES_MAX || !parse_entry(d, line, &out->e[out->n])) {
                snprintf(note, note_size, "%s is damaged at line %d (\"%.60s\"); ignored (brasa tune writes it anew)", path,
                         line_no, line);
                ok = false;
            } else {
                out->n++;
            }
        }
    }
    if (ok && line_no < HEADER_LINES) {
        snprintf(note, note_size, "%s is damaged: it ends inside its header; ignored (brasa tune writes it anew)", path);
        ok = false;
    }
    if (!ok)
        out->n = 0;
    return ok;
}

/* Reads the device's file into out. False, with the reason in note, when it is missing (note
 * empty), stale, foreign or damaged. */
static bool read_file(const gtune_device *d, const char *path, entries *out, char *note, size_t note_size) {
    note[0] = '\0';
    out->n = 0;
    FILE *f = plat_fopen(path, "rb");
    if (!f)
        return false;
    char *text = malloc(FILE_MAX + 1);
    const size_t len = text ? fread(text, 1, FILE_MAX + 1, f) : 0;
    fclose(f);
    if (!text || len > FILE_MAX) {
        snprintf(note, note_size, "%s: %s; ignored", path, text ? "larger than any tuning file" : "out of memory");
        free(text);
        return false;
    }
    text[len] = '\0';
    const bool ok = parse_text(d, path, text, len, out, note, note_size);
    free(text);
    return ok;
}

int gtune_parse(const gtune_device *d, const char *text, size_t len, char *note, size_t note_size) {
    note[0] = '\0';
    char *copy = malloc(len + 1);
    entries *es = malloc(sizeof *es);
    int n = -1;
    if (!copy || !es)
        snprintf(note, note_size, "out of memory");
    else if (len > FILE_MAX)
        snprintf(note, note_size, "larger than any tuning file");
    else {
        memcpy(copy, text, len);
        copy[len] = '\0';
        if (parse_text(d, "the tuning text", copy, len, es, note, note_size))
            n = es->n;
    }
    free(copy);
    free(es);
    return n;
}

int gtune_load(const gtune_device *d, char *note, size_t note_size) {
    char path[1024];
    note[0] = '\0';
    entries *es = calloc(1, sizeof *es);
    if (!es || !gtune_path(d, path, sizeof path) || !read_file(d, path, es, note, note_size)) {
        free(es);
        return 0;
    }
    int applied = 0;
    for (int i = 0; i < es->n; i++) {
        const entry *e = &es->e[i];
        brasa_error err;
        if (d->module->set_variant(d->dev, e->kind, e->type, e->n_out, e->n_in, e->variant, &err) == BRASA_OK)
            applied++;
        else if (!note[0])
            snprintf(note, note_size, "%s: a stored choice was refused: %.200s", path, err.message);
    }
    free(es);
    return applied;
}

/* Puts e in the list, replacing the entry of the same shape and kind. */
static void put(entries *es, const entry *e) {
    for (int i = 0; i < es->n; i++)
        if (es->e[i].kind == e->kind && es->e[i].type == e->type && es->e[i].n_out == e->n_out && es->e[i].n_in == e->n_in) {
            es->e[i] = *e;
            return;
        }
    if (es->n < ENTRIES_MAX)
        es->e[es->n++] = *e;
}

static brasa_status write_file(const gtune_device *d, const char *path, const entries *es, brasa_error *err) {
    char want[HEADER_LINES][300];
    header(d, want);
    /* every line is bounded: header lines by header(), entries by their checked ranges */
    const size_t cap = (size_t)HEADER_LINES * 300 + 128 + (size_t)es->n * 128;
    char *text = malloc(cap);
    if (!text)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    size_t len = 0;
    int n = 0;
    for (int i = 0; i < HEADER_LINES && n >= 0 && len < cap; i++, len += (size_t)n)
        n = snprintf(text + len, cap - len, "%s\n", want[i]);
    if (n >= 0 && len < cap)
        len += (size_t)(n = snprintf(text + len, cap - len, "# kind type rows row-length variant microseconds\n"));
    for (int i = 0; i < es->n && n >= 0 && len < cap; i++, len += (size_t)n) {
        const entry *e = &es->e[i];
        n = snprintf(text + len, cap - len, "%s %s %lld %lld %d %.3f\n", kind_names[e->kind], quant_name(e->type),
                     (long long)e->n_out, (long long)e->n_in, e->variant, e->us > US_MAX ? US_MAX : e->us);
    }
    if (n < 0 || len >= cap) {
        free(text);
        return err_set(err, BRASA_ERR_INTERNAL, "the tuning choices do not fit the file format");
    }
    brasa_status st = plat_write_file_atomic(path, text, len, err);
    free(text);
    return st;
}

static void report_shape(const gtune_device *d, const entry *e, int before, double before_us, brasa_tune_shape *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->kind, sizeof s->kind, "%s", kind_names[e->kind]);
    snprintf(s->type, sizeof s->type, "%s", quant_name(e->type));
    s->n_out = e->n_out;
    s->n_in = e->n_in;
    snprintf(s->before, sizeof s->before, "%s", d->module->variant_name(e->kind, before));
    s->before_us = before_us;
    snprintf(s->best, sizeof s->best, "%s", d->module->variant_name(e->kind, e->variant));
    s->best_us = e->us;
}

brasa_status gtune_measure(const gtune_device *d, const bk_tensor *const *weights, size_t n, const brasa_tune_params *params,
                           brasa_tune_report *report, brasa_error *err) {
    memset(report, 0, sizeof *report);
    const int64_t prefill_tokens = params->prefill_tokens > 0 ? params->prefill_tokens : 512;
    const int reps = params->repetitions > 0 ? params->repetitions : 10;
    /* the distinct shapes, each with the first tensor of that shape */
    const bk_tensor *shapes[BRASA_TUNE_SHAPES_MAX / 2];
    int n_shapes = 0;
    for (size_t i = 0; i < n; i++) {
        if (weights[i]->ne2 > 1)
            continue; /* experts: matmul_id's products take the rule's variant, not a tuned one */
        bool seen = false;
        for (int j = 0; j < n_shapes && !seen; j++)
            seen = shapes[j]->type == weights[i]->type && shapes[j]->ne1 == weights[i]->ne1 && shapes[j]->ne0 == weights[i]->ne0;
        if (!seen && n_shapes < (int)(sizeof shapes / sizeof shapes[0]))
            shapes[n_shapes++] = weights[i];
    }
    int total = 0, done = 0;
    for (int kind = 0; kind < 2; kind++)
        total += n_shapes * d->module->variants(kind);
    entries *es = calloc(1, sizeof *es);
    if (!es)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    char path[1024] = "", note[512];
    const bool have_path = gtune_path(d, path, sizeof path);
    if (have_path)
        read_file(d, path, es, note, sizeof note); /* keep the other shapes' choices of a good file */
    brasa_status st = BRASA_OK;
    for (int kind = 0; kind < 2 && st == BRASA_OK; kind++) {
        const int64_t n_tok = kind == 0 ? 1 : prefill_tokens;
        for (int s = 0; s < n_shapes && st == BRASA_OK; s++) {
            const bk_tensor *w = shapes[s];
            const int before = d->module->variant_of(d->dev, kind, w->type, w->ne1, w->ne0);
            entry best = { kind, w->type, w->ne1, w->ne0, -1, INFINITY };
            double before_us = 0;
            for (int v = 0; v < d->module->variants(kind) && st == BRASA_OK; v++) {
                double seconds = 0;
                st = d->module->time_variant(d->dev, w, n_tok, v, reps, &seconds, err);
                const bool has_kernel = st != BRASA_ERR_UNSUPPORTED;
                if (!has_kernel)
                    st = BRASA_OK; /* this variant is not for this type */
                if (st == BRASA_OK && has_kernel && seconds * 1e6 < best.us) {
                    best.variant = v;
                    best.us = seconds * 1e6;
                }
                if (v == before)
                    before_us = seconds * 1e6;
                done++;
                if (params->progress)
                    params->progress((float)done / (float)total, params->progress_user_data);
            }
            if (st == BRASA_OK)
                st = d->module->set_variant(d->dev, kind, w->type, w->ne1, w->ne0, best.variant, err);
            if (st == BRASA_OK) {
                put(es, &best);
                report_shape(d, &best, before, before_us, &report->shapes[report->n_shapes++]);
            }
        }
    }
    if (st == BRASA_OK && !have_path)
        snprintf(report->cache_problem, sizeof report->cache_problem, "no cache directory could be made");
    if (st == BRASA_OK && have_path) {
        brasa_error werr;
        if (write_file(d, path, es, &werr) == BRASA_OK)
            snprintf(report->cache_path, sizeof report->cache_path, "%s", path);
        else
            snprintf(report->cache_problem, sizeof report->cache_problem, "%.250s", werr.message);
    }
    free(es);
    return st;
}
