/* jinja_value.c: the run-time values of a render with Python's meaning (truth, equality, order,
 * str() and repr(), json.dumps) and their memory: reference counts free values early, a list of
 * every live value frees the rest (cycles, error paths) when the render ends, and every string
 * carries the byte ranges that came from data so that provenance survives concatenation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "template/jinja_internal.h"
#include "tokenizer/unicode.h"

/* Containers nested deeper than this are refused by printing, comparing and serializing (Python
 * raises RecursionError far deeper; real data is a few levels deep). */
#define MAX_VALUE_DEPTH 200

bool jx_fail(jctx *cx, const jnode *at, const char *fmt, ...) {
    if (!cx->failed) {
        char msg[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        err_set(cx->err, BRASA_ERR_FORMAT, "line %d: %s", at ? at->line : 0, msg);
        cx->failed = true;
    }
    return false;
}

bool jx_step(jctx *cx, const jnode *at, uint64_t n) {
    cx->steps += n;
    if (cx->steps > cx->limits.max_steps)
        return jx_fail(cx, at, "template ran more than %llu steps", (unsigned long long)cx->limits.max_steps);
    return true;
}

/* ---- Memory ------------------------------------------------------------------------------------ */

void *jx_alloc(jctx *cx, const jnode *at, size_t bytes, jv_type type) {
    if (bytes > cx->limits.max_memory || cx->live_bytes > cx->limits.max_memory - bytes) {
        jx_fail(cx, at, "template values use more than %zu bytes", cx->limits.max_memory);
        return NULL;
    }
    jobj *o = calloc(1, bytes);
    if (!o) {
        jx_fail(cx, at, "out of memory");
        return NULL;
    }
    o->refs = 1;
    o->bytes = bytes;
    o->type = type;
    o->next = cx->objects.next;
    o->prev = &cx->objects;
    if (o->next)
        o->next->prev = o;
    cx->objects.next = o;
    cx->live_bytes += bytes;
    return o;
}

bool jx_grow(jctx *cx, const jnode *at, jobj *o, void **array, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 4;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    if (n > SIZE_MAX / elem)
        return jx_fail(cx, at, "out of memory");
    size_t more = (n - *cap) * elem;
    if (more > cx->limits.max_memory || cx->live_bytes > cx->limits.max_memory - more)
        return jx_fail(cx, at, "template values use more than %zu bytes", cx->limits.max_memory);
    void *p = realloc(*array, n * elem);
    if (!p)
        return jx_fail(cx, at, "out of memory");
    *array = p;
    *cap = n;
    o->bytes += more;
    cx->live_bytes += more;
    return true;
}

static jobj *obj_of(jv v) {
    switch (v.type) {
    case JV_STR: case JV_LIST: case JV_DICT: case JV_NS: case JV_MACRO: case JV_METHOD: case JV_LOOP:
        return v.u.obj;
    default:
        return NULL;
    }
}

void jv_incref(jv v) {
    jobj *o = obj_of(v);
    if (o)
        o->refs++;
}

/* Frees o's own memory; with children, drops its references to other values. */
static void destroy(jctx *cx, jobj *o, bool children) {
    switch (o->type) {
    case JV_STR: free(((jstr *)o)->spans); break;
    case JV_LIST: {
        jlist *l = (jlist *)o;
        for (size_t i = 0; children && i < l->len; i++)
            jv_decref(cx, l->items[i]);
        free(l->items);
        break;
    }
    case JV_DICT: case JV_NS: {
        jdict *d = (jdict *)o;
        for (size_t i = 0; children && i < d->len; i++) {
            jv_decref(cx, d->keys[i]);
            jv_decref(cx, d->vals[i]);
        }
        free(d->keys);
        free(d->vals);
        break;
    }
    case JV_MACRO: {
        jmacro *m = (jmacro *)o;
        if (children) {
            if (m->closure)
                jx_release(cx, &m->closure->h);
            jv_decref(cx, m->caller);
        }
        break;
    }
    case JV_METHOD:
        if (children)
            jv_decref(cx, ((jmethod *)o)->self);
        break;
    case JV_LOOP:
        if (children)
            jv_decref(cx, ((jloop *)o)->items);
        break;
    case JV_UNDEF: { /* a frame */
        jframe *f = (jframe *)o;
        for (size_t i = 0; children && i < f->len; i++)
            jv_decref(cx, f->vals[i]);
        if (children && f->parent)
            jx_release(cx, &f->parent->h);
        free(f->names);
        free(f->name_lens);
        free(f->vals);
        break;
    }
    default: break;
    }
    o->prev->next = o->next;
    if (o->next)
        o->next->prev = o->prev;
    cx->live_bytes -= o->bytes;
    free(o);
}

void jx_release(jctx *cx, jobj *o) {
    if (!o || --o->refs > 0)
        return;
    if (cx->releasing) {
        /* freed by the loop below; when the list cannot grow it waits for the end of the render */
        if (cx->n_dying == cx->cap_dying) {
            size_t cap = cx->cap_dying ? cx->cap_dying * 2 : 64;
            jobj **d = realloc(cx->dying, cap * sizeof(jobj *));
            if (!d)
                return;
            cx->dying = d;
            cx->cap_dying = cap;
        }
        cx->dying[cx->n_dying++] = o;
        return;
    }
    cx->releasing = true;
    destroy(cx, o, true);
    while (cx->n_dying > 0)
        destroy(cx, cx->dying[--cx->n_dying], true);
    cx->releasing = false;
}

void jv_decref(jctx *cx, jv v) { jx_release(cx, obj_of(v)); }

void jx_free_all(jctx *cx) {
    while (cx->objects.next)
        destroy(cx, cx->objects.next, false);
    free(cx->dying);
    cx->dying = NULL;
    cx->n_dying = cx->cap_dying = 0;
}

/* ---- Strings ----------------------------------------------------------------------------------- */

const char *jx_find(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0)
        return hay;
    for (size_t i = 0; m <= n && i <= n - m; i++) {
        const char *hit = memchr(hay + i, needle[0], n - m + 1 - i);
        if (!hit)
            return NULL;
        i = (size_t)(hit - hay);
        if (memcmp(hit, needle, m) == 0)
            return hit;
    }
    return NULL;
}

size_t jx_utf8_count(const char *p, size_t n) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += ((unsigned char)p[i] & 0xc0) != 0x80;
    return count;
}

size_t jx_utf8_offset(const char *p, size_t n, size_t cp_index) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)p[i] & 0xc0) != 0x80) {
            if (count == cp_index)
                return i;
            count++;
        }
    }
    return n;
}

static bool new_string(jctx *cx, const jnode *at, size_t n, jstr **out) {
    if (n > cx->limits.max_output) {
        /* jx_fail always returns false, but the analyzer does not look inside variadic functions */
        jx_fail(cx, at, "string longer than %zu bytes", cx->limits.max_output);
        return false;
    }
    if (!jx_step(cx, at, n / 64))
        return false;
    jstr *s = jx_alloc(cx, at, sizeof *s + n + 1, JV_STR);
    if (!s)
        return false;
    s->p = (char *)(s + 1);
    s->len = n;
    *out = s;
    return true;
}

static bool set_spans(jctx *cx, const jnode *at, jstr *s, const size_t *spans, size_t n_spans) {
    if (n_spans == 0)
        return true;
    size_t bytes = n_spans * 2 * sizeof(size_t);
    if (bytes > cx->limits.max_memory || cx->live_bytes > cx->limits.max_memory - bytes)
        return jx_fail(cx, at, "template values use more than %zu bytes", cx->limits.max_memory);
    s->spans = malloc(bytes);
    if (!s->spans)
        return jx_fail(cx, at, "out of memory");
    memcpy(s->spans, spans, bytes);
    s->n_spans = n_spans;
    s->h.bytes += bytes;
    cx->live_bytes += bytes;
    return true;
}

bool jv_str(jctx *cx, const jnode *at, const char *p, size_t n, bool data, jv *out) {
    jstr *s = NULL;
    if (!new_string(cx, at, n, &s))
        return false;
    if (n)
        memcpy(s->p, p, n);
    s->p[n] = '\0';
    out->type = JV_STR;
    out->u.s = s;
    if (data && n) {
        size_t span[2] = { 0, n };
        return set_spans(cx, at, s, span, 1);
    }
    return true;
}

void jsb_init(jsb *b) { memset(b, 0, sizeof *b); }

void jsb_free(jsb *b) {
    buf_free(&b->text);
    free(b->spans);
    memset(b, 0, sizeof *b);
}

static bool add_span(jctx *cx, const jnode *at, jsb *b, size_t start, size_t end) {
    if (start == end)
        return true;
    if (b->n_spans && b->spans[2 * b->n_spans - 1] == start) {
        b->spans[2 * b->n_spans - 1] = end;
        return true;
    }
    if (b->n_spans == b->cap_spans) {
        size_t cap = b->cap_spans ? b->cap_spans * 2 : 4;
        size_t *s = realloc(b->spans, cap * 2 * sizeof *s);
        if (!s)
            return jx_fail(cx, at, "out of memory");
        b->spans = s;
        b->cap_spans = cap;
    }
    b->spans[2 * b->n_spans] = start;
    b->spans[2 * b->n_spans + 1] = end;
    b->n_spans++;
    return true;
}

bool jsb_put(jctx *cx, const jnode *at, jsb *b, const char *p, size_t n, bool data) {
    if (n > cx->limits.max_output || b->text.len > cx->limits.max_output - n)
        return jx_fail(cx, at, "output longer than %zu bytes", cx->limits.max_output);
    if (!jx_step(cx, at, n / 64))
        return false;
    size_t start = b->text.len;
    if (!buf_append(&b->text, p, n))
        return jx_fail(cx, at, "out of memory");
    return !data || add_span(cx, at, b, start, start + n);
}

bool jsb_put_str(jctx *cx, const jnode *at, jsb *b, const jstr *s) {
    size_t start = b->text.len;
    if (!jsb_put(cx, at, b, s->p, s->len, false))
        return false;
    for (size_t i = 0; i < s->n_spans; i++)
        if (!add_span(cx, at, b, start + s->spans[2 * i], start + s->spans[2 * i + 1]))
            return false;
    return true;
}

bool jsb_finish(jctx *cx, const jnode *at, jsb *b, jv *out) {
    jstr *s = NULL;
    bool ok = new_string(cx, at, b->text.len, &s);
    if (ok) {
        if (b->text.len)
            memcpy(s->p, b->text.data, b->text.len);
        s->p[b->text.len] = '\0';
        out->type = JV_STR;
        out->u.s = s;
        ok = set_spans(cx, at, s, b->spans, b->n_spans);
    }
    jsb_free(b);
    return ok;
}

/* ---- Containers -------------------------------------------------------------------------------- */

bool jv_list(jctx *cx, const jnode *at, size_t cap, bool tuple, jv *out) {
    jlist *l = jx_alloc(cx, at, sizeof *l, JV_LIST);
    if (!l)
        return false;
    l->tuple = tuple;
    out->type = JV_LIST;
    out->u.l = l;
    return jx_grow(cx, at, &l->h, (void **)&l->items, &l->cap, cap, sizeof(jv));
}

bool jlist_push(jctx *cx, const jnode *at, jlist *l, jv item) {
    if (l->len >= cx->limits.max_output) {
        jv_decref(cx, item);
        return jx_fail(cx, at, "list longer than %zu items", cx->limits.max_output);
    }
    if (!jx_grow(cx, at, &l->h, (void **)&l->items, &l->cap, l->len + 1, sizeof(jv))) {
        jv_decref(cx, item);
        return false;
    }
    l->items[l->len++] = item;
    return true;
}

bool jv_dict(jctx *cx, const jnode *at, jv_type type, jv *out) {
    jdict *d = jx_alloc(cx, at, sizeof *d, type);
    if (!d)
        return false;
    out->type = type;
    out->u.d = d;
    return true;
}

jv *jdict_find(const jdict *d, jv key) {
    for (size_t i = 0; i < d->len; i++)
        if (jv_equal(d->keys[i], key))
            return &d->vals[i];
    return NULL;
}

jv *jdict_find_str(const jdict *d, const char *key, size_t len) {
    for (size_t i = 0; i < d->len; i++) {
        jv k = d->keys[i];
        if (k.type == JV_STR && k.u.s->len == len && memcmp(k.u.s->p, key, len) == 0)
            return &d->vals[i];
    }
    return NULL;
}

bool jdict_set(jctx *cx, const jnode *at, jdict *d, jv key, jv val) {
    jv *slot = jdict_find(d, key);
    if (slot) {
        jv_decref(cx, key);
        jv_decref(cx, *slot);
        *slot = val;
        return true;
    }
    size_t cap_keys = d->cap, cap_vals = d->cap;
    if (d->len >= cx->limits.max_output || !jx_grow(cx, at, &d->h, (void **)&d->keys, &cap_keys, d->len + 1, sizeof(jv)) ||
        !jx_grow(cx, at, &d->h, (void **)&d->vals, &cap_vals, d->len + 1, sizeof(jv))) {
        jv_decref(cx, key);
        jv_decref(cx, val);
        return jx_fail(cx, at, "dict too large");
    }
    d->cap = cap_keys < cap_vals ? cap_keys : cap_vals;
    d->keys[d->len] = key;
    d->vals[d->len] = val;
    d->len++;
    return true;
}

/* ---- Python semantics -------------------------------------------------------------------------- */

bool jv_truthy(jv v) {
    switch (v.type) {
    case JV_UNDEF: case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0.0;
    case JV_STR: return v.u.s->len > 0;
    case JV_LIST: return v.u.l->kind == JL_GENERATOR || v.u.l->len > 0;
    case JV_DICT: return v.u.d->len > 0;
    default: return true;
    }
}

static bool is_number(jv v) { return v.type == JV_INT || v.type == JV_FLOAT || v.type == JV_BOOL; }
static double as_double(jv v) { return v.type == JV_FLOAT ? v.u.f : v.type == JV_INT ? (double)v.u.i : (double)v.u.b; }
static int64_t as_int(jv v) { return v.type == JV_INT ? v.u.i : (int64_t)v.u.b; }

static bool equal_at(jv a, jv b, int depth) {
    if (depth > MAX_VALUE_DEPTH)
        return false;
    if (is_number(a) && is_number(b)) {
        if (a.type != JV_FLOAT && b.type != JV_FLOAT)
            return as_int(a) == as_int(b);
        return as_double(a) == as_double(b);
    }
    if (a.type != b.type)
        return false;
    switch (a.type) {
    case JV_UNDEF: case JV_NONE: return true;
    case JV_STR: return a.u.s->len == b.u.s->len && memcmp(a.u.s->p, b.u.s->p, a.u.s->len) == 0;
    case JV_LIST:
        if (a.u.l->kind == JL_GENERATOR || b.u.l->kind == JL_GENERATOR)
            return a.u.l == b.u.l;
        if (a.u.l->tuple != b.u.l->tuple || a.u.l->kind != b.u.l->kind || a.u.l->len != b.u.l->len)
            return false;
        for (size_t i = 0; i < a.u.l->len; i++)
            if (!equal_at(a.u.l->items[i], b.u.l->items[i], depth + 1))
                return false;
        return true;
    case JV_DICT:
        if (a.u.d->len != b.u.d->len)
            return false;
        for (size_t i = 0; i < a.u.d->len; i++) {
            jv *other = jdict_find(b.u.d, a.u.d->keys[i]);
            if (!other || !equal_at(a.u.d->vals[i], *other, depth + 1))
                return false;
        }
        return true;
    case JV_FUNC: return a.u.i == b.u.i;
    default: return a.u.obj == b.u.obj;
    }
}

bool jv_equal(jv a, jv b) { return equal_at(a, b, 0); }

const char *jv_type_name(jv v) {
    switch (v.type) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST:
        switch (v.u.l->kind) {
        case JL_GENERATOR: return "generator";
        case JL_DICT_ITEMS: return "dict_items";
        case JL_DICT_KEYS: return "dict_keys";
        case JL_DICT_VALUES: return "dict_values";
        default: return v.u.l->tuple ? "tuple" : "list";
        }
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_MACRO: return "Macro";
    case JV_FUNC: return "function";
    case JV_METHOD: return "builtin_function_or_method";
    case JV_LOOP: return "LoopContext";
    }
    return "object";
}

static bool less_at(jctx *cx, const jnode *at, jv a, jv b, bool *less, int depth) {
    if (depth > MAX_VALUE_DEPTH)
        return jx_fail(cx, at, "values nested too deeply to compare");
    if (is_number(a) && is_number(b)) {
        if (a.type != JV_FLOAT && b.type != JV_FLOAT)
            *less = as_int(a) < as_int(b);
        else
            *less = as_double(a) < as_double(b);
        return true;
    }
    if (a.type == JV_STR && b.type == JV_STR) {
        /* UTF-8 byte order is code point order */
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int c = memcmp(a.u.s->p, b.u.s->p, n);
        *less = c < 0 || (c == 0 && a.u.s->len < b.u.s->len);
        return true;
    }
    if (a.type == JV_LIST && b.type == JV_LIST && a.u.l->tuple == b.u.l->tuple && a.u.l->kind == JL_PLAIN &&
        b.u.l->kind == JL_PLAIN) {
        size_t n = a.u.l->len < b.u.l->len ? a.u.l->len : b.u.l->len;
        for (size_t i = 0; i < n; i++) {
            jv x = a.u.l->items[i], y = b.u.l->items[i];
            if (equal_at(x, y, depth + 1))
                continue;
            return less_at(cx, at, x, y, less, depth + 1);
        }
        *less = a.u.l->len < b.u.l->len;
        return true;
    }
    if (a.type == JV_UNDEF || b.type == JV_UNDEF)
        return jx_fail(cx, at, "an undefined value cannot be ordered");
    return jx_fail(cx, at, "'<' not supported between instances of '%s' and '%s'", jv_type_name(a), jv_type_name(b));
}

bool jv_less(jctx *cx, const jnode *at, jv a, jv b, bool *less) { return less_at(cx, at, a, b, less, 0); }

static bool has_data_at(jv v, int depth) {
    if (depth > MAX_VALUE_DEPTH)
        return true;
    switch (v.type) {
    case JV_STR: return v.u.s->n_spans > 0;
    case JV_LIST:
        for (size_t i = 0; i < v.u.l->len; i++)
            if (has_data_at(v.u.l->items[i], depth + 1))
                return true;
        return false;
    case JV_DICT: case JV_NS:
        for (size_t i = 0; i < v.u.d->len; i++)
            if (has_data_at(v.u.d->keys[i], depth + 1) || has_data_at(v.u.d->vals[i], depth + 1))
                return true;
        return false;
    case JV_METHOD: return has_data_at(v.u.method->self, depth + 1);
    default: return false;
    }
}

bool jv_has_data(jv v) { return has_data_at(v, 0); }

/* ---- Printing ---------------------------------------------------------------------------------- */

/* Python's repr of a float: the shortest digits that read back, fixed notation for exponents -4..15. */
void jx_format_float(double f, char out[40]) {
    if (isnan(f)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(f)) {
        strcpy(out, f < 0 ? "-inf" : "inf");
        return;
    }
    char sci[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, f);
        if (strtod(sci, NULL) == f)
            break;
    }
    /* sci is [-]d[.ddd]e[+-]XX */
    char digits[24] = { '0' }; /* "%e" always writes a digit; the '0' only keeps digits[0] defined */
    size_t nd = 0;
    const char *s = sci;
    bool neg = *s == '-';
    if (neg)
        s++;
    for (; *s && *s != 'e'; s++)
        if (*s != '.')
            digits[nd++] = *s;
    int exp10 = atoi(s + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    char *o = out;
    if (neg)
        *o++ = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 >= 0) {
            for (int i = 0; i <= exp10; i++)
                *o++ = (size_t)i < nd ? digits[i] : '0';
            *o++ = '.';
            if ((size_t)exp10 + 1 < nd)
                for (size_t i = (size_t)exp10 + 1; i < nd; i++)
                    *o++ = digits[i];
            else
                *o++ = '0';
        } else {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -exp10 - 1; i++)
                *o++ = '0';
            for (size_t i = 0; i < nd; i++)
                *o++ = digits[i];
        }
        *o = '\0';
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            for (size_t i = 1; i < nd; i++)
                *o++ = digits[i];
        }
        snprintf(o, 16, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
}

static bool put(jctx *cx, const jnode *at, buf *b, const char *p, size_t n) {
    if (n > cx->limits.max_output || b->len > cx->limits.max_output - n)
        return jx_fail(cx, at, "string longer than %zu bytes", cx->limits.max_output);
    if (!buf_append(b, p, n))
        return jx_fail(cx, at, "out of memory");
    return true;
}

static bool put_cstr(jctx *cx, const jnode *at, buf *b, const char *s) { return put(cx, at, b, s, strlen(s)); }

static bool printable(uint32_t cp) {
    if (cp < 0x80)
        return cp >= 0x20 && cp < 0x7f;
    uint16_t bits = uni_bits(cp);
    return (bits & ~UNI_WS) != 0;
}

static bool put_str_repr(jctx *cx, const jnode *at, buf *b, const char *p, size_t n) {
    bool has_single = memchr(p, '\'', n) != NULL, has_double = memchr(p, '"', n) != NULL;
    char quote = has_single && !has_double ? '"' : '\'';
    if (!put(cx, at, b, &quote, 1))
        return false;
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        int k = utf8_decode((const unsigned char *)p + i, n - i, &cp);
        if (k <= 0) { /* not produced by brasa's own strings, but never loop */
            cp = 0xfffd;
            k = 1;
        }
        char esc[16];
        if (cp == (uint32_t)quote || cp == '\\') {
            esc[0] = '\\';
            esc[1] = (char)cp;
            esc[2] = 0;
        } else if (cp == '\n') {
            strcpy(esc, "\\n");
        } else if (cp == '\r') {
            strcpy(esc, "\\r");
        } else if (cp == '\t') {
            strcpy(esc, "\\t");
        } else if (printable(cp)) {
            if (!put(cx, at, b, p + i, (size_t)k))
                return false;
            i += (size_t)k;
            continue;
        } else if (cp < 0x100) {
            snprintf(esc, sizeof esc, "\\x%02x", cp);
        } else if (cp < 0x10000) {
            snprintf(esc, sizeof esc, "\\u%04x", cp);
        } else {
            snprintf(esc, sizeof esc, "\\U%08x", cp);
        }
        if (!put_cstr(cx, at, b, esc))
            return false;
        i += (size_t)k;
    }
    return put(cx, at, b, &quote, 1);
}

bool jx_put_repr(jctx *cx, const jnode *at, buf *b, jv v, int depth) {
    if (depth > MAX_VALUE_DEPTH)
        return jx_fail(cx, at, "values nested too deeply to print");
    char num[40];
    switch (v.type) {
    case JV_UNDEF: return true; /* Undefined's str() is empty, and so is what brasa shows inside lists */
    case JV_NONE: return put_cstr(cx, at, b, "None");
    case JV_BOOL: return put_cstr(cx, at, b, v.u.b ? "True" : "False");
    case JV_INT:
        snprintf(num, sizeof num, "%lld", (long long)v.u.i);
        return put_cstr(cx, at, b, num);
    case JV_FLOAT:
        jx_format_float(v.u.f, num);
        return put_cstr(cx, at, b, num);
    case JV_STR: return put_str_repr(cx, at, b, v.u.s->p, v.u.s->len);
    case JV_LIST: {
        const jlist *l = v.u.l;
        if (l->kind == JL_GENERATOR)
            return put_cstr(cx, at, b, "<generator object>");
        if (l->kind != JL_PLAIN && (!put_cstr(cx, at, b, jv_type_name(v)) || !put_cstr(cx, at, b, "(")))
            return false;
        if (!put_cstr(cx, at, b, l->tuple ? "(" : "["))
            return false;
        for (size_t i = 0; i < l->len; i++)
            if ((i && !put_cstr(cx, at, b, ", ")) || !jx_put_repr(cx, at, b, l->items[i], depth + 1))
                return false;
        if (l->tuple && l->len == 1 && !put_cstr(cx, at, b, ","))
            return false;
        if (!put_cstr(cx, at, b, l->tuple ? ")" : "]"))
            return false;
        return l->kind == JL_PLAIN || put_cstr(cx, at, b, ")");
    }
    case JV_DICT: case JV_NS: {
        const jdict *d = v.u.d;
        if (!put_cstr(cx, at, b, v.type == JV_NS ? "<Namespace {" : "{"))
            return false;
        for (size_t i = 0; i < d->len; i++)
            if ((i && !put_cstr(cx, at, b, ", ")) || !jx_put_repr(cx, at, b, d->keys[i], depth + 1) ||
                !put_cstr(cx, at, b, ": ") || !jx_put_repr(cx, at, b, d->vals[i], depth + 1))
                return false;
        return put_cstr(cx, at, b, v.type == JV_NS ? "}>" : "}");
    }
    case JV_MACRO: {
        const jnode *def = v.u.m->def;
        if (!put_cstr(cx, at, b, "<Macro '") || !put(cx, at, b, def->kind == S_MACRO ? def->name : "caller",
                                                      def->kind == S_MACRO ? def->name_len : 6))
            return false;
        return put_cstr(cx, at, b, "'>");
    }
    default:
        snprintf(num, sizeof num, "<%s object>", jv_type_name(v));
        return put_cstr(cx, at, b, num);
    }
}

bool jx_put_str(jctx *cx, const jnode *at, jsb *b, jv v) {
    if (v.type == JV_STR)
        return jsb_put_str(cx, at, b, v.u.s);
    if (v.type == JV_UNDEF)
        return true;
    buf tmp = { 0 };
    bool ok = jx_put_repr(cx, at, &tmp, v, 0) && jsb_put(cx, at, b, tmp.data, tmp.len, jv_has_data(v));
    buf_free(&tmp);
    return ok;
}

bool jv_to_str(jctx *cx, const jnode *at, jv v, jv *out) {
    if (v.type == JV_STR) {
        *out = jv_copy(v);
        return true;
    }
    jsb b;
    jsb_init(&b);
    if (!jx_put_str(cx, at, &b, v)) {
        jsb_free(&b);
        return false;
    }
    return jsb_finish(cx, at, &b, out);
}

/* ---- JSON -------------------------------------------------------------------------------------- */

static bool put_json_string(jctx *cx, const jnode *at, buf *b, const char *p, size_t n, bool ensure_ascii) {
    if (!ensure_ascii) {
        if (!json_write_string(b, p, n))
            return jx_fail(cx, at, "out of memory");
        if (b->len > cx->limits.max_output)
            return jx_fail(cx, at, "string longer than %zu bytes", cx->limits.max_output);
        return true;
    }
    if (!put_cstr(cx, at, b, "\""))
        return false;
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        int k = utf8_decode((const unsigned char *)p + i, n - i, &cp);
        if (k <= 0) {
            cp = 0xfffd;
            k = 1;
        }
        char esc[16];
        if (cp >= 0x20 && cp < 0x7f && cp != '"' && cp != '\\') {
            esc[0] = (char)cp;
            esc[1] = 0;
        } else if (cp == '"' || cp == '\\') {
            esc[0] = '\\';
            esc[1] = (char)cp;
            esc[2] = 0;
        } else if (cp == '\n') {
            strcpy(esc, "\\n");
        } else if (cp == '\r') {
            strcpy(esc, "\\r");
        } else if (cp == '\t') {
            strcpy(esc, "\\t");
        } else if (cp == '\b') {
            strcpy(esc, "\\b");
        } else if (cp == '\f') {
            strcpy(esc, "\\f");
        } else if (cp < 0x10000) {
            snprintf(esc, sizeof esc, "\\u%04x", cp);
        } else {
            uint32_t v = cp - 0x10000;
            snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
        }
        if (!put_cstr(cx, at, b, esc))
            return false;
        i += (size_t)k;
    }
    return put_cstr(cx, at, b, "\"");
}

static bool put_json_float(jctx *cx, const jnode *at, buf *b, double f) {
    char num[40];
    if (isnan(f))
        return put_cstr(cx, at, b, "NaN");
    if (isinf(f))
        return put_cstr(cx, at, b, f < 0 ? "-Infinity" : "Infinity");
    jx_format_float(f, num);
    return put_cstr(cx, at, b, num);
}

static bool put_newline_indent(jctx *cx, const jnode *at, buf *b, const char *indent, size_t indent_len, int level) {
    if (!put_cstr(cx, at, b, "\n"))
        return false;
    for (int i = 0; i < level; i++)
        if (!put(cx, at, b, indent, indent_len))
            return false;
    return true;
}

/* A dict key as json.dumps converts it: str as is, numbers, booleans and None as their JSON text. */
static bool put_json_key(jctx *cx, const jnode *at, buf *b, jv k, bool ensure_ascii) {
    char num[48];
    switch (k.type) {
    case JV_STR: return put_json_string(cx, at, b, k.u.s->p, k.u.s->len, ensure_ascii);
    case JV_INT: snprintf(num, sizeof num, "\"%lld\"", (long long)k.u.i); return put_cstr(cx, at, b, num);
    case JV_BOOL: return put_cstr(cx, at, b, k.u.b ? "\"true\"" : "\"false\"");
    case JV_NONE: return put_cstr(cx, at, b, "\"null\"");
    case JV_FLOAT: {
        buf tmp = { 0 };
        bool ok = put_json_float(cx, at, &tmp, k.u.f) && put_json_string(cx, at, b, tmp.data, tmp.len, false);
        buf_free(&tmp);
        return ok;
    }
    default:
        return jx_fail(cx, at, "keys must be str, int, float, bool or None, not %s", jv_type_name(k));
    }
}

bool jx_put_json(jctx *cx, const jnode *at, buf *b, jv v, const char *indent, size_t indent_len, const char *item_sep,
                 size_t item_sep_len, const char *key_sep, size_t key_sep_len, bool sort_keys, bool ensure_ascii,
                 int level) {
    if (level > MAX_VALUE_DEPTH)
        return jx_fail(cx, at, "values nested too deeply for tojson");
    if (!jx_step(cx, at, 1))
        return false;
    char num[40];
    switch (v.type) {
    case JV_NONE: return put_cstr(cx, at, b, "null");
    case JV_BOOL: return put_cstr(cx, at, b, v.u.b ? "true" : "false");
    case JV_INT:
        snprintf(num, sizeof num, "%lld", (long long)v.u.i);
        return put_cstr(cx, at, b, num);
    case JV_FLOAT: return put_json_float(cx, at, b, v.u.f);
    case JV_STR: return put_json_string(cx, at, b, v.u.s->p, v.u.s->len, ensure_ascii);
    case JV_LIST: {
        const jlist *l = v.u.l;
        if (l->kind != JL_PLAIN)
            return jx_fail(cx, at, "Object of type %s is not JSON serializable", jv_type_name(v));
        if (l->len == 0)
            return put_cstr(cx, at, b, "[]");
        if (!put_cstr(cx, at, b, "["))
            return false;
        for (size_t i = 0; i < l->len; i++) {
            if (i && !put(cx, at, b, item_sep, item_sep_len))
                return false;
            if (indent && !put_newline_indent(cx, at, b, indent, indent_len, level + 1))
                return false;
            if (!jx_put_json(cx, at, b, l->items[i], indent, indent_len, item_sep, item_sep_len, key_sep, key_sep_len,
                             sort_keys, ensure_ascii, level + 1))
                return false;
        }
        if (indent && !put_newline_indent(cx, at, b, indent, indent_len, level))
            return false;
        return put_cstr(cx, at, b, "]");
    }
    case JV_DICT: {
        const jdict *d = v.u.d;
        if (d->len == 0)
            return put_cstr(cx, at, b, "{}");
        size_t *order = malloc(d->len * sizeof *order);
        if (!order)
            return jx_fail(cx, at, "out of memory");
        for (size_t i = 0; i < d->len; i++)
            order[i] = i;
        bool ok = true;
        if (sort_keys) { /* insertion sort: stable, and dicts are small */
            for (size_t i = 1; ok && i < d->len; i++) {
                size_t x = order[i], j = i;
                while (j > 0) {
                    bool less = false;
                    if (!(ok = jv_less(cx, at, d->keys[x], d->keys[order[j - 1]], &less)) || !less)
                        break;
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = x;
            }
        }
        ok = ok && put_cstr(cx, at, b, "{");
        for (size_t k = 0; ok && k < d->len; k++) {
            size_t i = order[k];
            if (k && !put(cx, at, b, item_sep, item_sep_len))
                ok = false;
            else if (indent && !put_newline_indent(cx, at, b, indent, indent_len, level + 1))
                ok = false;
            else
                ok = put_json_key(cx, at, b, d->keys[i], ensure_ascii) && put(cx, at, b, key_sep, key_sep_len) &&
                     jx_put_json(cx, at, b, d->vals[i], indent, indent_len, item_sep, item_sep_len, key_sep, key_sep_len,
                                 sort_keys, ensure_ascii, level + 1);
        }
        free(order);
        if (ok && indent && !put_newline_indent(cx, at, b, indent, indent_len, level))
            return false;
        return ok && put_cstr(cx, at, b, "}");
    }
    default:
        return jx_fail(cx, at, "Object of type %s is not JSON serializable", jv_type_name(v));
    }
}

bool jv_from_json(jctx *cx, const json_value *j, bool trusted, int depth, jv *out) {
    if (depth > JSON_MAX_DEPTH)
        return jx_fail(cx, NULL, "JSON nested too deeply");
    switch (j->type) {
    case JSON_NULL: *out = jv_none(); return true;
    case JSON_FALSE: *out = jv_bool(false); return true;
    case JSON_TRUE: *out = jv_bool(true); return true;
    case JSON_NUMBER: *out = j->is_integer ? jv_int(j->integer) : jv_float(j->number); return true;
    case JSON_STRING: return jv_str(cx, NULL, j->str, j->len, !trusted, out);
    case JSON_ARRAY:
        if (!jv_list(cx, NULL, j->len, false, out))
            return false;
        for (size_t i = 0; i < j->len; i++) {
            jv item;
            if (!jv_from_json(cx, &j->items[i], trusted, depth + 1, &item) || !jlist_push(cx, NULL, out->u.l, item))
                return false;
        }
        return true;
    case JSON_OBJECT:
        if (!jv_dict(cx, NULL, JV_DICT, out))
            return false;
        for (size_t i = 0; i < j->len; i++) {
            jv k, v;
            if (!jv_from_json(cx, &j->keys[i], trusted, depth + 1, &k))
                return false;
            if (!jv_from_json(cx, &j->items[i], trusted, depth + 1, &v)) {
                jv_decref(cx, k);
                return false;
            }
            if (!jdict_set(cx, NULL, out->u.d, k, v))
                return false;
        }
        return true;
    }
    return jx_fail(cx, NULL, "bad JSON value");
}

bool jv_iterate(jctx *cx, const jnode *at, jv v, jv *list_out) {
    switch (v.type) {
    case JV_UNDEF: return jv_list(cx, at, 0, false, list_out);
    case JV_LIST:
        if (v.u.l->kind == JL_GENERATOR) { /* a generator runs once */
            if (v.u.l->consumed)
                return jv_list(cx, at, 0, false, list_out);
            v.u.l->consumed = true;
        }
        *list_out = jv_copy(v);
        return true;
    case JV_DICT: {
        if (!jv_list(cx, at, v.u.d->len, false, list_out))
            return false;
        for (size_t i = 0; i < v.u.d->len; i++)
            if (!jlist_push(cx, at, list_out->u.l, jv_copy(v.u.d->keys[i])))
                return false;
        return true;
    }
    case JV_STR: {
        const jstr *s = v.u.s;
        if (!jv_list(cx, at, jx_utf8_count(s->p, s->len), false, list_out))
            return false;
        for (size_t i = 0; i < s->len;) {
            size_t k = 1;
            while (i + k < s->len && ((unsigned char)s->p[i + k] & 0xc0) == 0x80)
                k++;
            jv ch;
            if (!jv_str(cx, at, s->p + i, k, s->n_spans > 0, &ch) || !jlist_push(cx, at, list_out->u.l, ch))
                return false;
            i += k;
        }
        return true;
    }
    default:
        return jx_fail(cx, at, "'%s' object is not iterable", jv_type_name(v));
    }
}
