/* gguf.c: parsing and validating a GGUF header (spec: ggml's docs/gguf.md).
 *
 * Layout: magic "GGUF", u32 version, u64 tensor_count, u64 kv_count, the key/value pairs, the tensor
 * infos, padding to general.alignment, then the tensor data. All integers are little-endian.
 * Every read goes through the bounds-checked reader below; arrays grow with what was actually read,
 * so memory tracks the real file and never a count written in it.
 */
#include "gguf/gguf.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/utf8.h"
#include "platform/platform.h"
#include "quant/quant.h"

#define GGUF_MAX_KEY_LEN 65535u   /* the spec's limit on key length */
#define GGUF_MAX_NAME_LEN 4096u   /* far above ggml's 64, still a sanity bound */
#define GGUF_MAX_ARRAY_DEPTH 4    /* arrays of arrays of ... */
#define GGUF_MAX_ALIGNMENT (1u << 20)

struct gguf_file {
    plat_map map;      /* the file's mapping, or the caller's buffer (gguf_open_memory) */
    bool owns_map;     /* whether gguf_close unmaps it */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    gguf_kv *kvs;
    size_t n_kv, cap_kv;
    gguf_tensor *tensors;
    size_t n_tensors, cap_tensors;
    struct gguf_file **parts; /* a split model's other files (gguf-split), whose tensors are listed above */
    size_t n_parts;
    uint64_t total_size;      /* every file's bytes */
};

/* ---- bounds-checked reading ---- */

typedef struct reader {
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    brasa_error *err;
    char where[160]; /* what is being read, for messages: "kv 3 'general.name'" */
} reader;

static uint64_t remaining(const reader *r) {
    return r->size - r->pos;
}

static bool fail_truncated(reader *r, const char *what, uint64_t need) {
    err_set(r->err, BRASA_ERR_FORMAT, "%s%s%s: needs %llu bytes at byte %llu, past the end of the %llu-byte file",
            r->where, r->where[0] ? ": " : "", what, (unsigned long long)need, (unsigned long long)r->pos,
            (unsigned long long)r->size);
    return false;
}

static bool rd_bytes(reader *r, uint64_t n, const uint8_t **out, const char *what) {
    if (n > remaining(r))
        return fail_truncated(r, what, n);
    *out = r->base + r->pos;
    r->pos += n;
    return true;
}

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static bool rd_u32(reader *r, uint32_t *out, const char *what) {
    const uint8_t *p = NULL;
    if (!rd_bytes(r, 4, &p, what))
        return false;
    *out = (uint32_t)le(p, 4);
    return true;
}

static bool rd_u64(reader *r, uint64_t *out, const char *what) {
    const uint8_t *p = NULL;
    if (!rd_bytes(r, 8, &p, what))
        return false;
    *out = le(p, 8);
    return true;
}

static bool rd_str(reader *r, gguf_str *s, const char *what) {
    uint64_t len;
    uint64_t at = r->pos;
    if (!rd_u64(r, &len, what))
        return false;
    if (len > remaining(r)) {
        err_set(r->err, BRASA_ERR_FORMAT,
                "%s%s%s: length %llu at byte %llu runs past the end of the %llu-byte file", r->where,
                r->where[0] ? ": " : "", what, (unsigned long long)len, (unsigned long long)at,
                (unsigned long long)r->size);
        return false;
    }
    s->data = (const char *)r->base + r->pos;
    s->len = len;
    r->pos += len;
    return true;
}

/* Whether s is well-formed UTF-8 with no NUL (for names that become C strings). */
static bool name_is_clean(const gguf_str *s) {
    return memchr(s->data, 0, (size_t)s->len) == NULL && utf8_is_valid(s->data, (size_t)s->len);
}

static char *copy_name(reader *r, const gguf_str *s, const char *what) {
    if (!name_is_clean(s)) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: %s is not valid UTF-8 text (or holds a NUL byte)", r->where, what);
        return NULL;
    }
    char *c = malloc((size_t)s->len + 1);
    if (!c) {
        err_set(r->err, BRASA_ERR_NO_MEMORY, "%s: out of memory", r->where);
        return NULL;
    }
    memcpy(c, s->data, (size_t)s->len);
    c[s->len] = '\0';
    return c;
}

/* ---- values ---- */

static const uint8_t scalar_size[GGUF_TYPE_COUNT] = {
    [GGUF_TYPE_UINT8] = 1, [GGUF_TYPE_INT8] = 1, [GGUF_TYPE_UINT16] = 2, [GGUF_TYPE_INT16] = 2,
    [GGUF_TYPE_UINT32] = 4, [GGUF_TYPE_INT32] = 4, [GGUF_TYPE_FLOAT32] = 4, [GGUF_TYPE_BOOL] = 1,
    [GGUF_TYPE_UINT64] = 8, [GGUF_TYPE_INT64] = 8, [GGUF_TYPE_FLOAT64] = 8,
};

const char *gguf_type_name(gguf_type t) {
    static const char *names[GGUF_TYPE_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
    };
    return (unsigned)t < GGUF_TYPE_COUNT ? names[t] : "unknown";
}

/* Skips over one value of type t, checking it fits. depth limits arrays of arrays. */
static bool skip_value(reader *r, uint32_t t, int depth) {
    if (t >= GGUF_TYPE_COUNT) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: unknown value type %u at byte %llu", r->where, t,
                (unsigned long long)(r->pos - 4));
        return false;
    }
    const uint8_t *p = NULL;
    if (t == GGUF_TYPE_STRING) {
        gguf_str s;
        return rd_str(r, &s, "string");
    }
    if (t == GGUF_TYPE_BOOL) {
        if (!rd_bytes(r, 1, &p, "bool"))
            return false;
        if (*p > 1) {
            err_set(r->err, BRASA_ERR_FORMAT, "%s: bool value %u is neither 0 nor 1", r->where, *p);
            return false;
        }
        return true;
    }
    if (t != GGUF_TYPE_ARRAY)
        return rd_bytes(r, scalar_size[t], &p, gguf_type_name((gguf_type)t));

    if (depth >= GGUF_MAX_ARRAY_DEPTH) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: arrays nested deeper than %d", r->where, GGUF_MAX_ARRAY_DEPTH);
        return false;
    }
    uint32_t et;
    uint64_t count;
    if (!rd_u32(r, &et, "array element type") || !rd_u64(r, &count, "array length"))
        return false;
    if (et >= GGUF_TYPE_COUNT) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: unknown array element type %u", r->where, et);
        return false;
    }
    if (et == GGUF_TYPE_STRING || et == GGUF_TYPE_ARRAY || et == GGUF_TYPE_BOOL) {
        /* each element takes at least 1 byte (8 for strings, 12 for arrays): reject impossible
         * counts before walking them */
        uint64_t min = et == GGUF_TYPE_STRING ? 8 : et == GGUF_TYPE_ARRAY ? 12 : 1;
        if (count > remaining(r) / min) {
            err_set(r->err, BRASA_ERR_FORMAT,
                    "%s: array of %llu %s elements cannot fit in the %llu bytes left in the file", r->where,
                    (unsigned long long)count, gguf_type_name((gguf_type)et), (unsigned long long)remaining(r));
            return false;
        }
        for (uint64_t i = 0; i < count; i++)
            if (!skip_value(r, et, depth + 1))
                return false;
        return true;
    }
    uint64_t bytes;
    if (!ck_mul_u64(count, scalar_size[et], &bytes) || bytes > remaining(r)) {
        err_set(r->err, BRASA_ERR_FORMAT,
                "%s: array of %llu %s elements at byte %llu runs past the end of the %llu-byte file", r->where,
                (unsigned long long)count, gguf_type_name((gguf_type)et), (unsigned long long)r->pos,
                (unsigned long long)r->size);
        return false;
    }
    return rd_bytes(r, bytes, &p, "array");
}

static bool grow(void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 16;
    if (c > SIZE_MAX / elem)
        return false;
    void *p = realloc(*arr, c * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

static bool read_kv(gguf_file *f, reader *r, uint64_t index) {
    snprintf(r->where, sizeof r->where, "kv %llu", (unsigned long long)index);
    gguf_str key;
    if (!rd_str(r, &key, "key"))
        return false;
    if (key.len == 0 || key.len > GGUF_MAX_KEY_LEN) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: key length %llu is outside 1..%u", r->where,
                (unsigned long long)key.len, GGUF_MAX_KEY_LEN);
        return false;
    }
    char *name = copy_name(r, &key, "the key");
    if (!name)
        return false;
    if (!grow((void **)&f->kvs, &f->cap_kv, f->n_kv, sizeof *f->kvs)) {
        free(name);
        err_set(r->err, BRASA_ERR_NO_MEMORY, "out of memory reading metadata");
        return false;
    }
    gguf_kv *kv = &f->kvs[f->n_kv];
    memset(kv, 0, sizeof *kv);
    kv->key = name;
    f->n_kv++; /* owned by f from here, freed by gguf_close */
    snprintf(r->where, sizeof r->where, "kv %llu '%.100s'", (unsigned long long)index, name);

    uint32_t t;
    if (!rd_u32(r, &t, "value type"))
        return false;
    if (t >= GGUF_TYPE_COUNT) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: unknown value type %u", r->where, t);
        return false;
    }
    kv->type = (gguf_type)t;
    kv->count = 1;
    uint64_t start = r->pos;
    if (t == GGUF_TYPE_ARRAY) {
        /* peek at the element type and count; skip_value checks the whole array */
        uint32_t et;
        uint64_t count;
        reader peek = *r;
        if (!rd_u32(&peek, &et, "array element type") || !rd_u64(&peek, &count, "array length"))
            return false;
        kv->elem_type = (gguf_type)et;
        kv->count = count;
        start = peek.pos;
    }
    if (!skip_value(r, t, 0))
        return false;
    kv->value = r->base + start;
    kv->value_bytes = r->pos - start;
    return true;
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Finds a name that appears twice among n names (each at stride bytes from the previous). */
static const char *find_duplicate(const void *items, size_t n, size_t stride, size_t field) {
    if (n < 2)
        return NULL;
    const char **names = malloc(n * sizeof *names);
    if (!names)
        return NULL;
    for (size_t i = 0; i < n; i++)
        memcpy(&names[i], (const char *)items + i * stride + field, sizeof(const char *));
    qsort(names, n, sizeof *names, cmp_str_ptr);
    const char *dup = NULL;
    for (size_t i = 1; i < n && !dup; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            dup = names[i];
    free(names);
    return dup;
}

static bool read_tensor_info(gguf_file *f, reader *r, uint64_t index) {
    snprintf(r->where, sizeof r->where, "tensor %llu", (unsigned long long)index);
    gguf_str s;
    if (!rd_str(r, &s, "name"))
        return false;
    if (s.len == 0 || s.len > GGUF_MAX_NAME_LEN) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: name length %llu is outside 1..%u", r->where,
                (unsigned long long)s.len, GGUF_MAX_NAME_LEN);
        return false;
    }
    char *name = copy_name(r, &s, "the name");
    if (!name)
        return false;
    if (!grow((void **)&f->tensors, &f->cap_tensors, f->n_tensors, sizeof *f->tensors)) {
        free(name);
        err_set(r->err, BRASA_ERR_NO_MEMORY, "out of memory reading tensor infos");
        return false;
    }
    gguf_tensor *t = &f->tensors[f->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = name;
    f->n_tensors++;
    snprintf(r->where, sizeof r->where, "tensor %llu '%.100s'", (unsigned long long)index, name);

    if (!rd_u32(r, &t->n_dims, "dimension count"))
        return false;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: %u dimensions (must be 1 to %d)", r->where, t->n_dims, GGUF_MAX_DIMS);
        return false;
    }
    int64_t n = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        uint64_t ne = 1;
        if ((uint32_t)d < t->n_dims && !rd_u64(r, &ne, "dimension"))
            return false;
        if (ne == 0 || ne > (uint64_t)INT64_MAX) {
            err_set(r->err, BRASA_ERR_FORMAT, "%s: dimension %d is %llu (must be 1 to 2^63-1)", r->where, d,
                    (unsigned long long)ne);
            return false;
        }
        t->ne[d] = (int64_t)ne;
        if (!ck_mul_i64(n, t->ne[d], &n)) {
            err_set(r->err, BRASA_ERR_FORMAT, "%s: the element count overflows 64 bits", r->where);
            return false;
        }
    }
    t->n_elements = n;
    if (!rd_u32(r, &t->type, "type"))
        return false;
    const quant_traits *q = quant_get(t->type);
    if (!q) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: unknown tensor type %u", r->where, t->type);
        return false;
    }
    if (t->ne[0] % q->block_size != 0) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: %lld elements per row is not a multiple of the %s block size %d",
                r->where, (long long)t->ne[0], q->name, q->block_size);
        return false;
    }
    uint64_t row;
    if (!quant_row_bytes(t->type, t->ne[0], &row) || !ck_mul_u64(row, (uint64_t)(n / t->ne[0]), &t->bytes)) {
        err_set(r->err, BRASA_ERR_FORMAT, "%s: the byte size overflows 64 bits", r->where);
        return false;
    }
    return rd_u64(r, &t->offset, "data offset");
}

static bool check_alignment(gguf_file *f, reader *r) {
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find(f, "general.alignment");
    if (!kv)
        return true;
    if (kv->type != GGUF_TYPE_UINT32) {
        err_set(r->err, BRASA_ERR_FORMAT, "general.alignment has type %s (must be u32)", gguf_type_name(kv->type));
        return false;
    }
    uint32_t a = (uint32_t)le(kv->value, 4);
    if (a == 0 || (a & (a - 1)) != 0 || a > GGUF_MAX_ALIGNMENT) {
        err_set(r->err, BRASA_ERR_FORMAT, "general.alignment %u is not a power of two up to %u", a, GGUF_MAX_ALIGNMENT);
        return false;
    }
    f->alignment = a;
    return true;
}

static int cmp_tensor_offset(const void *a, const void *b) {
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static bool check_tensor_data(gguf_file *f, reader *r) {
    for (size_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        uint64_t start = 0, end = 0;
        if (t->offset % f->alignment != 0) {
            err_set(r->err, BRASA_ERR_FORMAT, "tensor %zu '%s': data offset %llu is not a multiple of the alignment %u",
                    i, t->name, (unsigned long long)t->offset, f->alignment);
            return false;
        }
        if (!ck_add_u64(f->data_offset, t->offset, &start) || !ck_add_u64(start, t->bytes, &end) || end > r->size) {
            err_set(r->err, BRASA_ERR_FORMAT,
                    "tensor %zu '%s': data ends at byte %s%llu, past the end of the %llu-byte file", i, t->name,
                    end < start ? "over " : "", (unsigned long long)(end < start ? UINT64_MAX : end),
                    (unsigned long long)r->size);
            return false;
        }
        t->file_offset = start;
        t->data = r->base + start;
    }
    /* Overlapping tensors mean a forged file: one write to a weight would silently change another. */
    if (f->n_tensors > 1) {
        gguf_tensor **order = malloc(f->n_tensors * sizeof *order); // NOLINT(bugprone-sizeof-expression): an array of pointers
        if (!order) {
            err_set(r->err, BRASA_ERR_NO_MEMORY, "out of memory checking tensor layout");
            return false;
        }
        for (size_t i = 0; i < f->n_tensors; i++)
            order[i] = &f->tensors[i];
        qsort(order, f->n_tensors, sizeof *order, cmp_tensor_offset); // NOLINT(bugprone-sizeof-expression)
        for (size_t i = 1; i < f->n_tensors; i++) {
            if (order[i - 1]->offset + order[i - 1]->bytes > order[i]->offset) {
                err_set(r->err, BRASA_ERR_FORMAT, "tensors '%s' and '%s' overlap in the file", order[i - 1]->name,
                        order[i]->name);
                free(order);
                return false;
            }
        }
        free(order);
    }
    return true;
}

static bool parse(gguf_file *f, reader *r) {
    const uint8_t *magic;
    if (r->size < 4 || memcmp(r->base, "GGUF", 4) != 0) {
        if (r->size < 4)
            err_set(r->err, BRASA_ERR_FORMAT, "not a GGUF file: only %llu bytes", (unsigned long long)r->size);
        else
            err_set(r->err, BRASA_ERR_FORMAT, "not a GGUF file: it starts with %02x %02x %02x %02x, not \"GGUF\"",
                    r->base[0], r->base[1], r->base[2], r->base[3]);
        return false;
    }
    rd_bytes(r, 4, &magic, "magic");
    if (!rd_u32(r, &f->version, "version"))
        return false;
    if (f->version == 0x02000000u || f->version == 0x03000000u) {
        err_set(r->err, BRASA_ERR_UNSUPPORTED, "big-endian GGUF files are not supported");
        return false;
    }
    if (f->version == 1) {
        err_set(r->err, BRASA_ERR_UNSUPPORTED, "GGUF version 1 is not supported (only 2 and 3); convert the file again");
        return false;
    }
    if (f->version != 2 && f->version != 3) {
        err_set(r->err, BRASA_ERR_FORMAT, "unknown GGUF version %u (brasa reads 2 and 3)", f->version);
        return false;
    }
    uint64_t n_tensors, n_kv;
    if (!rd_u64(r, &n_tensors, "tensor count") || !rd_u64(r, &n_kv, "metadata count"))
        return false;
    /* The smallest kv takes 13 bytes and the smallest tensor info 32: counts beyond what the rest of
     * the file could hold are rejected before any work. */
    if (n_kv > remaining(r) / 13) {
        err_set(r->err, BRASA_ERR_FORMAT, "metadata count %llu is impossible in a %llu-byte file",
                (unsigned long long)n_kv, (unsigned long long)r->size);
        return false;
    }
    if (n_tensors > remaining(r) / 32) {
        err_set(r->err, BRASA_ERR_FORMAT, "tensor count %llu is impossible in a %llu-byte file",
                (unsigned long long)n_tensors, (unsigned long long)r->size);
        return false;
    }
    for (uint64_t i = 0; i < n_kv; i++)
        if (!read_kv(f, r, i))
            return false;
    r->where[0] = '\0';
    const char *dup = find_duplicate(f->kvs, f->n_kv, sizeof *f->kvs, offsetof(gguf_kv, key));
    if (dup) {
        err_set(r->err, BRASA_ERR_FORMAT, "metadata key '%s' appears twice", dup);
        return false;
    }
    if (!check_alignment(f, r))
        return false;
    for (uint64_t i = 0; i < n_tensors; i++)
        if (!read_tensor_info(f, r, i))
            return false;
    r->where[0] = '\0';
    dup = find_duplicate(f->tensors, f->n_tensors, sizeof *f->tensors, offsetof(gguf_tensor, name));
    if (dup) {
        err_set(r->err, BRASA_ERR_FORMAT, "tensor name '%s' appears twice", dup);
        return false;
    }
    uint64_t pad = (f->alignment - r->pos % f->alignment) % f->alignment;
    f->data_offset = r->pos + pad;
    if (f->n_tensors > 0 && f->data_offset > r->size) {
        err_set(r->err, BRASA_ERR_FORMAT, "the tensor data section would start at byte %llu, past the end of the %llu-byte file",
                (unsigned long long)f->data_offset, (unsigned long long)r->size);
        return false;
    }
    return check_tensor_data(f, r);
}

/* Parses the bytes f->map holds; on failure frees f. */
static brasa_status open_parsed(gguf_file *f, gguf_file **out, brasa_error *err) {
    brasa_error local;
    reader r = { f->map.data, f->map.size, 0, err ? err : &local, "" };
    if (!parse(f, &r)) {
        brasa_status st = r.err->status;
        gguf_close(f);
        return st;
    }
    *out = f;
    return BRASA_OK;
}

/* One file, mapped and parsed. */
static brasa_status open_file(const char *path, gguf_file **out, brasa_error *err) {
    *out = NULL;
    gguf_file *f = calloc(1, sizeof *f);
    if (!f)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    brasa_status st = plat_map_open(path, &f->map, err);
    if (st != BRASA_OK) {
        free(f);
        return st;
    }
    f->owns_map = true;
    return open_parsed(f, out, err);
}

/* A split model (llama.cpp's gguf-split): the first file, NAME-00001-of-0000N.gguf, holds the
 * metadata and split.count; every file holds split.no and some of the tensors, each in its own data
 * section. The other files are opened beside the first and their tensors listed after its own, so
 * that the model reads as one file. */
static brasa_status open_parts(gguf_file *f, const char *path, brasa_error *err) {
    int32_t count = 1, no = 0, total = -1;
    const bool split = gguf_get_i32(f, "split.count", &count);
    gguf_get_i32(f, "split.no", &no);
    if (!split || count == 1)
        return BRASA_OK;
    if (count < 1 || count > 99999 || no < 0 || no >= count)
        return err_set(err, BRASA_ERR_FORMAT, "split.no %d and split.count %d do not make sense", no, count);
    if (no != 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "this is part %d of %d of a split model: open the first part "
                       "(...-00001-of-%05d.gguf)", no + 1, count, count);
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-00001-of-%05d.gguf", count);
    const size_t len = strlen(path), slen = strlen(suffix);
    if (len <= slen || strcmp(path + len - slen, suffix) != 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "the first part of a model split in %d files must be named "
                       "NAME%s, as gguf-split names it, to find the others", count, suffix);
    f->parts = calloc((size_t)count - 1, sizeof(gguf_file *));
    char *part = malloc(len + 1);
    if (!f->parts || !part) {
        free(part);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    brasa_status st = BRASA_OK;
    for (int32_t k = 1; k < count && st == BRASA_OK; k++) {
        memcpy(part, path, len - slen);
        snprintf(part + len - slen, slen + 1, "-%05d-of-%05d.gguf", k + 1, count);
        gguf_file *p = NULL;
        brasa_error why;
        st = open_file(part, &p, &why);
        if (st != BRASA_OK || !p) {
            st = err_set(err, st != BRASA_OK ? st : BRASA_ERR_IO, "part %d of %d, %s: %s", k + 1, count, part,
                         why.message);
            break;
        }
        f->parts[f->n_parts++] = p;
        int32_t p_no = -1, p_count = -1;
        if (!gguf_get_i32(p, "split.no", &p_no) || !gguf_get_i32(p, "split.count", &p_count) || p_no != k ||
            p_count != count) {
            st = err_set(err, BRASA_ERR_FORMAT, "%s: says it is part %d of %d, not part %d of %d", part, p_no + 1,
                         p_count, k + 1, count);
            break;
        }
        if (f->n_tensors + p->n_tensors > f->cap_tensors) {
            const size_t cap = f->n_tensors + p->n_tensors;
            gguf_tensor *t = realloc(f->tensors, cap * sizeof *t);
            if (!t) {
                st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
                break;
            }
            f->tensors = t;
            f->cap_tensors = cap;
        }
        for (size_t i = 0; i < p->n_tensors && st == BRASA_OK; i++) {
            if (gguf_find_tensor(f, p->tensors[i].name))
                st = err_set(err, BRASA_ERR_FORMAT, "%s: tensor '%s' is also in an earlier part", part,
                             p->tensors[i].name);
            else
                f->tensors[f->n_tensors++] = p->tensors[i];
        }
        p->n_tensors = 0; /* the names now belong to f */
        f->total_size += p->map.size;
    }
    if (st == BRASA_OK && gguf_get_i32(f, "split.tensors.count", &total) && (size_t)total != f->n_tensors)
        st = err_set(err, BRASA_ERR_FORMAT, "split.tensors.count says %d tensors, the %d parts hold %zu", total, count,
                     f->n_tensors);
    free(part);
    return st;
}

brasa_status gguf_open(const char *path, gguf_file **out, brasa_error *err) {
    gguf_file *f = NULL;
    brasa_status st = open_file(path, &f, err);
    if (st == BRASA_OK && f)
        st = open_parts(f, path, err);
    if (st != BRASA_OK) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return BRASA_OK;
}

brasa_status gguf_open_memory(const uint8_t *data, size_t size, gguf_file **out, brasa_error *err) {
    *out = NULL;
    if (!data && size)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "gguf_open_memory: no data");
    gguf_file *f = calloc(1, sizeof *f);
    if (!f)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    f->map.data = data;
    f->map.size = size;
    return open_parsed(f, out, err);
}

void gguf_close(gguf_file *f) {
    if (!f)
        return;
    for (size_t i = 0; i < f->n_kv; i++)
        free((char *)f->kvs[i].key);
    for (size_t i = 0; i < f->n_tensors; i++)
        free((char *)f->tensors[i].name);
    free(f->kvs);
    free(f->tensors);
    for (size_t i = 0; i < f->n_parts; i++)
        gguf_close(f->parts[i]);
    free(f->parts);
    if (f->owns_map)
        plat_map_close(&f->map);
    free(f);
}

uint32_t gguf_version(const gguf_file *f) { return f->version; }
uint64_t gguf_file_size(const gguf_file *f) { return f->map.size + f->total_size; }
size_t gguf_part_count(const gguf_file *f) { return f->n_parts + 1; }
const void *gguf_image(const gguf_file *f) { return f->map.data; }
uint64_t gguf_data_offset(const gguf_file *f) {
    return f->data_offset;
}

uint32_t gguf_alignment(const gguf_file *f) { return f->alignment; }
size_t gguf_kv_count(const gguf_file *f) { return f->n_kv; }
const gguf_kv *gguf_kv_at(const gguf_file *f, size_t i) { return i < f->n_kv ? &f->kvs[i] : NULL; }
size_t gguf_tensor_count(const gguf_file *f) { return f->n_tensors; }
const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i) { return i < f->n_tensors ? &f->tensors[i] : NULL; }

const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
    for (size_t i = 0; i < f->n_kv; i++)
        if (strcmp(f->kvs[i].key, key) == 0)
            return &f->kvs[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    for (size_t i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

/* ---- typed access ---- */

bool gguf_type_is_integer(gguf_type t) {
    return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_INT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_INT16 ||
           t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_UINT64 || t == GGUF_TYPE_INT64 ||
           t == GGUF_TYPE_BOOL;
}

bool gguf_type_is_numeric(gguf_type t) {
    return gguf_type_is_integer(t) || t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64;
}

/* Reads element index of scalar type t at p; unsigned 64-bit values above INT64_MAX saturate. */
static int64_t int_at(gguf_type t, const uint8_t *p, uint64_t index) {
    p += index * scalar_size[t];
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_BOOL: return p[0];
    case GGUF_TYPE_INT8: return (int8_t)p[0];
    case GGUF_TYPE_UINT16: return (uint16_t)le(p, 2);
    case GGUF_TYPE_INT16: return (int16_t)(uint16_t)le(p, 2);
    case GGUF_TYPE_UINT32: return (uint32_t)le(p, 4);
    case GGUF_TYPE_INT32: return (int32_t)(uint32_t)le(p, 4);
    case GGUF_TYPE_UINT64: { uint64_t v = le(p, 8); return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }
    case GGUF_TYPE_INT64: return (int64_t)le(p, 8);
    default: return 0;
    }
}

static double float_at(gguf_type t, const uint8_t *p, uint64_t index) {
    if (t == GGUF_TYPE_FLOAT32) {
        uint32_t u = (uint32_t)le(p + index * 4, 4);
        float fl;
        memcpy(&fl, &u, 4);
        return fl;
    }
    if (t == GGUF_TYPE_FLOAT64) {
        uint64_t u = le(p + index * 8, 8);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    return (double)int_at(t, p, index);
}

int64_t gguf_kv_int_at(const gguf_kv *kv, uint64_t index) {
    gguf_type t = kv->type == GGUF_TYPE_ARRAY ? kv->elem_type : kv->type;
    if (!gguf_type_is_integer(t) || index >= kv->count)
        return 0;
    return int_at(t, kv->value, index);
}

double gguf_kv_float_at(const gguf_kv *kv, uint64_t index) {
    gguf_type t = kv->type == GGUF_TYPE_ARRAY ? kv->elem_type : kv->type;
    if (!gguf_type_is_numeric(t) || index >= kv->count)
        return 0.0;
    return float_at(t, kv->value, index);
}

void gguf_iter_init(gguf_iter *it, const gguf_kv *kv) {
    it->kv = kv;
    it->pos = kv->value;
    it->index = 0;
}

/* Safe without bounds checks: gguf_open walked this exact array and proved every string fits. */
bool gguf_iter_next_str(gguf_iter *it, gguf_str *out) {
    const gguf_kv *kv = it->kv;
    bool is_str_array = kv->type == GGUF_TYPE_ARRAY && kv->elem_type == GGUF_TYPE_STRING;
    bool is_str = kv->type == GGUF_TYPE_STRING;
    if ((!is_str_array && !is_str) || it->index >= kv->count)
        return false;
    out->len = le(it->pos, 8);
    out->data = (const char *)it->pos + 8;
    it->pos += 8 + out->len;
    it->index++;
    return true;
}

bool gguf_kv_str_at(const gguf_kv *kv, uint64_t index, gguf_str *out) {
    gguf_iter it;
    gguf_iter_init(&it, kv);
    for (;;) {
        if (!gguf_iter_next_str(&it, out))
            return false;
        if (it.index == index + 1)
            return true;
    }
}

bool gguf_get_i64(const gguf_file *f, const char *key, int64_t *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type == GGUF_TYPE_ARRAY || !gguf_type_is_integer(kv->type) || kv->type == GGUF_TYPE_BOOL)
        return false;
    if (kv->type == GGUF_TYPE_UINT64 && le(kv->value, 8) > (uint64_t)INT64_MAX)
        return false;
    *out = int_at(kv->type, kv->value, 0);
    return true;
}

bool gguf_get_i32(const gguf_file *f, const char *key, int32_t *out) {
    int64_t v;
    if (!gguf_get_i64(f, key, &v) || v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

bool gguf_get_f32(const gguf_file *f, const char *key, float *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type == GGUF_TYPE_ARRAY || !gguf_type_is_numeric(kv->type) || kv->type == GGUF_TYPE_BOOL)
        return false;
    *out = (float)float_at(kv->type, kv->value, 0);
    return true;
}

bool gguf_get_bool(const gguf_file *f, const char *key, bool *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type != GGUF_TYPE_BOOL)
        return false;
    *out = kv->value[0] != 0;
    return true;
}

bool gguf_get_str(const gguf_file *f, const char *key, gguf_str *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type != GGUF_TYPE_STRING)
        return false;
    gguf_iter it;
    gguf_iter_init(&it, kv);
    return gguf_iter_next_str(&it, out);
}
