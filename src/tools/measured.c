/* measured.c: the cache of this machine's measured figures: one small text file of key=value lines,
 * read leniently (anything unexpected means "measure again") and replaced whole when written. */
#include "tools/measured.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "platform/platform.h"

#define CACHE_FILE "machine.txt"
#define FORMAT_LINE "# brasa: figures measured on this machine (delete the file to measure again)"

/* What a figure depends on: the kernels that ran it, the cores and the memory installed. */
static void machine_key(const char *kernels, char *out, size_t size) {
    uint64_t total = 0, avail = 0;
    plat_memory(&total, &avail);
    snprintf(out, size, "kernels=%s cores=%d memory=%llu", kernels, plat_cpu_count(), (unsigned long long)total);
}

static void strip_newline(char *s) {
    s[strcspn(s, "\r\n")] = '\0';
}

/* Reads the file back; true only when it is ours, for this machine, and its figure is plausible. */
static bool read_cache(const char *path, const char *key, measured_bandwidth *out) {
    FILE *f = plat_fopen(path, "rb");
    if (!f)
        return false;
    char line[512];
    bool format = false, same_machine = false;
    double gbs = 0;
    long long when = 0;
    while (fgets(line, sizeof line, f)) {
        strip_newline(line);
        char *eq = strchr(line, '=');
        if (strcmp(line, FORMAT_LINE) == 0)
            format = true;
        else if (strncmp(line, "machine=", 8) == 0)
            same_machine = strcmp(line + 8, key) == 0;
        else if (eq && strncmp(line, "bandwidth_gbs=", 14) == 0)
            gbs = strtod(eq + 1, NULL);
        else if (eq && strncmp(line, "measured_at=", 12) == 0)
            when = strtoll(eq + 1, NULL, 10);
    }
    fclose(f);
    if (!format || !same_machine || !(gbs > 0.01 && gbs < 1e6) || when <= 0)
        return false;
    out->gbs = gbs;
    out->measured_at = when;
    out->from_cache = true;
    return true;
}

brasa_status measured_memory_bandwidth(const char *kernels, bool remeasure, measured_bandwidth *out, brasa_error *err) {
    memset(out, 0, sizeof *out);
    char dir[900], key[256];
    machine_key(kernels, key, sizeof key);
    if (plat_cache_dir(dir, sizeof dir))
        snprintf(out->cache_path, sizeof out->cache_path, "%s/%s", dir, CACHE_FILE);
    else
        snprintf(out->cache_problem, sizeof out->cache_problem, "no cache directory could be made");
    if (!remeasure && out->cache_path[0] && read_cache(out->cache_path, key, out))
        return BRASA_OK;
    brasa_status st = brasa_measure_memory_bandwidth(0, &out->gbs, err);
    if (st != BRASA_OK)
        return st;
    out->measured_at = (int64_t)time(NULL);
    if (!out->cache_path[0])
        return BRASA_OK;
    char text[1024];
    const int n = snprintf(text, sizeof text, "%s\nmachine=%s\nbandwidth_gbs=%.3f\nmeasured_at=%lld\n", FORMAT_LINE,
                           key, out->gbs, (long long)out->measured_at);
    brasa_error werr;
    if (n < 0 || (size_t)n >= sizeof text ||
        plat_write_file_atomic(out->cache_path, text, (size_t)n, &werr) != BRASA_OK) {
        snprintf(out->cache_problem, sizeof out->cache_problem, "%.150s", n < 0 || (size_t)n >= sizeof text ?
                 "the figures do not fit the cache format" : werr.message);
        out->cache_path[0] = '\0';
    }
    return BRASA_OK;
}
