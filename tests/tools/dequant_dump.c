/* dequant_dump: exposes brasa's reference kernels to the Python checks against the gguf package.
 *
 *   dequant_dump tensor MODEL NAME OUT.f32     dequantize a tensor of a real model
 *   dequant_dump raw TYPE IN.bin OUT.f32       dequantize raw blocks of a type number
 *   dequant_dump dot TYPE IN.bin X.f32         print the reference dot product of the row with x
 * Output files are raw little-endian float32. Exit 0 on success, 1 on failure, 3 for a type without
 * a kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/quant.h"

static void *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(size > 0 ? (size_t)size : 1);
    if (p && fread(p, 1, (size_t)size, f) != (size_t)size) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = (size_t)size;
    return p;
}

static int write_all(const char *path, const float *x, int64_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(x, sizeof *x, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "dequant_dump: cannot write %s\n", path);
        if (f)
            fclose(f);
        return 1;
    }
    return fclose(f) == 0 ? 0 : 1;
}

static int elements_of(uint32_t type, size_t bytes, int64_t *n) {
    const quant_traits *t = quant_get(type);
    if (!t || !t->dequantize)
        return 3;
    if (bytes % (size_t)t->type_size != 0)
        return 1;
    *n = (int64_t)(bytes / (size_t)t->type_size) * t->block_size;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: dequant_dump tensor MODEL NAME OUT | raw TYPE IN OUT | dot TYPE IN X\n");
        return 2;
    }
    if (strcmp(argv[1], "tensor") == 0) {
        gguf_file *f;
        brasa_error err;
        if (gguf_open(argv[2], &f, &err) != BRASA_OK) {
            fprintf(stderr, "dequant_dump: %s\n", err.message);
            return 1;
        }
        const gguf_tensor *t = gguf_find_tensor(f, argv[3]);
        if (!t) {
            fprintf(stderr, "dequant_dump: no tensor %s\n", argv[3]);
            gguf_close(f);
            return 1;
        }
        float *out = malloc((size_t)t->n_elements * sizeof *out);
        int rc = out && quant_dequantize(t->type, t->data, out, t->n_elements) ? write_all(argv[4], out, t->n_elements) : 3;
        free(out);
        gguf_close(f);
        return rc;
    }
    uint32_t type = (uint32_t)strtoul(argv[2], NULL, 10);
    size_t bytes;
    void *blocks = read_all(argv[3], &bytes);
    int64_t n = 0;
    int rc = blocks ? elements_of(type, bytes, &n) : 1;
    if (rc == 0 && strcmp(argv[1], "raw") == 0) {
        float *out = malloc((size_t)(n ? n : 1) * sizeof *out);
        rc = out && quant_dequantize(type, blocks, out, n) ? write_all(argv[4], out, n) : 1;
        free(out);
    } else if (rc == 0 && strcmp(argv[1], "dot") == 0) {
        size_t xbytes;
        float *x = read_all(argv[4], &xbytes);
        double result;
        if (!x || xbytes != (size_t)n * sizeof(float) || !quant_dot(type, blocks, x, n, &result)) {
            fprintf(stderr, "dequant_dump: x must hold %lld floats\n", (long long)n);
            rc = 1;
        } else {
            printf("%.17g\n", result);
        }
        free(x);
    } else if (rc == 0) {
        rc = 2;
    }
    free(blocks);
    return rc;
}
