/* devices.c: the built-in device table, user additions from a file, lookup by forgiving names,
 * and the share of memory a model can use on each kind of device. */
#include "tools/devices.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/error.h"
#include "platform/platform.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

struct devtab {
    devtab_device *d;
    size_t n, cap;
    measured_bandwidth cpu_bandwidth;
    bool has_cpu;
};

/* Specifications from the vendors' pages; FP16 figures are dense, with FP32 accumulation (half the
 * FP16-accumulate rate on GeForce cards), which is what inference kernels use. Prices: typical new
 * street prices in December 2026 unless the note says otherwise. */
static const devtab_device builtin[] = {
    { "RX 6800 XT", "AMD", DEVTAB_GPU, 16, 512, 41.5, 300, 450, "EUR", "2026-12", "RDNA2 gfx1030; mostly sold used by now", 0, 0, false },
    { "RX 7900 XTX", "AMD", DEVTAB_GPU, 24, 960, 61.4, 355, 900, "EUR", "2026-12", "RDNA3 gfx1100", 0, 0, false },
    { "RX 9060 XT 16GB", "AMD", DEVTAB_GPU, 16, 320, 51.3, 160, 530, "EUR", "2026", "RDNA4 gfx1200", 0, 0, false },
    { "RX 9070 XT", "AMD", DEVTAB_GPU, 16, 640, 97.3, 304, 700, "EUR", "2026-12", "RDNA4 gfx1201", 0, 0, false },
    { "RTX 5060 Ti 16GB", "NVIDIA", DEVTAB_GPU, 16, 448, 47.4, 180, 670, "EUR", "2026", "about 640-700 EUR", 0, 0, false },
    { "RTX 5070", "NVIDIA", DEVTAB_GPU, 12, 672, 61.7, 250, 600, "EUR", "2026-12", "", 0, 0, false },
    { "RTX 4090", "NVIDIA", DEVTAB_GPU, 24, 1008, 165.2, 450, 1800, "EUR", "2026-12", "out of production; new stock is scarce", 0, 0, false },
    { "RTX 5090", "NVIDIA", DEVTAB_GPU, 32, 1792, 209.5, 575, 2400, "EUR", "2026-12", "", 0, 0, false },
    { "Ryzen AI Max+ 395", "AMD", DEVTAB_UNIFIED, 128, 256, 59.4, 140, 2949, "USD", "2026",
      "HP Z2 Mini G1a, 2,949-3,999 USD by configuration; Radeon 8060S gfx1151", 0, 0, false },
    { "DGX Spark", "NVIDIA", DEVTAB_UNIFIED, 128, 273, 125, 240, 3999, "USD", "2026", "GB10 Grace Blackwell", 0, 0, false },
    { "Apple M4 Pro", "Apple", DEVTAB_UNIFIED, 64, 273, 9.2, 70, 2199, "USD", "2026-12", "Mac mini with 64 GB", 0, 0, false },
    { "H100", "NVIDIA", DEVTAB_GPU, 80, 3350, 989, 700, 25000, "USD", "2026-12", "SXM, 80 GB HBM3", 0, 0, false },
    { "H200", "NVIDIA", DEVTAB_GPU, 141, 4800, 989, 700, 32000, "USD", "2026-12", "SXM, 141 GB HBM3e", 0, 0, false },
};

const char *devtab_kind_name(devtab_kind kind) {
    return kind == DEVTAB_GPU ? "gpu" : kind == DEVTAB_UNIFIED ? "unified" : "cpu";
}

double devtab_usable_bytes(const devtab_device *d) {
    const double total = d->memory_gib * GIB;
    if (d->available_gib > 0) /* measured: what is free now, less a margin for the rest of the process */
        return d->available_gib * GIB - 0.5 * GIB > 0 ? d->available_gib * GIB - 0.5 * GIB : 0;
    switch (d->kind) {
    case DEVTAB_GPU: /* the driver's context and, on a desktop, the display */
        return total - fmax(0.5 * GIB, 0.03 * total);
    case DEVTAB_UNIFIED:
        /* macOS lets the GPU wire about three quarters of memory; elsewhere the system keeps a few GiB */
        if (strcmp(d->vendor, "Apple") == 0)
            return 0.75 * total;
        return total - fmax(6.0 * GIB, 0.08 * total);
    case DEVTAB_CPU:
    default:
        return total - fmax(2.0 * GIB, 0.1 * total);
    }
}

devtab *devtab_create(void) {
    devtab *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    const size_t n = sizeof builtin / sizeof builtin[0];
    t->d = malloc(n * sizeof *t->d);
    if (!t->d) {
        free(t);
        return NULL;
    }
    memcpy(t->d, builtin, sizeof builtin);
    t->n = t->cap = n;
    return t;
}

void devtab_free(devtab *t) {
    if (!t)
        return;
    free(t->d);
    free(t);
}

size_t devtab_count(const devtab *t) { return t->n; }
const devtab_device *devtab_get(const devtab *t, size_t i) { return i < t->n ? &t->d[i] : NULL; }

/* The name folded for matching: lower case, letters and digits only. */
static void fold(const char *in, char *out, size_t size) {
    size_t k = 0;
    for (; *in && k + 1 < size; in++)
        if (isalnum((unsigned char)*in))
            out[k++] = (char)tolower((unsigned char)*in);
    out[k] = '\0';
}

const devtab_device *devtab_find(const devtab *t, const char *name) {
    char want[128], have[128], with_vendor[160];
    fold(name, want, sizeof want);
    if (!want[0])
        return NULL;
    for (size_t i = 0; i < t->n; i++) {
        fold(t->d[i].name, have, sizeof have);
        char full[192];
        snprintf(full, sizeof full, "%s %s", t->d[i].vendor, t->d[i].name);
        fold(full, with_vendor, sizeof with_vendor);
        if (strcmp(want, have) == 0 || strcmp(want, with_vendor) == 0)
            return &t->d[i];
    }
    return NULL;
}

const devtab_device *devtab_match(const devtab *t, const char *runtime_name) {
    char hay[192], needle[128];
    fold(runtime_name, hay, sizeof hay);
    const devtab_device *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->d[i].kind == DEVTAB_CPU)
            continue;
        fold(t->d[i].name, needle, sizeof needle);
        const size_t len = strlen(needle);
        if (len > best_len && strstr(hay, needle)) {
            best = &t->d[i];
            best_len = len;
        }
    }
    return best;
}

void devtab_names(const devtab *t, char *out, size_t size) {
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < t->n && k < size; i++) {
        int w = snprintf(out + k, size - k, "%s%s", i ? ", " : "", t->d[i].name);
        if (w < 0)
            break;
        k += (size_t)w;
    }
}

static bool valid_device(const devtab_device *d, char *why, size_t size) {
    if (!d->name[0])
        snprintf(why, size, "a device needs a name");
    else if (!(d->memory_gib > 0 && d->memory_gib <= 1e6))
        snprintf(why, size, "memory_gb must be above 0 and at most 1000000");
    else if (!(d->bandwidth_gbs > 0 && d->bandwidth_gbs <= 1e6))
        snprintf(why, size, "bandwidth_gbs must be above 0 and at most 1000000");
    else if (!(d->tflops >= 0 && d->tflops <= 1e6))
        snprintf(why, size, "tflops must be between 0 and 1000000");
    else if (!(d->watts >= 0 && d->watts <= 1e5))
        snprintf(why, size, "watts must be between 0 and 100000");
    else if (!(d->price >= 0 && d->price <= 1e9))
        snprintf(why, size, "price must be between 0 and 1000000000");
    else
        return true;
    return false;
}

brasa_status devtab_add(devtab *t, const devtab_device *d, brasa_error *err) {
    char why[128];
    if (!valid_device(d, why, sizeof why))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "device '%s': %s", d->name, why);
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->d[i].name, d->name) == 0) {
            t->d[i] = *d;
            return BRASA_OK;
        }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        devtab_device *nd = realloc(t->d, cap * sizeof *nd);
        if (!nd)
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
        t->d = nd;
        t->cap = cap;
    }
    t->d[t->n++] = *d;
    return BRASA_OK;
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static bool parse_number(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *trim(end) != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* Sets one key of a device from the file; false with a reason when the key or value is bad. */
static bool set_key(devtab_device *d, const char *key, const char *value, char *why, size_t size) {
    double *num = NULL;
    if (strcmp(key, "memory_gb") == 0)
        num = &d->memory_gib;
    else if (strcmp(key, "bandwidth_gbs") == 0)
        num = &d->bandwidth_gbs;
    else if (strcmp(key, "tflops") == 0)
        num = &d->tflops;
    else if (strcmp(key, "watts") == 0)
        num = &d->watts;
    else if (strcmp(key, "price") == 0)
        num = &d->price;
    if (num) {
        if (!parse_number(value, num)) {
            snprintf(why, size, "%s: '%s' is not a number", key, value);
            return false;
        }
        return true;
    }
    if (strcmp(key, "kind") == 0) {
        if (strcmp(value, "gpu") == 0)
            d->kind = DEVTAB_GPU;
        else if (strcmp(value, "unified") == 0)
            d->kind = DEVTAB_UNIFIED;
        else if (strcmp(value, "cpu") == 0)
            d->kind = DEVTAB_CPU;
        else {
            snprintf(why, size, "kind must be gpu, unified or cpu, not '%s'", value);
            return false;
        }
        return true;
    }
    struct { const char *key; char *dst; size_t cap; } text[] = {
        { "vendor", d->vendor, sizeof d->vendor }, { "currency", d->currency, sizeof d->currency },
        { "price_date", d->price_date, sizeof d->price_date }, { "note", d->note, sizeof d->note },
    };
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        if (strcmp(key, text[i].key) == 0) {
            if (strlen(value) >= text[i].cap) {
                snprintf(why, size, "%s is longer than %zu characters", key, text[i].cap - 1);
                return false;
            }
            snprintf(text[i].dst, text[i].cap, "%s", value);
            return true;
        }
    snprintf(why, size, "unknown key '%s' (kind, memory_gb, bandwidth_gbs, tflops, watts, price, currency, "
             "price_date, vendor, note)", key);
    return false;
}

brasa_status devtab_load_file(devtab *t, const char *path, brasa_error *err) {
    FILE *f = plat_fopen(path, "rb");
    if (!f)
        return err_set(err, BRASA_ERR_IO, "%s: cannot open the device file", path);
    char line[512], why[256];
    devtab_device d;
    bool open = false;
    int lineno = 0, added = 0;
    brasa_status st = BRASA_OK;
    while (st == BRASA_OK && fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            st = err_set(err, BRASA_ERR_FORMAT, "%s:%d: line longer than %zu bytes", path, lineno, sizeof line - 2);
            break;
        }
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *close = strchr(s, ']');
            if (!close || *trim(close + 1) != '\0') {
                st = err_set(err, BRASA_ERR_FORMAT, "%s:%d: a section is written [Device name]", path, lineno);
                break;
            }
            if (open && (st = devtab_add(t, &d, err)) != BRASA_OK)
                break;
            *close = '\0';
            char *name = trim(s + 1);
            if (!*name || strlen(name) >= sizeof d.name) {
                st = err_set(err, BRASA_ERR_FORMAT, "%s:%d: a device name has 1 to %zu characters", path, lineno,
                             sizeof d.name - 1);
                break;
            }
            memset(&d, 0, sizeof d);
            snprintf(d.name, sizeof d.name, "%s", name);
            snprintf(d.vendor, sizeof d.vendor, "user");
            snprintf(d.currency, sizeof d.currency, "USD");
            d.kind = DEVTAB_GPU;
            open = true;
            added++;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            st = err_set(err, BRASA_ERR_FORMAT, "%s:%d: expected key = value or [Device name]", path, lineno);
            break;
        }
        if (!open) {
            st = err_set(err, BRASA_ERR_FORMAT, "%s:%d: key before the first [Device name]", path, lineno);
            break;
        }
        *eq = '\0';
        if (!set_key(&d, trim(s), trim(eq + 1), why, sizeof why))
            st = err_set(err, BRASA_ERR_FORMAT, "%s:%d: %s", path, lineno, why);
    }
    if (st == BRASA_OK && ferror(f))
        st = err_set(err, BRASA_ERR_IO, "%s: read error", path);
    if (st == BRASA_OK && open)
        st = devtab_add(t, &d, err);
    if (st == BRASA_OK && added == 0)
        st = err_set(err, BRASA_ERR_FORMAT, "%s: no [Device name] sections", path);
    if (st != BRASA_OK && err->message[0] && strncmp(err->message, path, strlen(path)) != 0) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        err_set(err, st, "%s: %s", path, msg);
    }
    fclose(f);
    return st;
}

const measured_bandwidth *devtab_cpu_bandwidth(const devtab *t) {
    return t->has_cpu ? &t->cpu_bandwidth : NULL;
}

brasa_status devtab_add_this_cpu(devtab *t, bool remeasure, brasa_error *err) {
    devtab_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "cpu");
    snprintf(d.vendor, sizeof d.vendor, "CPU");
    d.kind = DEVTAB_CPU;
    uint64_t total, avail;
    plat_memory(&total, &avail);
    if (total == 0)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "cannot tell how much memory this machine has");
    d.memory_gib = (double)total / GIB;
    d.available_gib = (double)(avail ? avail : total) / GIB;
    /* 8-bit operations (multiplies and adds) per core and cycle of the kernels brasa picks, at an
     * assumed 3 GHz: two 32-byte multiply-add instructions a cycle for AVX2 and for AVX-512 VNNI
     * (Zen 4 runs 512-bit ones as two halves); and the share of that brasa bench pp512 reached on
     * Qwen2.5-Coder-1.5B Q4_K_M, 2 cores: 60 tokens/s on AVX2 (0.24), 80 with VNNI (0.32) */
    bk_device *dev = NULL;
    char kernels[32] = "scalar";
    if (bk_cpu_create(1, &dev, err) != BRASA_OK)
        return err->status;
    snprintf(kernels, sizeof kernels, "%s", bk_cpu_kernels_name(dev));
    bk_cpu_free(dev);
    brasa_status st = measured_memory_bandwidth(kernels, remeasure, &t->cpu_bandwidth, err);
    if (st != BRASA_OK)
        return st;
    t->has_cpu = true;
    d.bandwidth_gbs = t->cpu_bandwidth.gbs;
    const bool vnni = strncmp(kernels, "avx512", 6) == 0;
    const double ops = vnni || strncmp(kernels, "avx2", 4) == 0 ? 128
                       : strstr(kernels, "dotprod")              ? 64
                       : strncmp(kernels, "neon", 4) == 0        ? 32
                                                                 : 8;
    d.prefill_eff = vnni ? 0.32 : 0.24;
    d.tflops = (double)brasa_cpu_count() * 3e9 * ops / 1e12;
    d.watts = 65;
    snprintf(d.currency, sizeof d.currency, "USD");
    snprintf(d.note, sizeof d.note, "this machine: memory measured now, bandwidth %s",
             t->cpu_bandwidth.from_cache ? "measured earlier (cached)" : "measured now");
    d.measured = true;
    return devtab_add(t, &d, err);
}

