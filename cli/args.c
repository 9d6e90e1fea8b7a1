/* args.c: small helpers for the commands: errors, numbers, standard input, progress, opening a model. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "platform/platform.h"
#include "core/buf.h"

int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "brasa %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s", usage);
    return CLI_USAGE;
}

int cli_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("brasa: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_FAILED;
}

bool cli_is_help(const char *arg) {
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

bool cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return false;
    *out = (int64_t)v;
    return true;
}

bool cli_parse_kv_type(const char *s, int32_t *out) {
    if (s && strcmp(s, "f16") == 0)
        *out = BRASA_KV_F16;
    else if (s && strcmp(s, "f32") == 0)
        *out = BRASA_KV_F32;
    else
        return false;
    return true;
}

bool cli_parse_gpu_layers(const char *s, int32_t *out) {
    int64_t n;
    if (s && strcmp(s, "auto") == 0)
        *out = BRASA_GPU_LAYERS_AUTO;
    else if (s && strcmp(s, "all") == 0)
        *out = BRASA_GPU_LAYERS_ALL;
    else if (s && cli_parse_i64(s, 0, 1 << 20, &n))
        *out = n == 0 ? BRASA_GPU_LAYERS_NONE : (int32_t)n;
    else
        return false;
    return true;
}

void cli_progress(float fraction, void *label) {
    fprintf(stderr, "\r%s %3d%%", (const char *)label, (int)(fraction * 100.0f + 0.5f));
    if (fraction >= 1.0f)
        fprintf(stderr, "\r%*s\r", (int)strlen((const char *)label) + 5, "");
    fflush(stderr);
}

/* All of f, NUL-terminated, at most max bytes. */
static char *read_all(FILE *f, size_t max, size_t *len) {
    buf b = { 0 };
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > max || !buf_append(&b, chunk, n)) {
            buf_free(&b);
            return NULL;
        }
    }
    if (ferror(f) || !buf_append(&b, "", 1)) {
        buf_free(&b);
        return NULL;
    }
    *len = b.len - 1;
    return b.data;
}

char *cli_read_stdin(size_t *len) {
    return read_all(stdin, SIZE_MAX - 1, len);
}

char *cli_read_file(const char *path, size_t max, size_t *len) {
    FILE *f = plat_fopen(path, "rb");
    if (!f) {
        cli_fail("%s: cannot open it", path);
        return NULL;
    }
    char *text = read_all(f, max, len);
    fclose(f);
    if (!text)
        cli_fail("%s: cannot read it (over %zu bytes, or a read error)", path, max);
    else if (strlen(text) != *len) {
        cli_fail("%s: holds a NUL byte: not a text file", path);
        free(text);
        text = NULL;
    }
    return text;
}

brasa_model *cli_open_model(const char *arg) {
    brasa_error err;
    brasa_model *model = NULL;
    brasa_model_params params = brasa_model_default_params();
    char resolved[CLI_MODEL_PATH_MAX];
    const char *path = cli_model_path(arg, resolved, sizeof resolved);
    if (!path)
        return NULL;
    if (brasa_model_open(path, &params, &model, &err) != BRASA_OK) {
        cli_fail("%s: %s", path, err.message);
        return NULL;
    }
    return model;
}
