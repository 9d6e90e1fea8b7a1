/* jinja_eval.c: renders a parsed template. Statements run against a chain of frames with jinja2's
 * scoping (a for loop, a macro call and a call block each open a frame, so a `set` inside them does
 * not leak out; a namespace's attributes do, being one shared object); expressions evaluate to
 * values with Python's semantics and the sandbox's attribute rules. Every node visited is a step,
 * and output, strings, nesting and memory are bounded by the render's limits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_internal.h"

typedef enum flow { FLOW_OK, FLOW_ERR, FLOW_BREAK, FLOW_CONTINUE } flow;

static bool eval(jctx *cx, jframe *f, const jnode *n, jv *out);
static flow exec_body(jctx *cx, jframe *f, const jnode *body);

/* ---- Frames ------------------------------------------------------------------------------------ */

static jframe *frame_new(jctx *cx, const jnode *at, jframe *parent) {
    jframe *f = jx_alloc(cx, at, sizeof *f, JV_UNDEF);
    if (f && parent) {
        f->parent = parent;
        parent->h.refs++;
    }
    return f;
}

static jv *frame_find(jframe *f, const char *name, size_t len) {
    for (; f; f = f->parent)
        for (size_t i = 0; i < f->len; i++)
            if (f->name_lens[i] == len && memcmp(f->names[i], name, len) == 0)
                return &f->vals[i];
    return NULL;
}

/* Binds name in f itself (not a parent), taking the reference to v. */
static bool frame_set(jctx *cx, const jnode *at, jframe *f, const char *name, size_t len, jv v) {
    for (size_t i = 0; i < f->len; i++) {
        if (f->name_lens[i] == len && memcmp(f->names[i], name, len) == 0) {
            jv_decref(cx, f->vals[i]);
            f->vals[i] = v;
            return true;
        }
    }
    size_t cap_names = f->cap, cap_lens = f->cap, cap_vals = f->cap;
    if (!jx_grow(cx, at, &f->h, (void **)&f->names, &cap_names, f->len + 1, sizeof *f->names) ||
        !jx_grow(cx, at, &f->h, (void **)&f->name_lens, &cap_lens, f->len + 1, sizeof *f->name_lens) ||
        !jx_grow(cx, at, &f->h, (void **)&f->vals, &cap_vals, f->len + 1, sizeof *f->vals)) {
        jv_decref(cx, v);
        return false;
    }
    f->cap = cap_names < cap_lens ? (cap_names < cap_vals ? cap_names : cap_vals) : (cap_lens < cap_vals ? cap_lens : cap_vals);
    f->names[f->len] = name;
    f->name_lens[f->len] = len;
    f->vals[f->len] = v;
    f->len++;
    return true;
}

/* ---- Errors about undefined values ------------------------------------------------------------- */

/* jinja2's UndefinedError text for misusing v (made by the expression v.u.undef). */
static bool undefined_error(jctx *cx, const jnode *at, jv v) {
    const jnode *u = v.u.undef;
    if (v.unsafe && u)
        return jx_fail(cx, at, "access to attribute '%.*s' is unsafe", (int)u->name_len, u->name);
    if (u && u->kind == N_NAME)
        return jx_fail(cx, at, "'%.*s' is undefined", (int)u->name_len, u->name);
    if (u && u->kind == N_GETATTR)
        return jx_fail(cx, at, "undefined value has no attribute '%.*s' (or the object has none)", (int)u->name_len,
                       u->name);
    return jx_fail(cx, at, "an undefined value was used");
}

/* ---- Attributes and items ---------------------------------------------------------------------- */

static bool loop_attr(jctx *cx, const jnode *at, jv obj, const char *name, size_t len, jv *out, bool *found) {
    const jloop *l = obj.u.loop;
    const jlist *items = l->items.u.l;
    int64_t i = (int64_t)l->index0, n = (int64_t)items->len;
    *found = true;
#define IS(s) (len == sizeof(s) - 1 && memcmp(name, s, len) == 0)
    if (IS("index")) *out = jv_int(i + 1);
    else if (IS("index0")) *out = jv_int(i);
    else if (IS("revindex")) *out = jv_int(n - i);
    else if (IS("revindex0")) *out = jv_int(n - i - 1);
    else if (IS("first")) *out = jv_bool(i == 0);
    else if (IS("last")) *out = jv_bool(i == n - 1);
    else if (IS("length")) *out = jv_int(n);
    else if (IS("depth")) *out = jv_int(1);
    else if (IS("depth0")) *out = jv_int(0);
    else if (IS("previtem")) *out = i > 0 ? jv_copy(items->items[i - 1]) : jv_undef(at);
    else if (IS("nextitem")) *out = i + 1 < n ? jv_copy(items->items[i + 1]) : jv_undef(at);
    else if (IS("cycle")) {
        jmethod *m = jx_alloc(cx, at, sizeof *m, JV_METHOD);
        if (!m)
            return false;
        m->self = jv_copy(obj);
        m->name = "cycle";
        m->name_len = 5;
        out->type = JV_METHOD;
        out->u.method = m;
    } else
        *found = false;
#undef IS
    return true;
}

bool jx_getattr(jctx *cx, const jnode *at, jv obj, const char *name, size_t len, jv *out) {
    bool found = false;
    switch (obj.type) {
    case JV_UNDEF: return undefined_error(cx, at, obj);
    case JV_NS: {
        jv *v = jdict_find_str(obj.u.d, name, len);
        *out = v ? jv_copy(*v) : jv_undef(at);
        return true;
    }
    case JV_LOOP:
        if (!loop_attr(cx, at, obj, name, len, out, &found))
            return false;
        if (!found)
            *out = jv_undef(at);
        return true;
    case JV_DICT: case JV_STR: case JV_LIST:
        if (!jb_method_lookup(cx, at, obj, name, len, out, &found))
            return false;
        if (found)
            return true;
        if (obj.type == JV_DICT) {
            jv *v = jdict_find_str(obj.u.d, name, len);
            *out = v ? jv_copy(*v) : jv_undef(at);
            return true;
        }
        *out = jv_undef(at);
        return true;
    default:
        *out = jv_undef(at);
        return true;
    }
}

static bool as_index(jv v, int64_t *i) {
    if (v.type == JV_INT) {
        *i = v.u.i;
        return true;
    }
    if (v.type == JV_BOOL) {
        *i = v.u.b;
        return true;
    }
    return false;
}

static bool getitem(jctx *cx, const jnode *at, jv obj, jv key, jv *out) {
    int64_t i;
    switch (obj.type) {
    case JV_UNDEF: return undefined_error(cx, at, obj);
    case JV_DICT: case JV_NS: {
        jv *v = jdict_find(obj.u.d, key);
        if (v) {
            *out = jv_copy(*v);
            return true;
        }
        break;
    }
    case JV_LIST:
        if (obj.u.l->kind != JL_PLAIN) /* iterators and views are not subscriptable */
            break;
        if (as_index(key, &i)) {
            int64_t n = (int64_t)obj.u.l->len;
            if (i < 0)
                i += n;
            *out = i >= 0 && i < n ? jv_copy(obj.u.l->items[i]) : jv_undef(at);
            return true;
        }
        break;
    case JV_STR:
        if (as_index(key, &i)) {
            const jstr *s = obj.u.s;
            int64_t n = (int64_t)jx_utf8_count(s->p, s->len);
            if (i < 0)
                i += n;
            if (i < 0 || i >= n) {
                *out = jv_undef(at);
                return true;
            }
            size_t start = jx_utf8_offset(s->p, s->len, (size_t)i), end = start + 1;
            while (end < s->len && ((unsigned char)s->p[end] & 0xc0) == 0x80)
                end++;
            return jv_str(cx, at, s->p + start, end - start, s->n_spans > 0, out);
        }
        break;
    default: break;
    }
    if (key.type == JV_STR && obj.type != JV_DICT && obj.type != JV_NS)
        return jx_getattr(cx, at, obj, key.u.s->p, key.u.s->len, out);
    if (key.type == JV_STR && obj.type == JV_DICT) {
        bool found = false;
        if (!jb_method_lookup(cx, at, obj, key.u.s->p, key.u.s->len, out, &found))
            return false;
        if (found)
            return true;
    }
    *out = jv_undef(at);
    return true;
}

/* Python's slice.indices: the start, stop and step over a sequence of n. */
static bool slice_indices(jctx *cx, const jnode *at, jv start, jv stop, jv step, int64_t n, int64_t *s0, int64_t *s1,
                          int64_t *st, bool *ok) {
    int64_t a, b, c = 1;
    *ok = true;
    if (step.type != JV_NONE && step.type != JV_UNDEF) {
        if (!as_index(step, &c)) {
            *ok = false;
            return true;
        }
        if (c == 0)
            return jx_fail(cx, at, "slice step cannot be zero");
    }
    int64_t lo = c < 0 ? -1 : 0, hi = c < 0 ? n - 1 : n;
    if (start.type == JV_NONE || start.type == JV_UNDEF) {
        a = c < 0 ? hi : lo;
    } else {
        if (!as_index(start, &a)) {
            *ok = false;
            return true;
        }
        if (a < 0) {
            a += n;
            if (a < lo)
                a = lo;
        } else if (a > hi) {
            a = hi;
        }
    }
    if (stop.type == JV_NONE || stop.type == JV_UNDEF) {
        b = c < 0 ? lo : hi;
    } else {
        if (!as_index(stop, &b)) {
            *ok = false;
            return true;
        }
        if (b < 0) {
            b += n;
            if (b < lo)
                b = lo;
        } else if (b > hi) {
            b = hi;
        }
    }
    *s0 = a;
    *s1 = b;
    *st = c;
    return true;
}

static bool slice(jctx *cx, const jnode *at, jv obj, jv start, jv stop, jv step, jv *out) {
    if (obj.type == JV_UNDEF)
        return undefined_error(cx, at, obj);
    if ((obj.type != JV_LIST && obj.type != JV_STR) || (obj.type == JV_LIST && obj.u.l->kind != JL_PLAIN)) {
        *out = jv_undef(at);
        return true;
    }
    bool ok;
    int64_t a, b, c;
    if (obj.type == JV_LIST) {
        if (!slice_indices(cx, at, start, stop, step, (int64_t)obj.u.l->len, &a, &b, &c, &ok))
            return false;
        if (!ok) {
            *out = jv_undef(at);
            return true;
        }
        if (!jv_list(cx, at, 0, obj.u.l->tuple, out))
            return false;
        for (int64_t i = a; c > 0 ? i < b : i > b; i += c)
            if (!jlist_push(cx, at, out->u.l, jv_copy(obj.u.l->items[i])))
                return false;
        return true;
    }
    const jstr *s = obj.u.s;
    size_t n = jx_utf8_count(s->p, s->len);
    if (!slice_indices(cx, at, start, stop, step, (int64_t)n, &a, &b, &c, &ok))
        return false;
    if (!ok) {
        *out = jv_undef(at);
        return true;
    }
    if (c == 1 && n == s->len) { /* ASCII, forward: one copy */
        return jv_str(cx, at, s->p + (a < b ? a : b), a < b ? (size_t)(b - a) : 0, s->n_spans > 0, out);
    }
    /* code point offsets once, then pick */
    size_t *offs = malloc((n + 1) * sizeof *offs);
    if (!offs)
        return jx_fail(cx, at, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < s->len; i++)
        if (((unsigned char)s->p[i] & 0xc0) != 0x80)
            offs[k++] = i;
    offs[n] = s->len;
    jsb sb;
    jsb_init(&sb);
    bool good = true;
    for (int64_t i = a; good && (c > 0 ? i < b : i > b); i += c)
        good = jsb_put(cx, at, &sb, s->p + offs[i], offs[i + 1] - offs[i], s->n_spans > 0);
    free(offs);
    if (!good) {
        jsb_free(&sb);
        return false;
    }
    return jsb_finish(cx, at, &sb, out);
}

/* ---- Operators --------------------------------------------------------------------------------- */

static bool is_num(jv v) { return v.type == JV_INT || v.type == JV_FLOAT || v.type == JV_BOOL; }
static double num_d(jv v) { return v.type == JV_FLOAT ? v.u.f : v.type == JV_INT ? (double)v.u.i : (double)v.u.b; }
/* An integer operand's value; 0 for a float, whose integer value is never used (reading the bool
 * member of a float's union would be undefined: found by fuzz_template). */
static int64_t num_i(jv v) { return v.type == JV_INT ? v.u.i : v.type == JV_BOOL ? (int64_t)v.u.b : 0; }

static bool type_error(jctx *cx, const jnode *at, const char *op, jv a, jv b) {
    if (a.type == JV_UNDEF)
        return undefined_error(cx, at, a);
    if (b.type == JV_UNDEF)
        return undefined_error(cx, at, b);
    return jx_fail(cx, at, "unsupported operand type(s) for %s: '%s' and '%s'", op, jv_type_name(a), jv_type_name(b));
}

/* str * n and list * n, with the size checked before anything is built. */
static bool repeat(jctx *cx, const jnode *at, jv seq, int64_t times, jv *out) {
    if (times < 0)
        times = 0;
    size_t unit = seq.type == JV_STR ? seq.u.s->len : seq.u.l->len;
    if (unit && (uint64_t)times > cx->limits.max_output / unit)
        return jx_fail(cx, at, "repetition longer than %zu", cx->limits.max_output);
    if (seq.type == JV_STR) {
        jsb b;
        jsb_init(&b);
        for (int64_t i = 0; i < times && unit; i++)
            if (!jsb_put_str(cx, at, &b, seq.u.s)) {
                jsb_free(&b);
                return false;
            }
        return jsb_finish(cx, at, &b, out);
    }
    if (!jv_list(cx, at, unit * (size_t)times, seq.u.l->tuple, out))
        return false;
    for (int64_t i = 0; i < times; i++)
        for (size_t k = 0; k < unit; k++)
            if (!jlist_push(cx, at, out->u.l, jv_copy(seq.u.l->items[k])))
                return false;
    return true;
}

static bool arith(jctx *cx, const jnode *at, jop op, jv a, jv b, jv *out) {
    static const char *names[] = { [OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/",
                                   [OP_FLOORDIV] = "//", [OP_MOD] = "%", [OP_POW] = "**" };
    if (op == OP_TILDE) {
        jsb sb;
        jsb_init(&sb);
        if (!jx_put_str(cx, at, &sb, a) || !jx_put_str(cx, at, &sb, b)) {
            jsb_free(&sb);
            return false;
        }
        return jsb_finish(cx, at, &sb, out);
    }
    if (is_num(a) && is_num(b)) {
        bool ints = a.type != JV_FLOAT && b.type != JV_FLOAT;
        int64_t x = num_i(a), y = num_i(b), r;
        double fx = num_d(a), fy = num_d(b);
        switch (op) {
        case OP_ADD:
            if (!ints) { *out = jv_float(fx + fy); return true; }
            if (__builtin_add_overflow(x, y, &r)) return jx_fail(cx, at, "integer overflow");
            *out = jv_int(r);
            return true;
        case OP_SUB:
            if (!ints) { *out = jv_float(fx - fy); return true; }
            if (__builtin_sub_overflow(x, y, &r)) return jx_fail(cx, at, "integer overflow");
            *out = jv_int(r);
            return true;
        case OP_MUL:
            if (!ints) { *out = jv_float(fx * fy); return true; }
            if (__builtin_mul_overflow(x, y, &r)) return jx_fail(cx, at, "integer overflow");
            *out = jv_int(r);
            return true;
        case OP_DIV:
            if (fy == 0) return jx_fail(cx, at, "division by zero");
            *out = jv_float(fx / fy);
            return true;
        case OP_FLOORDIV:
        case OP_MOD:
            if (ints ? y == 0 : fy == 0) return jx_fail(cx, at, "integer division or modulo by zero");
            if (ints) {
                if (x == INT64_MIN && y == -1) return jx_fail(cx, at, "integer overflow");
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) { q--; m += y; }
                *out = jv_int(op == OP_FLOORDIV ? q : m);
            } else {
                double m = fmod(fx, fy);
                if (m != 0 && ((m < 0) != (fy < 0))) m += fy;
                *out = jv_float(op == OP_FLOORDIV ? floor(fx / fy) : m);
            }
            return true;
        case OP_POW:
            if (ints && y >= 0) {
                int64_t acc = 1, base = x;
                for (int64_t e = y; e > 0; e >>= 1) {
                    if ((e & 1) && __builtin_mul_overflow(acc, base, &acc)) return jx_fail(cx, at, "integer overflow");
                    if (e > 1 && __builtin_mul_overflow(base, base, &base)) return jx_fail(cx, at, "integer overflow");
                }
                *out = jv_int(acc);
                return true;
            }
            if (fx == 0 && fy < 0) return jx_fail(cx, at, "0.0 cannot be raised to a negative power");
            *out = jv_float(pow(fx, fy));
            return true;
        default: break;
        }
    }
    if (op == OP_ADD && a.type == JV_STR && b.type == JV_STR) {
        /* Markup + str escapes the str (and str + Markup, by Markup's __radd__) */
        bool html = a.u.s->html_safe || b.u.s->html_safe;
        jv ea = jv_copy(a), eb = jv_copy(b);
        bool ok = true;
        if (html && !a.u.s->html_safe) {
            jv_decref(cx, ea);
            ok = jb_html_escape(cx, at, a, &ea);
        }
        if (ok && html && !b.u.s->html_safe) {
            jv_decref(cx, eb);
            ok = jb_html_escape(cx, at, b, &eb);
        }
        jsb sb;
        jsb_init(&sb);
        ok = ok && jsb_put_str(cx, at, &sb, ea.u.s) && jsb_put_str(cx, at, &sb, eb.u.s);
        jv_decref(cx, ea);
        jv_decref(cx, eb);
        if (!ok) {
            jsb_free(&sb);
            return false;
        }
        if (!jsb_finish(cx, at, &sb, out))
            return false;
        out->u.s->html_safe = html;
        return true;
    }
    if (op == OP_ADD && a.type == JV_LIST && b.type == JV_LIST && a.u.l->tuple == b.u.l->tuple &&
        a.u.l->kind == JL_PLAIN && b.u.l->kind == JL_PLAIN) {
        if (!jv_list(cx, at, a.u.l->len + b.u.l->len, a.u.l->tuple, out))
            return false;
        for (size_t i = 0; i < a.u.l->len; i++)
            if (!jlist_push(cx, at, out->u.l, jv_copy(a.u.l->items[i])))
                return false;
        for (size_t i = 0; i < b.u.l->len; i++)
            if (!jlist_push(cx, at, out->u.l, jv_copy(b.u.l->items[i])))
                return false;
        return true;
    }
    if (op == OP_MUL && (a.type == JV_STR || a.type == JV_LIST) && (b.type == JV_INT || b.type == JV_BOOL))
        return repeat(cx, at, a, num_i(b), out);
    if (op == OP_MUL && (b.type == JV_STR || b.type == JV_LIST) && (a.type == JV_INT || a.type == JV_BOOL))
        return repeat(cx, at, b, num_i(a), out);
    if (op == OP_MOD && a.type == JV_STR)
        return jx_fail(cx, at, "printf-style string formatting with %% is not supported");
    return type_error(cx, at, names[op], a, b);
}

static bool contains(jctx *cx, const jnode *at, jv item, jv container, bool *result) {
    switch (container.type) {
    case JV_UNDEF: *result = false; return true;
    case JV_STR:
        if (item.type != JV_STR)
            return jx_fail(cx, at, "'in <string>' requires string as left operand, not %s", jv_type_name(item));
        if (item.u.s->len == 0) {
            *result = true;
            return true;
        }
        *result = item.u.s->len <= container.u.s->len &&
                  jx_find(container.u.s->p, container.u.s->len, item.u.s->p, item.u.s->len) != NULL;
        return true;
    case JV_LIST:
        *result = false;
        for (size_t i = 0; i < container.u.l->len && !*result; i++)
            *result = jv_equal(item, container.u.l->items[i]);
        return true;
    case JV_DICT: case JV_NS: *result = jdict_find(container.u.d, item) != NULL; return true;
    default: return jx_fail(cx, at, "argument of type '%s' is not iterable", jv_type_name(container));
    }
}

static bool compare(jctx *cx, const jnode *at, jop op, jv a, jv b, bool *r) {
    bool less = false;
    switch (op) {
    case OP_EQ: *r = jv_equal(a, b); return true;
    case OP_NE: *r = !jv_equal(a, b); return true;
    case OP_LT: return jv_less(cx, at, a, b, r);
    case OP_GT: return jv_less(cx, at, b, a, r);
    case OP_LE: if (!jv_less(cx, at, b, a, &less)) return false; *r = !less; return true;
    case OP_GE: if (!jv_less(cx, at, a, b, &less)) return false; *r = !less; return true;
    case OP_IN: return contains(cx, at, a, b, r);
    case OP_NOT_IN: if (!contains(cx, at, a, b, &less)) return false; *r = !less; return true;
    default: return jx_fail(cx, at, "bad comparison");
    }
}

/* ---- Calls ------------------------------------------------------------------------------------- */

jv *jargs_get(const jargs *a, size_t i, const char *name) {
    if (name)
        for (size_t k = 0; k < a->n_kw; k++)
            if (a->kw_lens[k] == strlen(name) && memcmp(a->kw_names[k], name, a->kw_lens[k]) == 0)
                return &a->kw[k];
    return i < a->n_pos ? &a->pos[i] : NULL;
}

static void args_free(jctx *cx, jargs *a) {
    for (size_t i = 0; i < a->n_pos; i++)
        jv_decref(cx, a->pos[i]);
    for (size_t i = 0; i < a->n_kw; i++)
        jv_decref(cx, a->kw[i]);
    free(a->pos);
    free(a->kw);
    memset(a, 0, sizeof *a);
}

/* Evaluates a node's arguments (items and kw_values), with room for one more keyword (caller). */
static bool eval_args(jctx *cx, jframe *f, const jnode *n, jargs *a) {
    memset(a, 0, sizeof *a);
    a->pos = calloc(n->n_items + 1, sizeof *a->pos);
    a->kw = calloc(n->n_kw + 1, sizeof *a->kw);
    a->kw_names = calloc(n->n_kw + 1, sizeof *a->kw_names);
    a->kw_lens = calloc(n->n_kw + 1, sizeof *a->kw_lens);
    if (!a->pos || !a->kw || !a->kw_names || !a->kw_lens)
        return jx_fail(cx, n, "out of memory");
    for (size_t i = 0; i < n->n_items; i++) {
        if (!eval(cx, f, n->items[i], &a->pos[i]))
            return false;
        a->n_pos++;
    }
    for (size_t i = 0; i < n->n_kw; i++) {
        if (!eval(cx, f, n->kw_values[i], &a->kw[i]))
            return false;
        a->kw_names[i] = n->kw_names[i];
        a->kw_lens[i] = n->kw_lens[i];
        a->n_kw++;
    }
    return true;
}

static void args_release(jctx *cx, jargs *a) {
    free((void *)a->kw_names);
    free(a->kw_lens);
    args_free(cx, a);
}

static bool call_macro(jctx *cx, const jnode *at, const jmacro *m, const jargs *a, jv *out) {
    const jnode *def = m->def;
    if (cx->macro_depth >= cx->limits.max_depth)
        return jx_fail(cx, at, "macro calls nested deeper than %d", cx->limits.max_depth);
    jframe *f = frame_new(cx, at, m->closure);
    if (!f)
        return false;
    bool ok = true;
    size_t n_params = def->n_items;
    jv varargs = { 0 }, kwargs = { 0 };
    ok = jv_list(cx, at, 0, true, &varargs) && jv_dict(cx, at, JV_DICT, &kwargs);
    for (size_t i = 0; ok && i < a->n_pos; i++) {
        if (i < n_params)
            ok = frame_set(cx, at, f, def->items[i]->name, def->items[i]->name_len, jv_copy(a->pos[i]));
        else
            ok = jlist_push(cx, at, varargs.u.l, jv_copy(a->pos[i]));
    }
    for (size_t k = 0; ok && k < a->n_kw; k++) {
        const char *name = a->kw_names[k];
        size_t len = a->kw_lens[k];
        size_t i = 0;
        for (; i < n_params; i++)
            if (def->items[i]->name_len == len && memcmp(def->items[i]->name, name, len) == 0)
                break;
        if (i < n_params && i < a->n_pos) {
            ok = jx_fail(cx, at, "macro got multiple values for argument '%.*s'", (int)len, name);
        } else if (i < n_params || (len == 6 && memcmp(name, "caller", 6) == 0)) {
            ok = frame_set(cx, at, f, name, len, jv_copy(a->kw[k]));
        } else {
            jv key;
            ok = jv_str(cx, at, name, len, false, &key) && jdict_set(cx, at, kwargs.u.d, key, jv_copy(a->kw[k]));
        }
    }
    /* defaults, evaluated in the macro's frame so they may name earlier parameters */
    for (size_t i = 0; ok && i < n_params; i++) {
        const jnode *p = def->items[i];
        bool bound = false;
        for (size_t k = 0; k < f->len; k++)
            if (f->name_lens[k] == p->name_len && memcmp(f->names[k], p->name, p->name_len) == 0)
                bound = true;
        if (bound)
            continue;
        jv v = jv_undef(p);
        if (i < def->n_kw && def->kw_values[i])
            ok = eval(cx, f, def->kw_values[i], &v);
        ok = ok && frame_set(cx, at, f, p->name, p->name_len, v);
    }
    ok = ok && frame_set(cx, at, f, "varargs", 7, varargs) && frame_set(cx, at, f, "kwargs", 6, kwargs);
    if (ok && m->caller.type != JV_UNDEF)
        ok = frame_set(cx, at, f, "caller", 6, jv_copy(m->caller));
    if (!ok) {
        jx_release(cx, &f->h);
        return false;
    }
    jsb capture, *saved = cx->out;
    jsb_init(&capture);
    cx->out = &capture;
    cx->macro_depth++;
    flow fl = exec_body(cx, f, def->d);
    cx->macro_depth--;
    cx->out = saved;
    jx_release(cx, &f->h);
    if (fl == FLOW_ERR) {
        jsb_free(&capture);
        return false;
    }
    return jsb_finish(cx, at, &capture, out);
}

bool jx_call(jctx *cx, const jnode *at, jv callee, const jargs *a, jv *out) {
    if (!jx_step(cx, at, 1))
        return false;
    switch (callee.type) {
    case JV_MACRO: return call_macro(cx, at, callee.u.m, a, out);
    case JV_FUNC: return jb_call_global(cx, at, (int)callee.u.i, a, out);
    case JV_METHOD: {
        const jmethod *m = callee.u.method;
        if (m->self.type == JV_LOOP) { /* loop.cycle(a, b, ...) */
            if (a->n_pos == 0)
                return jx_fail(cx, at, "no items for cycling given");
            *out = jv_copy(a->pos[m->self.u.loop->index0 % a->n_pos]);
            return true;
        }
        return jb_call_method(cx, at, m, a, out);
    }
    case JV_UNDEF: return undefined_error(cx, at, callee);
    default: return jx_fail(cx, at, "'%s' object is not callable", jv_type_name(callee));
    }
}

/* ---- Expressions ------------------------------------------------------------------------------- */

static bool eval_filter(jctx *cx, jframe *f, const jnode *n, jv input, jv *out);

static bool eval_inner(jctx *cx, jframe *f, const jnode *n, jv *out) {
    jv a = { 0 }, b = { 0 };
    bool ok = false;
    switch (n->kind) {
    case N_STR: return jv_str(cx, n, n->name, n->name_len, false, out);
    case N_INT: *out = jv_int(n->ival); return true;
    case N_FLOAT: *out = jv_float(n->fval); return true;
    case N_BOOL: *out = jv_bool(n->ival != 0); return true;
    case N_NONE: *out = jv_none(); return true;
    case N_NAME: {
        jv *v = frame_find(f, n->name, n->name_len);
        if (v) {
            *out = jv_copy(*v);
            return true;
        }
        int g = jb_global_index(n->name, n->name_len);
        if (g >= 0) {
            out->type = JV_FUNC;
            out->unsafe = false;
            out->u.i = g;
            return true;
        }
        *out = jv_undef(n);
        return true;
    }
    case N_LIST: case N_TUPLE:
        if (!jv_list(cx, n, n->n_items, n->kind == N_TUPLE, out))
            return false;
        for (size_t i = 0; i < n->n_items; i++)
            if (!eval(cx, f, n->items[i], &a) || !jlist_push(cx, n, out->u.l, a))
                return false;
        return true;
    case N_DICT:
        if (!jv_dict(cx, n, JV_DICT, out))
            return false;
        for (size_t i = 0; i + 1 < n->n_items; i += 2) {
            if (!eval(cx, f, n->items[i], &a))
                return false;
            if (!eval(cx, f, n->items[i + 1], &b)) {
                jv_decref(cx, a);
                return false;
            }
            if (!jdict_set(cx, n, out->u.d, a, b))
                return false;
        }
        return true;
    case N_BINOP:
        if (!eval(cx, f, n->a, &a))
            return false;
        if (eval(cx, f, n->b, &b)) {
            ok = arith(cx, n, n->op, a, b, out);
            jv_decref(cx, b);
        }
        jv_decref(cx, a);
        return ok;
    case N_COMPARE: {
        if (!eval(cx, f, n->a, &a))
            return false;
        bool r = true;
        ok = true;
        for (size_t i = 0; ok && r && i < n->n_items; i++) {
            if (!(ok = eval(cx, f, n->items[i], &b)))
                break;
            ok = compare(cx, n, n->ops[i], a, b, &r);
            jv_decref(cx, a);
            a = b;
        }
        jv_decref(cx, a);
        *out = jv_bool(r);
        return ok;
    }
    case N_AND: case N_OR:
        if (!eval(cx, f, n->a, &a))
            return false;
        if (jv_truthy(a) == (n->kind == N_OR)) {
            *out = a;
            return true;
        }
        jv_decref(cx, a);
        return eval(cx, f, n->b, out);
    case N_NOT:
        if (!eval(cx, f, n->a, &a))
            return false;
        *out = jv_bool(!jv_truthy(a));
        jv_decref(cx, a);
        return true;
    case N_NEG: case N_POS:
        if (!eval(cx, f, n->a, &a))
            return false;
        if (a.type == JV_FLOAT) {
            *out = jv_float(n->kind == N_NEG ? -a.u.f : a.u.f);
            return true;
        }
        if (a.type == JV_INT || a.type == JV_BOOL) {
            int64_t i = num_i(a);
            if (n->kind == N_NEG && i == INT64_MIN)
                return jx_fail(cx, n, "integer overflow");
            *out = jv_int(n->kind == N_NEG ? -i : i);
            return true;
        }
        ok = a.type == JV_UNDEF ? undefined_error(cx, n, a)
                                : jx_fail(cx, n, "bad operand type for unary %s: '%s'", n->kind == N_NEG ? "-" : "+",
                                          jv_type_name(a));
        jv_decref(cx, a);
        return ok;
    case N_COND:
        if (!eval(cx, f, n->a, &a))
            return false;
        ok = jv_truthy(a);
        jv_decref(cx, a);
        if (ok)
            return eval(cx, f, n->b, out);
        if (n->c)
            return eval(cx, f, n->c, out);
        *out = jv_undef(n);
        return true;
    case N_GETATTR:
        if (!eval(cx, f, n->a, &a))
            return false;
        ok = jx_getattr(cx, n, a, n->name, n->name_len, out);
        jv_decref(cx, a);
        return ok;
    case N_GETITEM:
        if (!eval(cx, f, n->a, &a))
            return false;
        if (n->b->kind == N_SLICE) {
            jv parts[3] = { jv_none(), jv_none(), jv_none() };
            const jnode *pn[3] = { n->b->a, n->b->b, n->b->c };
            ok = true;
            for (int i = 0; ok && i < 3; i++)
                if (pn[i])
                    ok = eval(cx, f, pn[i], &parts[i]);
            ok = ok && slice(cx, n, a, parts[0], parts[1], parts[2], out);
            for (int i = 0; i < 3; i++)
                jv_decref(cx, parts[i]);
        } else if (eval(cx, f, n->b, &b)) {
            ok = getitem(cx, n, a, b, out);
            jv_decref(cx, b);
        }
        jv_decref(cx, a);
        return ok;
    case N_CALL: {
        if (!eval(cx, f, n->a, &a))
            return false;
        jargs args;
        if (eval_args(cx, f, n, &args))
            ok = jx_call(cx, n, a, &args, out);
        args_release(cx, &args);
        jv_decref(cx, a);
        return ok;
    }
    case N_FILTER: return eval_filter(cx, f, n, jv_undef(n), out);
    case N_TEST: {
        if (n->builtin < 0)
            return jx_fail(cx, n, "no test named '%.*s'", (int)n->name_len, n->name);
        if (!eval(cx, f, n->a, &a))
            return false;
        jargs args;
        bool r = false;
        if (eval_args(cx, f, n, &args))
            ok = jb_test(cx, n, n->builtin, a, &args, &r);
        args_release(cx, &args);
        jv_decref(cx, a);
        *out = jv_bool(r);
        return ok;
    }
    default: return jx_fail(cx, n, "unexpected node");
    }
}

/* A filter chain; a NULL operand at its root stands for input (a filter block's body). */
static bool eval_filter(jctx *cx, jframe *f, const jnode *n, jv input, jv *out) {
    if (n->builtin < 0)
        return jx_fail(cx, n, "no filter named '%.*s'", (int)n->name_len, n->name);
    jv operand;
    bool ok = false;
    if (!n->a)
        operand = jv_copy(input);
    else if (n->a->kind == N_FILTER ? !eval_filter(cx, f, n->a, input, &operand) : !eval(cx, f, n->a, &operand))
        return false;
    jargs args;
    if (eval_args(cx, f, n, &args))
        ok = jb_filter(cx, n, n->builtin, operand, &args, out);
    args_release(cx, &args);
    jv_decref(cx, operand);
    return ok;
}

static bool eval(jctx *cx, jframe *f, const jnode *n, jv *out) {
    out->type = JV_UNDEF;
    out->unsafe = false;
    out->u.undef = n;
    if (cx->failed || !jx_step(cx, n, 1))
        return false;
    if (++cx->depth > cx->limits.max_depth * 16) {
        cx->depth--;
        return jx_fail(cx, n, "template nested deeper than %d", cx->limits.max_depth * 16);
    }
    bool ok = eval_inner(cx, f, n, out);
    cx->depth--;
    if (!ok) {
        jv_decref(cx, *out);
        *out = jv_undef(n);
    }
    return ok;
}

/* ---- Statements -------------------------------------------------------------------------------- */

/* Binds value to a name or unpacks it over a tuple of names; takes the reference. */
static bool assign(jctx *cx, jframe *f, const jnode *target, jv value) {
    if (target->kind == N_NAME)
        return frame_set(cx, target, f, target->name, target->name_len, value);
    jv items;
    if (!jv_iterate(cx, target, value, &items)) {
        jv_decref(cx, value);
        return false;
    }
    jv_decref(cx, value);
    bool ok = true;
    if (items.u.l->len != target->n_items)
        ok = jx_fail(cx, target, "%s values to unpack (expected %zu, got %zu)",
                     items.u.l->len > target->n_items ? "too many" : "not enough", target->n_items, items.u.l->len);
    for (size_t i = 0; ok && i < target->n_items; i++)
        ok = assign(cx, f, target->items[i], jv_copy(items.u.l->items[i]));
    jv_decref(cx, items);
    return ok;
}

static flow exec_for(jctx *cx, jframe *outer, const jnode *n) {
    jv iter, items, list;
    if (!eval(cx, outer, n->b, &iter))
        return FLOW_ERR;
    bool ok = jv_iterate(cx, n->b, iter, &items);
    jv_decref(cx, iter);
    if (!ok)
        return FLOW_ERR;
    jframe *f = frame_new(cx, n, outer);
    if (!f) {
        jv_decref(cx, items);
        return FLOW_ERR;
    }
    /* `for x in xs if cond`: the filter sees the target and decides loop.length */
    if (n->c) {
        ok = jv_list(cx, n, 0, false, &list);
        for (size_t i = 0; ok && i < items.u.l->len; i++) {
            jv keep;
            ok = jx_step(cx, n, 1) && assign(cx, f, n->a, jv_copy(items.u.l->items[i])) && eval(cx, f, n->c, &keep);
            if (ok && jv_truthy(keep))
                ok = jlist_push(cx, n, list.u.l, jv_copy(items.u.l->items[i]));
            if (ok)
                jv_decref(cx, keep);
        }
        jv_decref(cx, items);
        if (!ok) {
            jx_release(cx, &f->h);
            return FLOW_ERR;
        }
    } else {
        list = items;
    }
    jloop *loop = jx_alloc(cx, n, sizeof *loop, JV_LOOP);
    flow fl = loop ? FLOW_OK : FLOW_ERR;
    if (loop) {
        loop->items = list;
        jv lv = { .type = JV_LOOP };
        lv.u.loop = loop;
        if (!frame_set(cx, n, f, "loop", 4, lv))
            fl = FLOW_ERR;
    } else {
        jv_decref(cx, list);
    }
    size_t count = fl == FLOW_OK ? list.u.l->len : 0;
    for (size_t i = 0; fl == FLOW_OK && i < count; i++) {
        loop->index0 = i;
        if (!jx_step(cx, n, 1) || !assign(cx, f, n->a, jv_copy(list.u.l->items[i]))) {
            fl = FLOW_ERR;
            break;
        }
        fl = exec_body(cx, f, n->d);
        if (fl == FLOW_BREAK) {
            fl = FLOW_OK;
            break;
        }
        if (fl == FLOW_CONTINUE)
            fl = FLOW_OK;
    }
    if (fl == FLOW_OK && count == 0 && n->e)
        fl = exec_body(cx, outer, n->e);
    jx_release(cx, &f->h);
    return fl;
}

/* Runs body with output captured into a new string. */
static bool capture(jctx *cx, jframe *f, const jnode *at, const jnode *body, jv *out) {
    jsb b, *saved = cx->out;
    jsb_init(&b);
    cx->out = &b;
    flow fl = exec_body(cx, f, body);
    cx->out = saved;
    if (fl == FLOW_ERR) {
        jsb_free(&b);
        return false;
    }
    return jsb_finish(cx, at, &b, out);
}

static flow exec_stmt(jctx *cx, jframe *f, const jnode *n) {
    jv v = jv_none(), w = jv_none();
    switch (n->kind) {
    case S_DATA: return jsb_put(cx, n, cx->out, n->name, n->name_len, false) ? FLOW_OK : FLOW_ERR;
    case S_OUTPUT: {
        if (!eval(cx, f, n->a, &v))
            return FLOW_ERR;
        bool ok = jx_put_str(cx, n, cx->out, v);
        jv_decref(cx, v);
        return ok ? FLOW_OK : FLOW_ERR;
    }
    case S_IF:
        for (const jnode *c = n; c;) {
            if (c->kind != S_IF)
                return exec_body(cx, f, c);
            if (!eval(cx, f, c->a, &v))
                return FLOW_ERR;
            bool yes = jv_truthy(v);
            jv_decref(cx, v);
            if (yes)
                return exec_body(cx, f, c->b);
            c = c->c;
        }
        return FLOW_OK;
    case S_FOR: return exec_for(cx, f, n);
    case S_SET:
        if (!eval(cx, f, n->b, &v))
            return FLOW_ERR;
        if (n->a->kind == N_NSATTR) {
            jv *ns = frame_find(f, n->a->name, n->a->name_len);
            if (!ns || ns->type != JV_NS) {
                jv_decref(cx, v);
                jx_fail(cx, n, "cannot assign attribute on non-namespace object");
                return FLOW_ERR;
            }
            if (!jv_str(cx, n, n->a->attr, n->a->attr_len, false, &w)) {
                jv_decref(cx, v);
                return FLOW_ERR;
            }
            return jdict_set(cx, n, ns->u.d, w, v) ? FLOW_OK : FLOW_ERR;
        }
        return assign(cx, f, n->a, v) ? FLOW_OK : FLOW_ERR;
    case S_SETBLOCK:
        if (!capture(cx, f, n, n->d, &v))
            return FLOW_ERR;
        if (n->c) {
            bool ok = eval_filter(cx, f, n->c, v, &w);
            jv_decref(cx, v);
            if (!ok)
                return FLOW_ERR;
            v = w;
        }
        if (n->a->kind == N_NSATTR) {
            jv *ns = frame_find(f, n->a->name, n->a->name_len);
            jv key;
            if (!ns || ns->type != JV_NS) {
                jv_decref(cx, v);
                jx_fail(cx, n, "cannot assign attribute on non-namespace object");
                return FLOW_ERR;
            }
            if (!jv_str(cx, n, n->a->attr, n->a->attr_len, false, &key)) {
                jv_decref(cx, v);
                return FLOW_ERR;
            }
            return jdict_set(cx, n, ns->u.d, key, v) ? FLOW_OK : FLOW_ERR;
        }
        return assign(cx, f, n->a, v) ? FLOW_OK : FLOW_ERR;
    case S_MACRO: {
        jmacro *m = jx_alloc(cx, n, sizeof *m, JV_MACRO);
        if (!m)
            return FLOW_ERR;
        m->def = n;
        m->closure = f;
        f->h.refs++;
        m->caller = jv_undef(n);
        v.type = JV_MACRO;
        v.unsafe = false;
        v.u.m = m;
        return frame_set(cx, n, f, n->name, n->name_len, v) ? FLOW_OK : FLOW_ERR;
    }
    case S_CALLBLOCK: {
        const jnode *call = n->a;
        jmacro *caller = jx_alloc(cx, n, sizeof *caller, JV_MACRO);
        if (!caller)
            return FLOW_ERR;
        caller->def = n;
        caller->closure = f;
        f->h.refs++;
        caller->caller = jv_undef(n);
        jv cv = { .type = JV_MACRO };
        cv.u.m = caller;
        jargs args;
        bool ok = false;
        if (eval(cx, f, call->a, &w)) {
            if (eval_args(cx, f, call, &args)) {
                args.kw[args.n_kw] = jv_copy(cv);
                args.kw_names[args.n_kw] = "caller";
                args.kw_lens[args.n_kw] = 6;
                args.n_kw++;
                ok = jx_call(cx, call, w, &args, &v);
            }
            args_release(cx, &args);
            jv_decref(cx, w);
        }
        jv_decref(cx, cv);
        if (!ok)
            return FLOW_ERR;
        ok = jx_put_str(cx, n, cx->out, v);
        jv_decref(cx, v);
        return ok ? FLOW_OK : FLOW_ERR;
    }
    case S_FILTERBLOCK: {
        if (!capture(cx, f, n, n->d, &v))
            return FLOW_ERR;
        bool ok = eval_filter(cx, f, n->c, v, &w);
        jv_decref(cx, v);
        if (!ok)
            return FLOW_ERR;
        ok = jx_put_str(cx, n, cx->out, w);
        jv_decref(cx, w);
        return ok ? FLOW_OK : FLOW_ERR;
    }
    case S_BREAK: return FLOW_BREAK;
    case S_CONTINUE: return FLOW_CONTINUE;
    case S_BODY: return exec_body(cx, f, n);
    default: jx_fail(cx, n, "unexpected statement"); return FLOW_ERR;
    }
}

static flow exec_body(jctx *cx, jframe *f, const jnode *body) {
    if (cx->failed || !jx_step(cx, body, 1))
        return FLOW_ERR;
    if (++cx->depth > cx->limits.max_depth * 16) {
        cx->depth--;
        jx_fail(cx, body, "template nested deeper than %d", cx->limits.max_depth * 16);
        return FLOW_ERR;
    }
    flow fl = FLOW_OK;
    for (size_t i = 0; i < body->n_items && fl == FLOW_OK; i++)
        fl = exec_stmt(cx, f, body->items[i]);
    cx->depth--;
    return cx->failed ? FLOW_ERR : fl;
}

/* ---- Render ------------------------------------------------------------------------------------ */

jinja_limits jinja_default_limits(void) {
    jinja_limits l = { .max_steps = 10000000, .max_output = 16u << 20, .max_depth = 64, .max_memory = 256u << 20 };
    return l;
}

void jinja_output_free(jinja_output *o) {
    if (!o)
        return;
    buf_free(&o->text);
    free(o->markup_spans);
    memset(o, 0, sizeof *o);
}

/* The output's markup spans: the complement of its data spans. */
static bool markup_spans(const jsb *b, jinja_output *out) {
    size_t n = 0, cap = b->n_spans + 1;
    size_t *spans = malloc(cap * 2 * sizeof *spans);
    if (!spans)
        return false;
    size_t pos = 0;
    for (size_t i = 0; i <= b->n_spans; i++) {
        size_t end = i < b->n_spans ? b->spans[2 * i] : b->text.len;
        if (end > pos) {
            spans[2 * n] = pos;
            spans[2 * n + 1] = end;
            n++;
        }
        if (i < b->n_spans)
            pos = b->spans[2 * i + 1];
    }
    out->markup_spans = spans;
    out->n_markup_spans = n;
    return true;
}

brasa_status jinja_render(const jinja_template *t, const jinja_var *vars, size_t n_vars, int64_t now,
                          const jinja_limits *limits, jinja_output *out, brasa_error *err) {
    if (!t || !out || (n_vars && !vars))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "jinja_render: no template, output or variables");
    memset(out, 0, sizeof *out);
    jctx cx;
    memset(&cx, 0, sizeof cx);
    cx.limits = limits ? *limits : jinja_default_limits();
    if (cx.limits.max_depth < 1)
        cx.limits.max_depth = 1;
    if (cx.limits.max_depth > 1024)
        cx.limits.max_depth = 1024; /* 16 times this is the C recursion bound */
    cx.now = now;
    cx.err = err;
    jsb text;
    jsb_init(&text);
    cx.out = &text;
    bool ok = (cx.globals = frame_new(&cx, NULL, NULL)) != NULL;
    for (size_t i = 0; ok && i < n_vars; i++) {
        if (!vars[i].value || !vars[i].name)
            continue;
        jv v;
        ok = jv_from_json(&cx, vars[i].value, vars[i].trusted, 0, &v) &&
             frame_set(&cx, NULL, cx.globals, vars[i].name, strlen(vars[i].name), v);
    }
    ok = ok && exec_body(&cx, cx.globals, t->root) == FLOW_OK;
    jx_free_all(&cx);
    if (!ok) {
        jsb_free(&text);
        return cx.failed ? BRASA_ERR_FORMAT : err_set(err, BRASA_ERR_INTERNAL, "template render failed");
    }
    if (!markup_spans(&text, out)) {
        jsb_free(&text);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    out->text = text.text;
    free(text.spans);
    return BRASA_OK;
}
