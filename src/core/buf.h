/* buf.h: growable byte and token arrays for building outputs whose size is not known up front.
 * Growth is checked; a failed growth leaves the contents intact and returns false. */
#ifndef BRASA_CORE_BUF_H
#define BRASA_CORE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct buf {
    char *data;
    size_t len, cap;
} buf;

static inline bool buf_reserve(buf *b, size_t extra) {
    if (extra > SIZE_MAX - b->len)
        return false;
    size_t need = b->len + extra;
    if (need <= b->cap && b->data)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return false;
    b->data = p;
    b->cap = cap;
    return true;
}

static inline bool buf_append(buf *b, const void *data, size_t len) {
    if (!buf_reserve(b, len))
        return false;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    return true;
}

static inline void buf_free(buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* A copy of the NUL-terminated s in its own allocation (C11 has no strdup); NULL for a NULL s or
 * when memory runs out. */
static inline char *buf_str_copy(const char *s) {
    if (!s)
        return NULL;
    const size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

typedef struct ivec {
    int32_t *data;
    size_t len, cap;
} ivec;

static inline bool ivec_push(ivec *v, int32_t x) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof(int32_t))
            return false;
        int32_t *p = realloc(v->data, cap * sizeof(int32_t));
        if (!p)
            return false;
        v->data = p;
        v->cap = cap;
    }
    v->data[v->len++] = x;
    return true;
}

static inline void ivec_free(ivec *v) {
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

#endif
