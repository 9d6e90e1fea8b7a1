/* gguf_synth: a model with a real model's shape and tokenizer but random weights, for speed figures
 * on a machine that cannot have the real file (a lent GPU machine has no network, and the working
 * tree that travels to it is 64 MiB): a product's speed does not depend on the values it
 * multiplies. Never a source of correctness: the logits of such a model mean nothing.
 *
 *   gguf_synth cut MODEL.gguf RECIPE   the header (metadata, vocabulary, tensor table) and each
 *                                      tensor's place, type and row length: a few MB
 *   gguf_synth fill RECIPE OUT.gguf    the file again, each tensor random blocks with finite
 *                                      scales (test_data.h's fill_row)
 *
 * RECIPE: "BRSYNTH1", u64 file size, u64 header bytes, the header, u64 tensor count, then per
 * tensor u64 file offset, u64 bytes, u32 type, u32 zero, i64 row length; little-endian. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "test_data.h"

#define MAGIC "BRSYNTH1"

typedef struct synth_tensor {
    uint64_t offset, bytes;
    uint32_t type, zero;
    int64_t ne0;
} synth_tensor;

static int fail(const char *what) {
    fprintf(stderr, "gguf_synth: %s\n", what);
    return 1;
}

static int cut(const char *model_path, const char *recipe_path) {
    brasa_error err;
    gguf_file *g = NULL;
    if (gguf_open(model_path, &g, &err) != BRASA_OK) {
        fprintf(stderr, "gguf_synth: %s: %s\n", model_path, err.message);
        return 1;
    }
    const uint64_t size = gguf_file_size(g), n = gguf_tensor_count(g);
    uint64_t header = size;
    for (uint64_t i = 0; i < n; i++)
        header = gguf_tensor_at(g, i)->file_offset < header ? gguf_tensor_at(g, i)->file_offset : header;
    FILE *f = fopen(recipe_path, "wb");
    int rc = f ? 0 : fail("cannot write the recipe");
    if (f) {
        fwrite(MAGIC, 1, 8, f);
        fwrite(&size, 8, 1, f);
        fwrite(&header, 8, 1, f);
        fwrite(gguf_image(g), 1, (size_t)header, f);
        fwrite(&n, 8, 1, f);
        for (uint64_t i = 0; i < n; i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            const synth_tensor s = { t->file_offset, t->bytes, (uint32_t)t->type, 0, t->ne[0] };
            fwrite(&s, sizeof s, 1, f);
        }
        if (fclose(f) != 0)
            rc = fail("cannot write the recipe");
        else
            printf("%s: %llu bytes of header, %llu tensors\n", recipe_path, (unsigned long long)header, (unsigned long long)n);
    }
    gguf_close(g);
    return rc;
}

static int fill(const char *recipe_path, const char *out_path) {
    FILE *in = fopen(recipe_path, "rb");
    char magic[8];
    uint64_t size = 0, header = 0, n = 0;
    if (!in || fread(magic, 1, 8, in) != 8 || memcmp(magic, MAGIC, 8) != 0 || fread(&size, 8, 1, in) != 1 ||
        fread(&header, 8, 1, in) != 1 || header > size || header > ((uint64_t)1 << 30)) {
        if (in)
            fclose(in);
        return fail("not a recipe (gguf_synth cut makes one)");
    }
    uint8_t *head = malloc(header ? (size_t)header : 1);
    FILE *out = fopen(out_path, "wb");
    int rc = 0;
    if (!head || !out || fread(head, 1, (size_t)header, in) != header || fwrite(head, 1, (size_t)header, out) != header ||
        fread(&n, 8, 1, in) != 1)
        rc = fail("cannot copy the header");
    uint64_t at = header;
    uint8_t *row = NULL;
    size_t row_cap = 0;
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        synth_tensor s;
        uint64_t row_bytes = 0;
        if (fread(&s, sizeof s, 1, in) != 1 || !quant_get(s.type) || s.ne0 <= 0 ||
            !quant_row_bytes(s.type, s.ne0, &row_bytes) || row_bytes == 0 || s.bytes % row_bytes != 0 ||
            s.offset < at || s.offset > size || s.bytes > size - s.offset) {
            rc = fail("a damaged tensor entry (tensors come in file order, inside the file)");
            break;
        }
        for (; at < s.offset && rc == 0; at++) /* alignment padding */
            rc = fputc(0, out) == EOF ? fail("cannot write") : 0;
        if (row_bytes > row_cap) {
            free(row);
            row = malloc((size_t)row_bytes);
            row_cap = row ? (size_t)row_bytes : 0;
            if (!row)
                rc = fail("out of memory");
        }
        for (uint64_t r = 0; rc == 0 && r < s.bytes / row_bytes; r++) {
            fill_row(s.type, row, s.ne0);
            if (fwrite(row, 1, (size_t)row_bytes, out) != row_bytes)
                rc = fail("cannot write");
        }
        at += s.bytes;
    }
    for (; at < size && rc == 0; at++)
        rc = fputc(0, out) == EOF ? fail("cannot write") : 0;
    free(row);
    free(head);
    fclose(in);
    if (out && fclose(out) != 0 && rc == 0)
        rc = fail("cannot write");
    if (rc == 0)
        printf("%s: %llu bytes, %llu tensors of random blocks\n", out_path, (unsigned long long)size, (unsigned long long)n);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "cut") == 0)
        return cut(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "fill") == 0)
        return fill(argv[2], argv[3]);
    fprintf(stderr, "usage: gguf_synth cut MODEL.gguf RECIPE | gguf_synth fill RECIPE OUT.gguf\n");
    return 2;
}
