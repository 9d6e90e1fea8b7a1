/* measured.c: the cache of this machine's measured figures (memory bandwidth, integer product
 * peak): one small text file of key=value lines, read leniently (anything unexpected means "measure
 * again") and replaced whole when written, with every figure it holds for this machine, so that
 * measuring one never drops the other. */
#include "tools/measured.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "platform/platform.h"

#define CACHE_FILE "machine.txt"
#define FORMAT_LINE "# brasa: figures measured on this machine (delete the file to measure again)"

/* Every figure the file can hold; a figure is 0 where the file has none for this machine, or none
 * plausible. */
typedef struct figures {
    double bandwidth_gbs;
    long long bandwidth_at;
    double peak_macs;
    char peak_path[32];
    long long peak_at;
} figures;

typedef enum figure { FIGURE_BANDWIDTH, FIGURE_PEAK } figure;

/* What a figure depends on: the kernels that ran it, the cores and the memory installed. */
static void machine_key(const char *kernels, char *out, size_t size) {
    uint64_t total = 0, avail = 0;
    plat_memory(&total, &avail);
    snprintf(out, size, "kernels=%s cores=%d memory=%llu", kernels, plat_cpu_count(), (unsigned long long)total);
}

static void strip_newline(char *s) {
    s[strcspn(s, "\r\n")] = '\0';
}

/* Whether path names the kernel table of kernels (the backend's name: the table's, maybe + "+q8"). */
static bool path_of_kernels(const char *path, const char *kernels) {
    const size_t n = strlen(path);
    return n > 0 && strncmp(kernels, path, n) == 0 && (kernels[n] == '\0' || kernels[n] == '+');
}

/* Reads the file back: nothing unless it is ours and for this machine, and of its figures only the
 * plausible ones. */
static void read_cache(const char *path, const char *key, const char *kernels, figures *out) {
    memset(out, 0, sizeof *out);
    FILE *f = plat_fopen(path, "rb");
    if (!f)
        return;
    char line[512];
    bool format = false, same_machine = false;
    figures got = { 0 };
    while (fgets(line, sizeof line, f)) {
        strip_newline(line);
        const char *eq = strchr(line, '=');
        if (strcmp(line, FORMAT_LINE) == 0)
            format = true;
        else if (!eq)
            continue;
        else if (strncmp(line, "machine=", 8) == 0)
            same_machine = strcmp(eq + 1, key) == 0;
        else if (strncmp(line, "bandwidth_gbs=", 14) == 0)
            got.bandwidth_gbs = strtod(eq + 1, NULL);
        else if (strncmp(line, "measured_at=", 12) == 0)
            got.bandwidth_at = strtoll(eq + 1, NULL, 10);
        else if (strncmp(line, "int8_peak_macs_per_second=", 26) == 0)
            got.peak_macs = strtod(eq + 1, NULL);
        else if (strncmp(line, "int8_peak_path=", 15) == 0)
            snprintf(got.peak_path, sizeof got.peak_path, "%.31s", eq + 1);
        else if (strncmp(line, "int8_peak_measured_at=", 22) == 0)
            got.peak_at = strtoll(eq + 1, NULL, 10);
    }
    fclose(f);
    if (!format || !same_machine)
        return;
    if (got.bandwidth_gbs > 0.01 && got.bandwidth_gbs < 1e6 && got.bandwidth_at > 0) {
        out->bandwidth_gbs = got.bandwidth_gbs;
        out->bandwidth_at = got.bandwidth_at;
    }
    /* from a slow scalar core (tens of millions) to far beyond the largest servers (1e15) */
    if (got.peak_macs > 1e6 && got.peak_macs < 1e17 && got.peak_at > 0 && path_of_kernels(got.peak_path, kernels)) {
        out->peak_macs = got.peak_macs;
        out->peak_at = got.peak_at;
        memcpy(out->peak_path, got.peak_path, sizeof out->peak_path);
    }
}

/* Replaces the file with every figure f holds; false with the reason in problem when it cannot. */
static bool write_cache(const char *path, const char *key, const figures *f, char *problem, size_t problem_size) {
    char text[1024];
    int n = snprintf(text, sizeof text, "%s\nmachine=%s\n", FORMAT_LINE, key);
    if (n >= 0 && (size_t)n < sizeof text && f->bandwidth_gbs > 0)
        n += snprintf(text + n, sizeof text - (size_t)n, "bandwidth_gbs=%.3f\nmeasured_at=%lld\n", f->bandwidth_gbs,
                      f->bandwidth_at);
    if (n >= 0 && (size_t)n < sizeof text && f->peak_macs > 0)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "int8_peak_macs_per_second=%.0f\nint8_peak_path=%s\nint8_peak_measured_at=%lld\n", f->peak_macs,
                      f->peak_path, f->peak_at);
    if (n < 0 || (size_t)n >= sizeof text) {
        snprintf(problem, problem_size, "the figures do not fit the cache format");
        return false;
    }
    brasa_error werr;
    if (plat_write_file_atomic(path, text, (size_t)n, &werr) != BRASA_OK) {
        snprintf(problem, problem_size, "%.150s", werr.message);
        return false;
    }
    return true;
}

/* The one way to either figure: the file's, when it holds one for this machine and remeasure is
 * false; else measured now and written back beside the file's other figure. cache_path: "" when
 * there is no cache directory or writing failed (problem says why). */
static brasa_status get_figure(const char *kernels, bool remeasure, figure which, figures *f, bool *from_cache,
                               char *cache_path, size_t path_size, char *problem, size_t problem_size,
                               brasa_error *err) {
    memset(f, 0, sizeof *f);
    *from_cache = false;
    cache_path[0] = problem[0] = '\0';
    char dir[900], key[256];
    machine_key(kernels, key, sizeof key);
    if (plat_cache_dir(dir, sizeof dir)) {
        snprintf(cache_path, path_size, "%s/%s", dir, CACHE_FILE);
        read_cache(cache_path, key, kernels, f);
    } else {
        snprintf(problem, problem_size, "no cache directory could be made");
    }
    const bool have = which == FIGURE_BANDWIDTH ? f->bandwidth_gbs > 0 : f->peak_macs > 0;
    if (have && !remeasure) {
        *from_cache = true;
        return BRASA_OK;
    }
    brasa_status st;
    if (which == FIGURE_BANDWIDTH) {
        st = brasa_measure_memory_bandwidth(0, &f->bandwidth_gbs, err);
        f->bandwidth_at = (long long)time(NULL);
    } else {
        st = brasa_measure_int8_peak(0, &f->peak_macs, f->peak_path, sizeof f->peak_path, err);
        f->peak_at = (long long)time(NULL);
    }
    if (st != BRASA_OK)
        return st;
    if (cache_path[0] && !write_cache(cache_path, key, f, problem, problem_size))
        cache_path[0] = '\0';
    return BRASA_OK;
}

brasa_status measured_memory_bandwidth(const char *kernels, bool remeasure, measured_bandwidth *out, brasa_error *err) {
    memset(out, 0, sizeof *out);
    figures f;
    const brasa_status st =
        get_figure(kernels, remeasure, FIGURE_BANDWIDTH, &f, &out->from_cache, out->cache_path, sizeof out->cache_path,
                   out->cache_problem, sizeof out->cache_problem, err);
    out->gbs = f.bandwidth_gbs;
    out->measured_at = f.bandwidth_at;
    return st;
}

brasa_status measured_int8_peak(const char *kernels, bool remeasure, measured_peak *out, brasa_error *err) {
    memset(out, 0, sizeof *out);
    figures f;
    const brasa_status st =
        get_figure(kernels, remeasure, FIGURE_PEAK, &f, &out->from_cache, out->cache_path, sizeof out->cache_path,
                   out->cache_problem, sizeof out->cache_problem, err);
    out->macs_per_second = f.peak_macs;
    out->measured_at = f.peak_at;
    memcpy(out->path, f.peak_path, sizeof out->path);
    return st;
}
