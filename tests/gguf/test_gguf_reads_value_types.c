/* test_gguf_reads_value_types: a GGUF file (v3, then v2) written here with one key of every value type (and
 * arrays of numbers, strings and arrays) reads back exactly, with the tensor data where it belongs;
 * and the typed getters refuse lossy conversions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

static int failures;
#define CHECK(cond)                                                                                 \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                \
            failures++;                                                                             \
        }                                                                                           \
    } while (0)

static unsigned char file[4096];
static size_t pos;

static void put(const void *p, size_t n) { memcpy(file + pos, p, n); pos += n; }
static void u32(uint32_t v) { put(&v, 4); } /* the test host is little-endian, like the format */
static void u64(uint64_t v) { put(&v, 8); }
static void str(const char *s) { u64(strlen(s)); put(s, strlen(s)); }
static void key(const char *k, uint32_t type) { str(k); u32(type); }

int main(void) {
    put("GGUF", 4);
    u32(3);
    u64(1);  /* tensors */
    u64(16); /* kvs */
    key("t.u8", GGUF_TYPE_UINT8); put("\xfe", 1);
    key("t.i8", GGUF_TYPE_INT8); put("\xfe", 1);
    key("t.u16", GGUF_TYPE_UINT16); put("\x34\x12", 2);
    key("t.i16", GGUF_TYPE_INT16); put("\xff\xff", 2);
    key("t.u32", GGUF_TYPE_UINT32); u32(4000000000u);
    key("t.i32", GGUF_TYPE_INT32); u32((uint32_t)-7);
    key("t.f32", GGUF_TYPE_FLOAT32); { float f = 1.5f; put(&f, 4); }
    key("t.bool", GGUF_TYPE_BOOL); put("\x01", 1);
    key("t.str", GGUF_TYPE_STRING); str("¿Qué tal?");
    key("t.u64", GGUF_TYPE_UINT64); u64(1ull << 40);
    key("t.i64", GGUF_TYPE_INT64); u64((uint64_t)-5);
    key("t.f64", GGUF_TYPE_FLOAT64); { double d = -2.25; put(&d, 8); }
    key("t.arr_i32", GGUF_TYPE_ARRAY); u32(GGUF_TYPE_INT32); u64(3); u32(1); u32(2); u32((uint32_t)-3);
    key("t.arr_str", GGUF_TYPE_ARRAY); u32(GGUF_TYPE_STRING); u64(2); str("uno"); str("ñandú");
    key("t.arr_arr", GGUF_TYPE_ARRAY); u32(GGUF_TYPE_ARRAY); u64(1); u32(GGUF_TYPE_UINT8); u64(2); put("\x01\x02", 2);
    key("general.alignment", GGUF_TYPE_UINT32); u32(64);
    str("w"); u32(2); u64(4); u64(2); u32(0 /* f32 */); u64(0);
    size_t data = (pos + 63) / 64 * 64;
    memset(file + pos, 0, data - pos);
    pos = data;
    for (int i = 0; i < 8; i++) {
        float f = (float)i;
        put(&f, 4);
    }
    const char *path = "test_gguf_value_types.gguf";
    FILE *out = fopen(path, "wb");
    if (!out || fwrite(file, 1, pos, out) != pos || fclose(out) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }

    gguf_file *f = NULL;
    brasa_error err;
    CHECK(gguf_open(path, &f, &err) == BRASA_OK);
    if (!f) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int64_t i;
    float fl;
    bool b;
    gguf_str s;
    CHECK(gguf_kv_count(f) == 16 && gguf_alignment(f) == 64);
    CHECK(gguf_get_i64(f, "t.u8", &i) && i == 254);
    CHECK(gguf_get_i64(f, "t.i8", &i) && i == -2);
    CHECK(gguf_get_i64(f, "t.u16", &i) && i == 0x1234);
    CHECK(gguf_get_i64(f, "t.i16", &i) && i == -1);
    CHECK(gguf_get_i64(f, "t.u32", &i) && i == 4000000000ll);
    int32_t i32;
    CHECK(!gguf_get_i32(f, "t.u32", &i32)); /* does not fit: refused, not wrapped */
    CHECK(gguf_get_i32(f, "t.i32", &i32) && i32 == -7);
    CHECK(gguf_get_f32(f, "t.f32", &fl) && fl == 1.5f);
    CHECK(gguf_get_bool(f, "t.bool", &b) && b);
    CHECK(gguf_get_str(f, "t.str", &s) && s.len == strlen("¿Qué tal?") && memcmp(s.data, "¿Qué tal?", s.len) == 0);
    CHECK(gguf_get_i64(f, "t.u64", &i) && i == 1ll << 40);
    CHECK(gguf_get_i64(f, "t.i64", &i) && i == -5);
    CHECK(gguf_get_f32(f, "t.f64", &fl) && fl == -2.25f);
    CHECK(!gguf_get_i64(f, "t.str", &i) && !gguf_get_str(f, "t.u8", &s) && !gguf_get_i64(f, "missing", &i));
    const gguf_kv *kv = gguf_find(f, "t.arr_i32");
    CHECK(kv && kv->count == 3 && gguf_kv_int_at(kv, 2) == -3);
    kv = gguf_find(f, "t.arr_str");
    CHECK(kv && kv->count == 2 && gguf_kv_str_at(kv, 1, &s) && s.len == strlen("ñandú"));
    kv = gguf_find(f, "t.arr_arr");
    CHECK(kv && kv->elem_type == GGUF_TYPE_ARRAY && kv->count == 1);
    const gguf_tensor *t = gguf_find_tensor(f, "w");
    CHECK(t && t->ne[0] == 4 && t->ne[1] == 2 && t->n_elements == 8 && t->bytes == 32);
    CHECK(t && t->file_offset == data && ((const float *)t->data)[7] == 7.0f);
    gguf_close(f);

    /* version 2 has the same layout (64-bit counts) and must read the same */
    file[4] = 2;
    out = fopen(path, "wb");
    if (!out || fwrite(file, 1, pos, out) != pos || fclose(out) != 0)
        return 1;
    f = NULL;
    CHECK(gguf_open(path, &f, &err) == BRASA_OK && f && gguf_version(f) == 2 && gguf_kv_count(f) == 16);
    gguf_close(f);
    remove(path);
    printf("gguf value types: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
