/* gguf.h: a validating reader for GGUF files, versions 2 and 3.
 *
 * The file is memory-mapped; gguf_open walks the whole header once and checks every count, length,
 * offset, type and dimension against the file size with overflow-checked arithmetic before anything
 * is used, so the accessors below never fail on a file that opened. Strings in the file are not
 * NUL-terminated there; keys and tensor names are copied out (their total is bounded by the file
 * size), metadata string values are read in place through gguf_str.
 */
#ifndef BRASA_GGUF_H
#define BRASA_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"

typedef enum gguf_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_type;

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

typedef struct gguf_str {
    const char *data; /* in the mapping; not NUL-terminated */
    uint64_t len;
} gguf_str;

typedef struct gguf_kv {
    const char *key;   /* NUL-terminated copy */
    gguf_type type;
    gguf_type elem_type;    /* for arrays */
    uint64_t count;         /* array length, 1 for scalars */
    const uint8_t *value;   /* where the value (or the first array element) starts in the file */
    uint64_t value_bytes;   /* bytes the value occupies in the file */
} gguf_kv;

typedef struct gguf_tensor {
    const char *name;  /* NUL-terminated copy */
    uint32_t type;     /* quant_type number, validated */
    uint32_t n_dims;
    int64_t ne[GGUF_MAX_DIMS]; /* unused dimensions are 1 */
    int64_t n_elements;
    uint64_t offset;   /* relative to the data section, as in the file */
    uint64_t file_offset; /* from the start of the file */
    uint64_t bytes;
    const void *data;  /* in the mapping */
} gguf_tensor;

typedef struct gguf_file gguf_file;

/* A model split by gguf-split opens from its first part (NAME-00001-of-0000N.gguf): the other
 * parts are opened beside it and their tensors listed with its own, each in its own mapping. */
brasa_status gguf_open(const char *path, gguf_file **out, brasa_error *err);
/* As gguf_open, on a GGUF image already in memory (a fuzzer's input, a test's fixture): the caller
 * keeps ownership of data, which must outlive the gguf_file since strings and tensors point into it. */
brasa_status gguf_open_memory(const uint8_t *data, size_t size, gguf_file **out, brasa_error *err);
void gguf_close(gguf_file *f);

uint32_t gguf_version(const gguf_file *f);
uint64_t gguf_file_size(const gguf_file *f); /* every part's bytes */
/* 1, or the number of files of a split model (whose tensors are then not all in gguf_image). */
size_t gguf_part_count(const gguf_file *f);
/* The (first) file's image (the mapping, page-aligned, or the caller's buffer); gguf_file_size bytes
 * when the model is one file. */
const void *gguf_image(const gguf_file *f);
uint32_t gguf_alignment(const gguf_file *f);
/* Bytes of the (first) file before its tensor data: the header, the metadata and the tensor table. */
uint64_t gguf_data_offset(const gguf_file *f);

size_t gguf_kv_count(const gguf_file *f);
const gguf_kv *gguf_kv_at(const gguf_file *f, size_t i);
const gguf_kv *gguf_find(const gguf_file *f, const char *key); /* NULL when absent */
const char *gguf_type_name(gguf_type t);

/* Scalar getters: false when the key is absent or its type cannot be converted without loss.
 * Integers of any width convert to each other when the value fits; floats convert to float. */
bool gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
bool gguf_get_i32(const gguf_file *f, const char *key, int32_t *out);
bool gguf_get_f32(const gguf_file *f, const char *key, float *out);
bool gguf_get_bool(const gguf_file *f, const char *key, bool *out);
bool gguf_get_str(const gguf_file *f, const char *key, gguf_str *out);

/* Reading values of a kv. For scalars index is 0. Strings in string arrays are found by walking,
 * so reading them in order with gguf_iter is linear; gguf_kv_str_at is for the occasional lookup. */
typedef struct gguf_iter {
    const gguf_kv *kv;
    const uint8_t *pos;
    uint64_t index;
} gguf_iter;

void gguf_iter_init(gguf_iter *it, const gguf_kv *kv);
bool gguf_iter_next_str(gguf_iter *it, gguf_str *out); /* for arrays of strings */
int64_t gguf_kv_int_at(const gguf_kv *kv, uint64_t index);    /* integer (and bool) arrays / scalars */
double gguf_kv_float_at(const gguf_kv *kv, uint64_t index);   /* any numeric type */
bool gguf_kv_str_at(const gguf_kv *kv, uint64_t index, gguf_str *out);
bool gguf_type_is_integer(gguf_type t);
bool gguf_type_is_numeric(gguf_type t);

size_t gguf_tensor_count(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

#endif
