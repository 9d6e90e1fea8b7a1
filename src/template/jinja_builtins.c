/* jinja_builtins.c: what templates call by name: jinja2's filters and tests, the methods of str,
 * dict and list that the sandbox allows (mutating ones come back as unsafe undefined values), and
 * the globals (range, namespace, dict, and transformers' raise_exception and strftime_now). Each
 * follows the Python original's behaviour on the values chat templates see. A result built from a
 * string that held data is data as a whole (join and concatenation keep finer ranges). */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L /* localtime_r: localtime's shared buffer is no place for a library */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/utf8.h"
#include "template/jinja_internal.h"

/* ---- Small helpers ----------------------------------------------------------------------------- */

static bool name_is(const char *name, size_t len, const char *s) { return strlen(s) == len && memcmp(name, s, len) == 0; }

static bool arg_bool(const jargs *a, size_t i, const char *name, bool def) {
    jv *v = jargs_get(a, i, name);
    return v ? jv_truthy(*v) : def;
}

static bool is_space_cp(uint32_t cp) {
    return cp == ' ' || (cp >= '\t' && cp <= '\r') || (cp >= 0x1c && cp <= 0x1f) || cp == 0x85 || cp == 0xa0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
           cp == 0x205f || cp == 0x3000;
}

static uint32_t next_cp(const char *p, size_t n, size_t *i) {
    uint32_t cp = 0;
    int k = utf8_decode((const unsigned char *)p + *i, n - *i, &cp);
    if (k <= 0) {
        *i += 1;
        return 0xfffd;
    }
    *i += (size_t)k;
    return cp;
}

/* Simple case mapping: ASCII, Latin-1, Greek and Cyrillic (what chat templates meet). */
static uint32_t cp_upper(uint32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if ((c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 32;
    if (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) return c - 32;
    if (c >= 0x430 && c <= 0x44f) return c - 32;
    if (c >= 0x450 && c <= 0x45f) return c - 80;
    return c;
}

static uint32_t cp_lower(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if ((c >= 0xc0 && c <= 0xde && c != 0xd7)) return c + 32;
    if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;
    if (c >= 0x410 && c <= 0x42f) return c + 32;
    if (c >= 0x400 && c <= 0x40f) return c + 80;
    return c;
}

static bool is_cased(uint32_t c) { return cp_upper(c) != c || cp_lower(c) != c; }
static bool is_upper_cp(uint32_t c) { return cp_lower(c) != c; }
static bool is_lower_cp(uint32_t c) { return cp_upper(c) != c; }

static bool put_cp(jctx *cx, const jnode *at, jsb *b, uint32_t cp, bool data) {
    char u[4];
    int k = utf8_encode(cp, u);
    return jsb_put(cx, at, b, u, (size_t)k, data);
}

/* str(v) for a filter that works on text; the caller releases *s. */
static bool text_of(jctx *cx, const jnode *at, jv v, jv *s) { return jv_to_str(cx, at, v, s); }

typedef enum case_map { CASE_UPPER, CASE_LOWER, CASE_CAPITALIZE, CASE_TITLE_PY, CASE_TITLE_JINJA } case_map;

static bool map_case(jctx *cx, const jnode *at, const jstr *s, case_map how, jv *out) {
    jsb b;
    jsb_init(&b);
    bool data = s->n_spans > 0, ok = true, first = true, prev_cased = false;
    for (size_t i = 0; ok && i < s->len;) {
        uint32_t cp = next_cp(s->p, s->len, &i), r;
        switch (how) {
        case CASE_UPPER: r = cp_upper(cp); break;
        case CASE_LOWER: r = cp_lower(cp); break;
        case CASE_CAPITALIZE: r = first ? cp_upper(cp) : cp_lower(cp); break;
        case CASE_TITLE_PY:
        case CASE_TITLE_JINJA:
        default: r = prev_cased ? cp_lower(cp) : cp_upper(cp); break;
        }
        if (how == CASE_TITLE_PY)
            prev_cased = is_cased(cp);
        else if (how == CASE_TITLE_JINJA) /* words begin after - whitespace ( { [ < */
            prev_cased = !(is_space_cp(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<');
        first = false;
        ok = put_cp(cx, at, &b, r, data);
    }
    if (!ok) {
        jsb_free(&b);
        return false;
    }
    return jsb_finish(cx, at, &b, out);
}

/* Whether cp is in the strip set: whitespace when chars is NULL, else one of chars' code points. */
static bool in_set(uint32_t cp, const jstr *chars) {
    if (!chars)
        return is_space_cp(cp);
    for (size_t i = 0; i < chars->len;)
        if (next_cp(chars->p, chars->len, &i) == cp)
            return true;
    return false;
}

static bool strip(jctx *cx, const jnode *at, const jstr *s, const jstr *chars, bool left, bool right, jv *out) {
    size_t start = 0, end = s->len;
    if (left) {
        while (start < end) {
            size_t i = start;
            if (!in_set(next_cp(s->p, end, &i), chars))
                break;
            start = i;
        }
    }
    if (right) {
        while (end > start) {
            size_t j = end - 1;
            while (j > start && ((unsigned char)s->p[j] & 0xc0) == 0x80)
                j--;
            size_t i = j;
            if (!in_set(next_cp(s->p, end, &i), chars))
                break;
            end = j;
        }
    }
    return jv_str(cx, at, s->p + start, end - start, s->n_spans > 0, out);
}

static bool is_line_break(uint32_t cp) {
    return cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 ||
           cp == 0x2028 || cp == 0x2029;
}

/* Python's str.splitlines(keepends=False) */
static bool splitlines(jctx *cx, const jnode *at, const jstr *s, jv *out) {
    if (!jv_list(cx, at, 0, false, out))
        return false;
    size_t start = 0;
    for (size_t i = 0; i < s->len;) {
        size_t here = i;
        uint32_t cp = next_cp(s->p, s->len, &i);
        if (!is_line_break(cp))
            continue;
        jv line;
        if (!jv_str(cx, at, s->p + start, here - start, s->n_spans > 0, &line) || !jlist_push(cx, at, out->u.l, line))
            return false;
        if (cp == '\r' && i < s->len && s->p[i] == '\n')
            i++;
        start = i;
    }
    if (start < s->len) {
        jv line;
        if (!jv_str(cx, at, s->p + start, s->len - start, s->n_spans > 0, &line) || !jlist_push(cx, at, out->u.l, line))
            return false;
    }
    return true;
}

/* str.split / rsplit with a separator (sep) or on whitespace runs (sep NULL). */
static bool split(jctx *cx, const jnode *at, const jstr *s, const jstr *sep, int64_t maxsplit, bool from_right, jv *out) {
    if (!jv_list(cx, at, 0, false, out))
        return false;
    bool data = s->n_spans > 0;
    jlist *l = out->u.l;
    if (sep && sep->len == 0)
        return jx_fail(cx, at, "empty separator");
    /* collect pieces as (start, end) byte ranges, in order */
    size_t *pieces = NULL, n = 0, cap = 0;
    bool ok = true;
#define ADD(a, b)                                                                                   \
    do {                                                                                            \
        if (n == cap) {                                                                             \
            cap = cap ? cap * 2 : 16;                                                               \
            size_t *np = realloc(pieces, cap * 2 * sizeof *np);                                     \
            if (!np) { ok = jx_fail(cx, at, "out of memory"); goto done; }                         \
            pieces = np;                                                                            \
        }                                                                                           \
        pieces[2 * n] = (a);                                                                        \
        pieces[2 * n + 1] = (b);                                                                    \
        n++;                                                                                        \
    } while (0)
    if (sep) {
        if (!from_right) {
            size_t start = 0;
            int64_t splits = 0;
            for (size_t i = 0; i + sep->len <= s->len;) {
                if ((maxsplit < 0 || splits < maxsplit) && memcmp(s->p + i, sep->p, sep->len) == 0) {
                    ADD(start, i);
                    i += sep->len;
                    start = i;
                    splits++;
                } else {
                    i++;
                }
            }
            ADD(start, s->len);
        } else {
            size_t end = s->len;
            int64_t splits = 0;
            for (size_t i = s->len; i >= sep->len;) {
                if ((maxsplit < 0 || splits < maxsplit) && memcmp(s->p + i - sep->len, sep->p, sep->len) == 0) {
                    ADD(i, end);
                    i -= sep->len;
                    end = i;
                    splits++;
                } else {
                    i--;
                }
            }
            ADD(0, end);
        }
    } else {
        /* whitespace runs, leading and trailing ignored */
        size_t i = 0;
        int64_t splits = 0;
        if (!from_right) {
            for (;;) {
                while (i < s->len) {
                    size_t j = i;
                    if (!is_space_cp(next_cp(s->p, s->len, &j)))
                        break;
                    i = j;
                }
                if (i >= s->len)
                    break;
                if (maxsplit >= 0 && splits >= maxsplit) {
                    size_t end = s->len; /* the rest, trailing whitespace stripped */
                    while (end > i && is_space_cp((unsigned char)s->p[end - 1]))
                        end--;
                    ADD(i, end);
                    break;
                }
                size_t start = i;
                while (i < s->len) {
                    size_t j = i;
                    if (is_space_cp(next_cp(s->p, s->len, &j)))
                        break;
                    i = j;
                }
                ADD(start, i);
                splits++;
            }
        } else {
            size_t end = s->len;
            for (;;) {
                while (end > 0 && is_space_cp((unsigned char)s->p[end - 1]))
                    end--;
                if (end == 0)
                    break;
                if (maxsplit >= 0 && splits >= maxsplit) {
                    size_t start = 0;
                    while (start < end && is_space_cp((unsigned char)s->p[start]))
                        start++;
                    ADD(start, end);
                    break;
                }
                size_t start = end;
                while (start > 0 && !is_space_cp((unsigned char)s->p[start - 1]))
                    start--;
                ADD(start, end);
                end = start;
                splits++;
            }
        }
    }
    if (from_right) { /* collected right to left */
        for (size_t i = 0; i < n / 2; i++) {
            size_t a0 = pieces[2 * i], a1 = pieces[2 * i + 1];
            pieces[2 * i] = pieces[2 * (n - 1 - i)];
            pieces[2 * i + 1] = pieces[2 * (n - 1 - i) + 1];
            pieces[2 * (n - 1 - i)] = a0;
            pieces[2 * (n - 1 - i) + 1] = a1;
        }
    }
    for (size_t i = 0; ok && i < n; i++) {
        jv piece;
        ok = jx_step(cx, at, 1) && jv_str(cx, at, s->p + pieces[2 * i], pieces[2 * i + 1] - pieces[2 * i], data, &piece) &&
             jlist_push(cx, at, l, piece);
    }
#undef ADD
done:
    free(pieces);
    return ok;
}

static bool replace(jctx *cx, const jnode *at, const jstr *s, const jstr *old, const jstr *new_, int64_t count, jv *out) {
    jsb b;
    jsb_init(&b);
    bool data = s->n_spans > 0 || old->n_spans > 0 || new_->n_spans > 0, ok = true;
    int64_t done = 0;
    if (old->len == 0) { /* Python inserts new before every character and at the end */
        for (size_t i = 0; ok && i <= s->len;) {
            if (count < 0 || done < count) {
                ok = jsb_put(cx, at, &b, new_->p, new_->len, data);
                done++;
            }
            if (i == s->len)
                break;
            size_t j = i;
            next_cp(s->p, s->len, &j);
            ok = ok && jsb_put(cx, at, &b, s->p + i, j - i, data);
            i = j;
        }
    } else {
        size_t i = 0;
        while (ok && i < s->len) {
            const char *hit = (count < 0 || done < count) && s->len - i >= old->len
                                  ? jx_find(s->p + i, s->len - i, old->p, old->len)
                                  : NULL;
            if (!hit) {
                ok = jsb_put(cx, at, &b, s->p + i, s->len - i, data);
                break;
            }
            size_t h = (size_t)(hit - s->p);
            ok = jsb_put(cx, at, &b, s->p + i, h - i, data) && jsb_put(cx, at, &b, new_->p, new_->len, data);
            i = h + old->len;
            done++;
        }
    }
    if (!ok) {
        jsb_free(&b);
        return false;
    }
    return jsb_finish(cx, at, &b, out);
}

static bool need_str(jctx *cx, const jnode *at, const jv *v, const char *what) {
    if (!v || v->type != JV_STR)
        return jx_fail(cx, at, "%s must be a string", what);
    return true;
}

static int64_t count_before(const jstr *s, size_t byte) { return (int64_t)jx_utf8_count(s->p, byte); }

/* str.format with {} {0} {name} fields and {{ }} escapes; format specs are not supported. */
static bool str_format(jctx *cx, const jnode *at, const jstr *s, const jargs *a, jv *out) {
    jsb b;
    jsb_init(&b);
    bool ok = true, data = s->n_spans > 0;
    size_t auto_index = 0;
    for (size_t i = 0; ok && i < s->len; i++) {
        char c = s->p[i];
        if ((c == '{' || c == '}') && i + 1 < s->len && s->p[i + 1] == c) {
            ok = jsb_put(cx, at, &b, &c, 1, data);
            i++;
            continue;
        }
        if (c == '}') {
            ok = jx_fail(cx, at, "single '}' encountered in format string");
            break;
        }
        if (c != '{') {
            ok = jsb_put(cx, at, &b, &c, 1, data);
            continue;
        }
        const char *close = memchr(s->p + i, '}', s->len - i);
        if (!close) {
            ok = jx_fail(cx, at, "single '{' encountered in format string");
            break;
        }
        const char *field = s->p + i + 1;
        size_t flen = (size_t)(close - field);
        if (memchr(field, ':', flen) || memchr(field, '!', flen) || memchr(field, '.', flen) || memchr(field, '[', flen)) {
            ok = jx_fail(cx, at, "format specifications are not supported");
            break;
        }
        jv *v = NULL;
        if (flen == 0) {
            v = auto_index < a->n_pos ? &a->pos[auto_index] : NULL;
            auto_index++;
        } else if (field[0] >= '0' && field[0] <= '9') {
            size_t k = (size_t)strtoul(field, NULL, 10);
            v = k < a->n_pos ? &a->pos[k] : NULL;
        } else {
            for (size_t k = 0; k < a->n_kw; k++)
                if (a->kw_lens[k] == flen && memcmp(a->kw_names[k], field, flen) == 0)
                    v = &a->kw[k];
        }
        if (!v) {
            ok = jx_fail(cx, at, "format: replacement index out of range");
            break;
        }
        ok = jx_put_str(cx, at, &b, *v);
        i = (size_t)(close - s->p);
    }
    if (!ok) {
        jsb_free(&b);
        return false;
    }
    return jsb_finish(cx, at, &b, out);
}

/* ---- Methods ----------------------------------------------------------------------------------- */

static const char *const str_methods[] = {
    "startswith", "endswith", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "replace", "upper",
    "lower", "title", "capitalize", "find", "rfind", "index", "rindex", "count", "join", "format", "isdigit",
    "isalpha", "isalnum", "isspace", "isupper", "islower", "isnumeric", "isdecimal", "removeprefix", "removesuffix",
    NULL,
};
static const char *const dict_methods[] = { "get", "items", "keys", "values", "copy", NULL };
static const char *const list_methods[] = { "index", "count", "copy", NULL };
/* what ImmutableSandboxedEnvironment refuses: the methods that change a list or dict */
static const char *const list_mutators[] = { "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort", NULL };
static const char *const dict_mutators[] = { "clear", "pop", "popitem", "setdefault", "update", NULL };

static bool in_names(const char *const *names, const char *name, size_t len) {
    for (size_t i = 0; names[i]; i++)
        if (name_is(name, len, names[i]))
            return true;
    return false;
}

bool jb_method_lookup(jctx *cx, const jnode *at, jv self, const char *name, size_t len, jv *out, bool *found) {
    const char *const *methods = self.type == JV_STR ? str_methods : self.type == JV_DICT ? dict_methods
                                 : self.type == JV_LIST ? list_methods : NULL;
    const char *const *mutators = self.type == JV_DICT ? dict_mutators : self.type == JV_LIST ? list_mutators : NULL;
    *found = false;
    if (mutators && in_names(mutators, name, len)) {
        *found = true;
        *out = jv_undef(at);
        out->unsafe = true;
        return true;
    }
    if (!methods || !in_names(methods, name, len))
        return true;
    jmethod *m = jx_alloc(cx, at, sizeof *m, JV_METHOD);
    if (!m)
        return false;
    m->self = jv_copy(self);
    m->name = name;
    m->name_len = len;
    out->type = JV_METHOD;
    out->unsafe = false;
    out->u.method = m;
    *found = true;
    return true;
}

static bool starts_or_ends(jctx *cx, const jnode *at, const jstr *s, const jv *arg, bool ends, jv *out) {
    if (!arg)
        return jx_fail(cx, at, "startswith/endswith takes a string or a tuple of strings");
    if (arg->type == JV_LIST) {
        for (size_t i = 0; i < arg->u.l->len; i++) {
            jv r = jv_bool(false);
            if (!starts_or_ends(cx, at, s, &arg->u.l->items[i], ends, &r))
                return false;
            if (r.u.b) {
                *out = r;
                return true;
            }
        }
        *out = jv_bool(false);
        return true;
    }
    if (!need_str(cx, at, arg, "the prefix or suffix"))
        return false;
    const jstr *x = arg->u.s;
    bool r = x->len <= s->len && memcmp(ends ? s->p + s->len - x->len : s->p, x->p, x->len) == 0;
    *out = jv_bool(r);
    return true;
}

static bool str_predicate(const jstr *s, const char *which) {
    if (s->len == 0)
        return false;
    bool any_cased = false;
    for (size_t i = 0; i < s->len;) {
        uint32_t cp = next_cp(s->p, s->len, &i);
        if (!strcmp(which, "isdigit") || !strcmp(which, "isnumeric") || !strcmp(which, "isdecimal")) {
            if (!(cp >= '0' && cp <= '9'))
                return false;
        } else if (!strcmp(which, "isalpha")) {
            if (!(is_cased(cp) || cp > 0x2e80))
                return false;
        } else if (!strcmp(which, "isalnum")) {
            if (!(is_cased(cp) || cp > 0x2e80 || (cp >= '0' && cp <= '9')))
                return false;
        } else if (!strcmp(which, "isspace")) {
            if (!is_space_cp(cp))
                return false;
        } else if (!strcmp(which, "isupper")) {
            if (is_lower_cp(cp))
                return false;
            any_cased |= is_upper_cp(cp);
        } else if (!strcmp(which, "islower")) {
            if (is_upper_cp(cp))
                return false;
            any_cased |= is_lower_cp(cp);
        }
    }
    return (!strcmp(which, "isupper") || !strcmp(which, "islower")) ? any_cased : true;
}

static bool str_method(jctx *cx, const jnode *at, const jstr *s, const char *name, size_t len, const jargs *a, jv *out) {
    jv *a0 = jargs_get(a, 0, NULL), *a1 = jargs_get(a, 1, NULL);
    bool data = s->n_spans > 0;
    if (name_is(name, len, "startswith") || name_is(name, len, "endswith"))
        return starts_or_ends(cx, at, s, a0, name[0] == 'e', out);
    if (name_is(name, len, "strip") || name_is(name, len, "lstrip") || name_is(name, len, "rstrip")) {
        const jstr *chars = NULL;
        if (a0 && a0->type != JV_NONE) {
            if (!need_str(cx, at, a0, "strip characters"))
                return false;
            chars = a0->u.s;
        }
        return strip(cx, at, s, chars, name[0] != 'r', name[0] != 'l', out);
    }
    if (name_is(name, len, "split") || name_is(name, len, "rsplit")) {
        jv *sep = jargs_get(a, 0, "sep"), *maxsplit = jargs_get(a, 1, "maxsplit");
        if (sep && sep->type != JV_NONE && !need_str(cx, at, sep, "the separator"))
            return false;
        int64_t ms = maxsplit && maxsplit->type == JV_INT ? maxsplit->u.i : -1;
        return split(cx, at, s, sep && sep->type == JV_STR ? sep->u.s : NULL, ms, name[0] == 'r', out);
    }
    if (name_is(name, len, "splitlines"))
        return splitlines(cx, at, s, out);
    if (name_is(name, len, "replace")) {
        if (!need_str(cx, at, a0, "replace's old") || !need_str(cx, at, a1, "replace's new"))
            return false;
        jv *count = jargs_get(a, 2, "count");
        return replace(cx, at, s, a0->u.s, a1->u.s, count && count->type == JV_INT ? count->u.i : -1, out);
    }
    if (name_is(name, len, "upper")) return map_case(cx, at, s, CASE_UPPER, out);
    if (name_is(name, len, "lower")) return map_case(cx, at, s, CASE_LOWER, out);
    if (name_is(name, len, "title")) return map_case(cx, at, s, CASE_TITLE_PY, out);
    if (name_is(name, len, "capitalize")) return map_case(cx, at, s, CASE_CAPITALIZE, out);
    if (name_is(name, len, "find") || name_is(name, len, "rfind") || name_is(name, len, "index") ||
        name_is(name, len, "rindex")) {
        if (!need_str(cx, at, a0, "the substring"))
            return false;
        const jstr *x = a0->u.s;
        bool right = name[0] == 'r';
        int64_t found = -1;
        if (x->len <= s->len) {
            if (!right) {
                const char *h = x->len ? jx_find(s->p, s->len, x->p, x->len) : s->p;
                if (h)
                    found = count_before(s, (size_t)(h - s->p));
            } else {
                for (size_t i = s->len - x->len + 1; i-- > 0;)
                    if (memcmp(s->p + i, x->p, x->len) == 0) {
                        found = count_before(s, i);
                        break;
                    }
            }
        }
        if (found < 0 && name[right ? 1 : 0] == 'i')
            return jx_fail(cx, at, "substring not found");
        *out = jv_int(found);
        return true;
    }
    if (name_is(name, len, "count")) {
        if (!need_str(cx, at, a0, "the substring"))
            return false;
        const jstr *x = a0->u.s;
        int64_t n = 0;
        if (x->len == 0) {
            n = (int64_t)jx_utf8_count(s->p, s->len) + 1;
        } else {
            for (size_t i = 0; i + x->len <= s->len;) {
                const char *h = jx_find(s->p + i, s->len - i, x->p, x->len);
                if (!h)
                    break;
                n++;
                i = (size_t)(h - s->p) + x->len;
            }
        }
        *out = jv_int(n);
        return true;
    }
    if (name_is(name, len, "join")) {
        if (!a0)
            return jx_fail(cx, at, "join takes one argument");
        jv items;
        if (!jv_iterate(cx, at, *a0, &items))
            return false;
        jsb b;
        jsb_init(&b);
        bool ok = true;
        for (size_t i = 0; ok && i < items.u.l->len; i++) {
            jv it = items.u.l->items[i];
            if (it.type != JV_STR)
                ok = jx_fail(cx, at, "sequence item %zu: expected str instance, %s found", i, jv_type_name(it));
            else
                ok = (i == 0 || jsb_put_str(cx, at, &b, s)) && jsb_put_str(cx, at, &b, it.u.s);
        }
        jv_decref(cx, items);
        if (!ok) {
            jsb_free(&b);
            return false;
        }
        return jsb_finish(cx, at, &b, out);
    }
    if (name_is(name, len, "format"))
        return str_format(cx, at, s, a, out);
    if (name_is(name, len, "removeprefix") || name_is(name, len, "removesuffix")) {
        if (!need_str(cx, at, a0, "the affix"))
            return false;
        const jstr *x = a0->u.s;
        bool pre = name[6] == 'p';
        if (x->len <= s->len && memcmp(pre ? s->p : s->p + s->len - x->len, x->p, x->len) == 0)
            return jv_str(cx, at, pre ? s->p + x->len : s->p, s->len - x->len, data, out);
        return jv_str(cx, at, s->p, s->len, data, out);
    }
    if (len > 2 && name[0] == 'i' && name[1] == 's') {
        char which[16];
        snprintf(which, sizeof which, "%.*s", (int)len, name);
        *out = jv_bool(str_predicate(s, which));
        return true;
    }
    return jx_fail(cx, at, "str has no method '%.*s'", (int)len, name);
}

static bool dict_items(jctx *cx, const jnode *at, const jdict *d, jv *out) {
    if (!jv_list(cx, at, d->len, false, out))
        return false;
    for (size_t i = 0; i < d->len; i++) {
        jv pair;
        if (!jv_list(cx, at, 2, true, &pair) || !jlist_push(cx, at, out->u.l, pair) ||
            !jlist_push(cx, at, pair.u.l, jv_copy(d->keys[i])) || !jlist_push(cx, at, pair.u.l, jv_copy(d->vals[i])))
            return false;
    }
    return true;
}

bool jb_call_method(jctx *cx, const jnode *at, const jmethod *m, const jargs *a, jv *out) {
    jv self = m->self;
    const char *name = m->name;
    size_t len = m->name_len;
    jv *a0 = jargs_get(a, 0, NULL);
    if (self.type == JV_STR)
        return str_method(cx, at, self.u.s, name, len, a, out);
    if (self.type == JV_DICT) {
        const jdict *d = self.u.d;
        if (name_is(name, len, "get")) {
            if (!a0)
                return jx_fail(cx, at, "get expected at least 1 argument");
            jv *v = jdict_find(d, *a0);
            jv *def = jargs_get(a, 1, NULL);
            *out = v ? jv_copy(*v) : def ? jv_copy(*def) : jv_none();
            return true;
        }
        if (name_is(name, len, "items")) {
            if (!dict_items(cx, at, d, out))
                return false;
            out->u.l->kind = JL_DICT_ITEMS;
            return true;
        }
        if (name_is(name, len, "keys") || name_is(name, len, "values")) {
            if (!jv_list(cx, at, d->len, false, out))
                return false;
            out->u.l->kind = name[0] == 'k' ? JL_DICT_KEYS : JL_DICT_VALUES;
            for (size_t i = 0; i < d->len; i++)
                if (!jlist_push(cx, at, out->u.l, jv_copy(name[0] == 'k' ? d->keys[i] : d->vals[i])))
                    return false;
            return true;
        }
        if (name_is(name, len, "copy")) {
            if (!jv_dict(cx, at, JV_DICT, out))
                return false;
            for (size_t i = 0; i < d->len; i++)
                if (!jdict_set(cx, at, out->u.d, jv_copy(d->keys[i]), jv_copy(d->vals[i])))
                    return false;
            return true;
        }
    }
    if (self.type == JV_LIST) {
        const jlist *l = self.u.l;
        if (name_is(name, len, "copy")) {
            if (!jv_list(cx, at, l->len, l->tuple, out))
                return false;
            for (size_t i = 0; i < l->len; i++)
                if (!jlist_push(cx, at, out->u.l, jv_copy(l->items[i])))
                    return false;
            return true;
        }
        if (!a0)
            return jx_fail(cx, at, "%.*s takes one argument", (int)len, name);
        int64_t n = 0;
        for (size_t i = 0; i < l->len; i++) {
            if (jv_equal(l->items[i], *a0)) {
                if (name[0] == 'i') {
                    *out = jv_int((int64_t)i);
                    return true;
                }
                n++;
            }
        }
        if (name[0] == 'i')
            return jx_fail(cx, at, "value is not in list");
        *out = jv_int(n);
        return true;
    }
    return jx_fail(cx, at, "'%s' object has no method '%.*s'", jv_type_name(self), (int)len, name);
}

/* ---- Tests ------------------------------------------------------------------------------------- */

typedef bool (*test_fn)(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r);

static bool need_arg(jctx *cx, const jnode *at, const jargs *a, jv **arg) {
    *arg = jargs_get(a, 0, NULL);
    return *arg ? true : jx_fail(cx, at, "the test takes an argument");
}

#define SIMPLE_TEST(fname, expr)                                                                    \
    static bool fname(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) {                  \
        (void)cx; (void)at; (void)a; (void)v;                                                              \
        *r = (expr);                                                                                \
        return true;                                                                                \
    }

SIMPLE_TEST(t_defined, v.type != JV_UNDEF)
SIMPLE_TEST(t_undefined, v.type == JV_UNDEF)
SIMPLE_TEST(t_none, v.type == JV_NONE)
SIMPLE_TEST(t_string, v.type == JV_STR)
SIMPLE_TEST(t_number, v.type == JV_INT || v.type == JV_FLOAT || v.type == JV_BOOL)
SIMPLE_TEST(t_integer, v.type == JV_INT)
SIMPLE_TEST(t_float, v.type == JV_FLOAT)
SIMPLE_TEST(t_boolean, v.type == JV_BOOL)
SIMPLE_TEST(t_true, v.type == JV_BOOL && v.u.b)
SIMPLE_TEST(t_false, v.type == JV_BOOL && !v.u.b)
SIMPLE_TEST(t_mapping, v.type == JV_DICT)
SIMPLE_TEST(t_sequence, v.type == JV_STR || v.type == JV_LIST || v.type == JV_DICT)
SIMPLE_TEST(t_iterable, v.type == JV_STR || v.type == JV_LIST || v.type == JV_DICT || v.type == JV_UNDEF)
SIMPLE_TEST(t_callable, v.type == JV_MACRO || v.type == JV_FUNC || v.type == JV_METHOD)
SIMPLE_TEST(t_escaped, false)
SIMPLE_TEST(t_lower, v.type == JV_STR && str_predicate(v.u.s, "islower"))
SIMPLE_TEST(t_upper, v.type == JV_STR && str_predicate(v.u.s, "isupper"))

static bool t_odd_even(jctx *cx, const jnode *at, jv v, bool odd, bool *r) {
    if (v.type != JV_INT && v.type != JV_BOOL)
        return jx_fail(cx, at, "odd/even need an integer, not %s", jv_type_name(v));
    int64_t i = v.type == JV_INT ? v.u.i : v.u.b;
    *r = (i % 2 != 0) == odd;
    return true;
}
static bool t_odd(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { (void)a; return t_odd_even(cx, at, v, true, r); }
static bool t_even(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { (void)a; return t_odd_even(cx, at, v, false, r); }

static bool t_divisibleby(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) {
    jv *d;
    if (!need_arg(cx, at, a, &d))
        return false;
    if (v.type != JV_INT || d->type != JV_INT)
        return jx_fail(cx, at, "divisibleby needs integers");
    if (d->u.i == 0)
        return jx_fail(cx, at, "integer division or modulo by zero");
    *r = d->u.i == -1 || v.u.i % d->u.i == 0;
    return true;
}

static bool t_sameas(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) {
    jv *o;
    if (!need_arg(cx, at, a, &o))
        return false;
    if (v.type != o->type)
        *r = false;
    else if (v.type == JV_NONE || v.type == JV_UNDEF)
        *r = v.type == JV_NONE;
    else if (v.type == JV_BOOL)
        *r = v.u.b == o->u.b;
    else if (v.type == JV_INT) /* CPython caches small ints */
        *r = v.u.i == o->u.i && v.u.i >= -5 && v.u.i <= 256;
    else if (v.type == JV_FLOAT)
        *r = false;
    else
        *r = v.u.obj == o->u.obj;
    return true;
}

static bool cmp_test(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r, int kind) {
    jv *o;
    if (!need_arg(cx, at, a, &o))
        return false;
    bool less;
    switch (kind) {
    case 0: *r = jv_equal(v, *o); return true;
    case 1: *r = !jv_equal(v, *o); return true;
    case 2: return jv_less(cx, at, v, *o, r);
    case 3: return jv_less(cx, at, *o, v, r);
    case 4: if (!jv_less(cx, at, *o, v, &less)) return false; *r = !less; return true;
    default: if (!jv_less(cx, at, v, *o, &less)) return false; *r = !less; return true;
    }
}
static bool t_eq(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { return cmp_test(cx, at, v, a, r, 0); }
static bool t_ne(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { return cmp_test(cx, at, v, a, r, 1); }
static bool t_lt(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { return cmp_test(cx, at, v, a, r, 2); }
static bool t_gt(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { return cmp_test(cx, at, v, a, r, 3); }
static bool t_le(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { return cmp_test(cx, at, v, a, r, 4); }
static bool t_ge(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { return cmp_test(cx, at, v, a, r, 5); }

static bool t_in(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) {
    jv *c;
    if (!need_arg(cx, at, a, &c))
        return false;
    switch (c->type) {
    case JV_STR:
        if (v.type != JV_STR)
            return jx_fail(cx, at, "'in <string>' requires string as left operand");
        *r = v.u.s->len == 0 || (v.u.s->len <= c->u.s->len && jx_find(c->u.s->p, c->u.s->len, v.u.s->p, v.u.s->len));
        return true;
    case JV_LIST:
        *r = false;
        for (size_t i = 0; i < c->u.l->len && !*r; i++)
            *r = jv_equal(v, c->u.l->items[i]);
        return true;
    case JV_DICT: *r = jdict_find(c->u.d, v) != NULL; return true;
    case JV_UNDEF: *r = false; return true;
    default: return jx_fail(cx, at, "argument of type '%s' is not iterable", jv_type_name(*c));
    }
}

static bool t_filter_or_test(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r, bool filter) {
    (void)cx;
    (void)at;
    (void)a;
    *r = v.type == JV_STR && (filter ? jb_filter_index(v.u.s->p, v.u.s->len) : jb_test_index(v.u.s->p, v.u.s->len)) >= 0;
    return true;
}
static bool t_filter(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { return t_filter_or_test(cx, at, v, a, r, true); }
static bool t_test(jctx *cx, const jnode *at, jv v, const jargs *a, bool *r) { return t_filter_or_test(cx, at, v, a, r, false); }

static const struct {
    const char *name;
    test_fn fn;
} tests[] = {
    { "defined", t_defined }, { "undefined", t_undefined }, { "none", t_none }, { "string", t_string },
    { "number", t_number }, { "integer", t_integer }, { "float", t_float }, { "boolean", t_boolean },
    { "true", t_true }, { "false", t_false }, { "mapping", t_mapping }, { "sequence", t_sequence },
    { "iterable", t_iterable }, { "callable", t_callable }, { "escaped", t_escaped }, { "lower", t_lower },
    { "upper", t_upper }, { "odd", t_odd }, { "even", t_even }, { "divisibleby", t_divisibleby },
    { "sameas", t_sameas }, { "eq", t_eq }, { "equalto", t_eq }, { "ne", t_ne }, { "lt", t_lt }, { "lessthan", t_lt },
    { "gt", t_gt }, { "greaterthan", t_gt }, { "le", t_le }, { "ge", t_ge }, { "in", t_in }, { "filter", t_filter },
    { "test", t_test },
};

int jb_test_index(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (name_is(name, len, tests[i].name))
            return (int)i;
    return -1;
}

bool jb_test(jctx *cx, const jnode *at, int index, jv input, const jargs *a, bool *result) {
    return tests[index].fn(cx, at, input, a, result);
}

/* ---- Filters ----------------------------------------------------------------------------------- */

typedef bool (*filter_fn)(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out);

static bool text_filter(jctx *cx, const jnode *at, jv v, case_map how, jv *out) {
    jv s;
    if (!text_of(cx, at, v, &s))
        return false;
    bool ok = map_case(cx, at, s.u.s, how, out);
    jv_decref(cx, s);
    return ok;
}
static bool f_upper(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { (void)a; return text_filter(cx, at, v, CASE_UPPER, out); }
static bool f_lower(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { (void)a; return text_filter(cx, at, v, CASE_LOWER, out); }
static bool f_title(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { (void)a; return text_filter(cx, at, v, CASE_TITLE_JINJA, out); }
static bool f_capitalize(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { (void)a; return text_filter(cx, at, v, CASE_CAPITALIZE, out); }

static bool f_string(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    return jv_to_str(cx, at, v, out); /* a Markup string stays Markup (soft_str) */
}

static bool f_safe(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    if (v.type == JV_STR && v.u.s->html_safe) {
        *out = jv_copy(v);
        return true;
    }
    jv s;
    if (!jv_to_str(cx, at, v, &s))
        return false;
    jsb b;
    jsb_init(&b);
    bool ok = jsb_put_str(cx, at, &b, s.u.s);
    jv_decref(cx, s);
    if (!ok || !jsb_finish(cx, at, &b, out)) {
        if (!ok)
            jsb_free(&b);
        return false;
    }
    out->u.s->html_safe = true;
    return true;
}

static bool f_trim(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv s;
    jv *chars = jargs_get(a, 0, "chars");
    if (chars && chars->type != JV_NONE && !need_str(cx, at, chars, "trim's chars"))
        return false;
    if (!text_of(cx, at, v, &s))
        return false;
    bool ok = strip(cx, at, s.u.s, chars && chars->type == JV_STR ? chars->u.s : NULL, true, true, out);
    jv_decref(cx, s);
    return ok;
}

static bool f_length(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    switch (v.type) {
    case JV_STR: *out = jv_int((int64_t)jx_utf8_count(v.u.s->p, v.u.s->len)); return true;
    case JV_LIST:
        if (v.u.l->kind == JL_GENERATOR)
            return jx_fail(cx, at, "object of type 'generator' has no len()");
        *out = jv_int((int64_t)v.u.l->len);
        return true;
    case JV_DICT: case JV_NS: *out = jv_int((int64_t)v.u.d->len); return true;
    case JV_UNDEF: *out = jv_int(0); return true;
    default: return jx_fail(cx, at, "object of type '%s' has no len()", jv_type_name(v));
    }
}

static bool f_default(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)cx;
    (void)at;
    jv *def = jargs_get(a, 0, "default_value");
    bool boolean = arg_bool(a, 1, "boolean", false);
    if (v.type == JV_UNDEF || (boolean && !jv_truthy(v))) {
        if (def)
            *out = jv_copy(*def);
        else
            return jv_str(cx, at, "", 0, false, out);
        return true;
    }
    *out = jv_copy(v);
    return true;
}

static bool f_items(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    bool ok;
    if (v.type == JV_UNDEF)
        ok = jv_list(cx, at, 0, false, out);
    else if (v.type != JV_DICT)
        return jx_fail(cx, at, "can only get item pairs from a mapping, not %s", jv_type_name(v));
    else
        ok = dict_items(cx, at, v.u.d, out);
    if (ok)
        out->u.l->kind = JL_GENERATOR;
    return ok;
}

static bool f_list(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    jv items;
    if (!jv_iterate(cx, at, v, &items))
        return false;
    if (!items.u.l->tuple && items.u.l->kind == JL_PLAIN && items.u.obj != v.u.obj) {
        *out = items;
        return true;
    }
    bool ok = jv_list(cx, at, items.u.l->len, false, out);
    for (size_t i = 0; ok && i < items.u.l->len; i++)
        ok = jlist_push(cx, at, out->u.l, jv_copy(items.u.l->items[i]));
    jv_decref(cx, items);
    return ok;
}

/* attribute="a.b.0" as jinja2's make_attrgetter reads it: each part through getitem semantics. */
static bool get_path(jctx *cx, const jnode *at, jv v, const jstr *path, jv *out) {
    jv cur = jv_copy(v);
    size_t start = 0;
    for (size_t i = 0; i <= path->len; i++) {
        if (i < path->len && path->p[i] != '.')
            continue;
        const char *part = path->p + start;
        size_t plen = i - start;
        jv next;
        bool ok;
        bool digits = plen > 0;
        for (size_t k = 0; k < plen; k++)
            digits &= part[k] >= '0' && part[k] <= '9';
        if (digits && cur.type == JV_LIST) {
            int64_t idx = strtoll(part, NULL, 10);
            next = idx < (int64_t)cur.u.l->len ? jv_copy(cur.u.l->items[idx]) : jv_undef(at);
            ok = true;
        } else if (cur.type == JV_DICT) {
            jv *f = jdict_find_str(cur.u.d, part, plen);
            next = f ? jv_copy(*f) : jv_undef(at);
            ok = true;
            if (!f)
                ok = jx_getattr(cx, at, cur, part, plen, &next);
        } else {
            ok = jx_getattr(cx, at, cur, part, plen, &next);
        }
        jv_decref(cx, cur);
        if (!ok)
            return false;
        cur = next;
        start = i + 1;
    }
    *out = cur;
    return true;
}

static bool f_join(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv *sep = jargs_get(a, 0, "d"), *attr = jargs_get(a, 1, "attribute");
    jv items;
    if (!jv_iterate(cx, at, v, &items))
        return false;
    jsb b;
    jsb_init(&b);
    bool ok = true;
    for (size_t i = 0; ok && i < items.u.l->len; i++) {
        if (i && sep)
            ok = jx_put_str(cx, at, &b, *sep);
        jv it = items.u.l->items[i];
        if (ok && attr && attr->type == JV_STR) {
            jv x;
            ok = get_path(cx, at, it, attr->u.s, &x) && jx_put_str(cx, at, &b, x);
            if (ok)
                jv_decref(cx, x);
        } else if (ok) {
            ok = jx_put_str(cx, at, &b, it);
        }
    }
    jv_decref(cx, items);
    if (!ok) {
        jsb_free(&b);
        return false;
    }
    return jsb_finish(cx, at, &b, out);
}

static bool f_first_last(jctx *cx, const jnode *at, jv v, bool last, jv *out) {
    jv items;
    if (!jv_iterate(cx, at, v, &items))
        return false;
    size_t n = items.u.l->len;
    *out = n ? jv_copy(items.u.l->items[last ? n - 1 : 0]) : jv_undef(at);
    jv_decref(cx, items);
    return true;
}
static bool f_first(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { (void)a; return f_first_last(cx, at, v, false, out); }
static bool f_last(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { (void)a; return f_first_last(cx, at, v, true, out); }

/* A sort key: the item, or its attribute, lowercased when sorting without case. */
static bool sort_key(jctx *cx, const jnode *at, jv it, const jv *attr, bool case_sensitive, jv *key) {
    jv k;
    if (attr && attr->type == JV_STR) {
        if (!get_path(cx, at, it, attr->u.s, &k))
            return false;
    } else {
        k = jv_copy(it);
    }
    if (!case_sensitive && k.type == JV_STR) {
        jv low;
        bool ok = map_case(cx, at, k.u.s, CASE_LOWER, &low);
        jv_decref(cx, k);
        if (!ok)
            return false;
        k = low;
    }
    *key = k;
    return true;
}

/* Stable merge sort of idx[0..n) by keys (Python's sorted is stable). */
static bool merge_sort(jctx *cx, const jnode *at, size_t *idx, size_t *tmp, size_t n, const jv *keys, bool reverse) {
    if (n < 2)
        return true;
    size_t h = n / 2;
    if (!merge_sort(cx, at, idx, tmp, h, keys, reverse) || !merge_sort(cx, at, idx + h, tmp, n - h, keys, reverse))
        return false;
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n) {
        bool take_right;
        /* reverse keeps stability as Python's sorted(reverse=True) does: equal items keep order */
        if (!jv_less(cx, at, reverse ? keys[idx[i]] : keys[idx[j]], reverse ? keys[idx[j]] : keys[idx[i]], &take_right) ||
            !jx_step(cx, at, 1))
            return false;
        tmp[o++] = take_right ? idx[j++] : idx[i++];
    }
    while (i < h)
        tmp[o++] = idx[i++];
    while (j < n)
        tmp[o++] = idx[j++];
    memcpy(idx, tmp, n * sizeof *idx);
    return true;
}

static bool sorted_list(jctx *cx, const jnode *at, jv items, const jv *attr, bool case_sensitive, bool reverse, jv *out) {
    size_t n = items.u.l->len;
    jv *keys = calloc(n + 1, sizeof *keys);
    size_t *idx = malloc((n + 1) * sizeof *idx), *tmp = malloc((n + 1) * sizeof *tmp);
    bool ok = keys && idx && tmp;
    if (!ok)
        jx_fail(cx, at, "out of memory");
    size_t made = 0;
    for (; ok && made < n; made++) {
        idx[made] = made;
        ok = sort_key(cx, at, items.u.l->items[made], attr, case_sensitive, &keys[made]);
        if (!ok)
            break;
    }
    ok = ok && merge_sort(cx, at, idx, tmp, n, keys, reverse) && jv_list(cx, at, n, false, out);
    for (size_t i = 0; ok && i < n; i++)
        ok = jlist_push(cx, at, out->u.l, jv_copy(items.u.l->items[idx[i]]));
    for (size_t i = 0; keys && i < made && i < n; i++)
        jv_decref(cx, keys[i]);
    free(keys);
    free(idx);
    free(tmp);
    return ok;
}

static bool f_sort(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv items;
    if (!jv_iterate(cx, at, v, &items))
        return false;
    bool ok = sorted_list(cx, at, items, jargs_get(a, 2, "attribute"), arg_bool(a, 1, "case_sensitive", false),
                          arg_bool(a, 0, "reverse", false), out);
    jv_decref(cx, items);
    return ok;
}

static bool f_dictsort(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    if (v.type != JV_DICT)
        return jx_fail(cx, at, "dictsort needs a mapping");
    jv pairs, by_value_attr;
    jv *by = jargs_get(a, 1, "by");
    bool by_value = by && by->type == JV_STR && by->u.s->len == 5 && !memcmp(by->u.s->p, "value", 5);
    if (!dict_items(cx, at, v.u.d, &pairs))
        return false;
    bool ok = jv_str(cx, at, by_value ? "1" : "0", 1, false, &by_value_attr);
    ok = ok && sorted_list(cx, at, pairs, &by_value_attr, arg_bool(a, 0, "case_sensitive", false),
                           arg_bool(a, 2, "reverse", false), out);
    jv_decref(cx, by_value_attr);
    jv_decref(cx, pairs);
    return ok;
}

static bool f_unique(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv items;
    if (!jv_iterate(cx, at, v, &items))
        return false;
    bool cs = arg_bool(a, 0, "case_sensitive", false), ok = jv_list(cx, at, 0, false, out);
    jv *attr = jargs_get(a, 1, "attribute");
    jv seen = jv_none(); /* stays NONE when out could not be made */
    ok = ok && jv_list(cx, at, 0, false, &seen);
    for (size_t i = 0; ok && i < items.u.l->len; i++) {
        jv key;
        if (!(ok = sort_key(cx, at, items.u.l->items[i], attr, cs, &key)))
            break;
        bool dup = false;
        for (size_t k = 0; k < seen.u.l->len && !dup; k++)
            dup = jv_equal(seen.u.l->items[k], key);
        ok = jx_step(cx, at, seen.u.l->len / 16);
        if (ok && !dup)
            ok = jlist_push(cx, at, seen.u.l, key) && jlist_push(cx, at, out->u.l, jv_copy(items.u.l->items[i]));
        else
            jv_decref(cx, key);
    }
    if (seen.type == JV_LIST)
        jv_decref(cx, seen);
    jv_decref(cx, items);
    return ok;
}

static bool f_min_max(jctx *cx, const jnode *at, jv v, const jargs *a, bool max, jv *out) {
    jv items;
    if (!jv_iterate(cx, at, v, &items))
        return false;
    bool cs = arg_bool(a, 0, "case_sensitive", false), ok = true;
    jv *attr = jargs_get(a, 1, "attribute");
    jv best_key = jv_undef(at);
    size_t best = 0;
    for (size_t i = 0; ok && i < items.u.l->len; i++) {
        jv key;
        if (!(ok = sort_key(cx, at, items.u.l->items[i], attr, cs, &key)))
            break;
        bool better = i == 0;
        if (!better)
            ok = max ? jv_less(cx, at, best_key, key, &better) : jv_less(cx, at, key, best_key, &better);
        if (ok && better) {
            jv_decref(cx, best_key);
            best_key = key;
            best = i;
        } else {
            jv_decref(cx, key);
        }
    }
    *out = ok && items.u.l->len ? jv_copy(items.u.l->items[best]) : jv_undef(at);
    jv_decref(cx, best_key);
    jv_decref(cx, items);
    return ok;
}
static bool f_min(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { return f_min_max(cx, at, v, a, false, out); }
static bool f_max(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { return f_min_max(cx, at, v, a, true, out); }

static bool f_reverse(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    jv items;
    if (!jv_iterate(cx, at, v, &items))
        return false;
    jsb b;
    bool ok = true;
    if (v.type == JV_STR) {
        jsb_init(&b);
        for (size_t i = items.u.l->len; ok && i-- > 0;)
            ok = jsb_put_str(cx, at, &b, items.u.l->items[i].u.s);
        jv_decref(cx, items);
        if (!ok) {
            jsb_free(&b);
            return false;
        }
        return jsb_finish(cx, at, &b, out);
    }
    ok = jv_list(cx, at, items.u.l->len, false, out);
    if (ok)
        out->u.l->kind = JL_GENERATOR; /* reversed() hands back an iterator */
    for (size_t i = items.u.l->len; ok && i-- > 0;)
        ok = jlist_push(cx, at, out->u.l, jv_copy(items.u.l->items[i]));
    jv_decref(cx, items);
    return ok;
}

static bool f_sum(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv items;
    jv *attr = jargs_get(a, 0, "attribute"), *start = jargs_get(a, 1, "start");
    if (!jv_iterate(cx, at, v, &items))
        return false;
    jv acc = start ? jv_copy(*start) : jv_int(0);
    bool ok = true;
    for (size_t i = 0; ok && i < items.u.l->len; i++) {
        jv x = jv_none(), y = jv_none();
        if (attr && attr->type == JV_STR)
            ok = get_path(cx, at, items.u.l->items[i], attr->u.s, &x);
        else
            x = jv_copy(items.u.l->items[i]);
        if (!ok)
            break;
        bool is_num = (x.type == JV_INT || x.type == JV_FLOAT || x.type == JV_BOOL) &&
                      (acc.type == JV_INT || acc.type == JV_FLOAT || acc.type == JV_BOOL);
        if (!is_num)
            ok = jx_fail(cx, at, "unsupported operand type(s) for +: '%s' and '%s'", jv_type_name(acc), jv_type_name(x));
        else if (x.type == JV_FLOAT || acc.type == JV_FLOAT)
            y = jv_float((acc.type == JV_FLOAT ? acc.u.f : (double)(acc.type == JV_INT ? acc.u.i : acc.u.b)) +
                         (x.type == JV_FLOAT ? x.u.f : (double)(x.type == JV_INT ? x.u.i : x.u.b)));
        else {
            int64_t r;
            if (__builtin_add_overflow(acc.type == JV_INT ? acc.u.i : acc.u.b, x.type == JV_INT ? x.u.i : x.u.b, &r))
                ok = jx_fail(cx, at, "integer overflow");
            y = jv_int(r);
        }
        jv_decref(cx, x);
        if (ok) {
            jv_decref(cx, acc);
            acc = y;
        }
    }
    jv_decref(cx, items);
    if (!ok) {
        jv_decref(cx, acc);
        return false;
    }
    *out = acc;
    return true;
}

static bool f_abs(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    if (v.type == JV_FLOAT) *out = jv_float(fabs(v.u.f));
    else if (v.type == JV_INT) {
        if (v.u.i == INT64_MIN) return jx_fail(cx, at, "integer overflow");
        *out = jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
    } else if (v.type == JV_BOOL) *out = jv_int(v.u.b);
    else return jx_fail(cx, at, "bad operand type for abs(): '%s'", jv_type_name(v));
    return true;
}

static bool f_round(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv *prec = jargs_get(a, 0, "precision"), *method = jargs_get(a, 1, "method");
    int64_t p = prec && prec->type == JV_INT ? prec->u.i : 0;
    double x;
    if (v.type == JV_FLOAT) x = v.u.f;
    else if (v.type == JV_INT) x = (double)v.u.i;
    else if (v.type == JV_BOOL) x = v.u.b;
    else return jx_fail(cx, at, "round needs a number, not %s", jv_type_name(v));
    const char *m = method && method->type == JV_STR ? method->u.s->p : "common";
    if (p < -20) p = -20;
    if (p > 20) p = 20;
    double scale = pow(10.0, (double)p), r;
    if (!strcmp(m, "ceil")) r = ceil(x * scale) / scale;
    else if (!strcmp(m, "floor")) r = floor(x * scale) / scale;
    else if (!strcmp(m, "common")) {
        if (p >= 0) { /* Python rounds the exact binary value half to even: printf does the same */
            char tmp[400];
            snprintf(tmp, sizeof tmp, "%.*f", (int)p, x);
            r = strtod(tmp, NULL);
        } else {
            r = nearbyint(x * scale) / scale;
        }
    } else return jx_fail(cx, at, "method must be 'common', 'ceil' or 'floor'");
    *out = jv_float(r);
    return true;
}

static bool f_int(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv *def = jargs_get(a, 0, "default");
    jv *basev = jargs_get(a, 1, "base");
    int base = basev && basev->type == JV_INT ? (int)basev->u.i : 10;
    switch (v.type) {
    case JV_INT: *out = v; return true;
    case JV_BOOL: *out = jv_int(v.u.b); return true;
    case JV_FLOAT:
        if (isfinite(v.u.f) && fabs(v.u.f) < 9.2e18) {
            *out = jv_int((int64_t)v.u.f);
            return true;
        }
        break;
    case JV_STR: {
        char tmp[64];
        size_t n = v.u.s->len < 63 ? v.u.s->len : 63;
        memcpy(tmp, v.u.s->p, n);
        tmp[n] = 0;
        char *end;
        long long i = strtoll(tmp, &end, base);
        while (*end == ' ' || *end == '\t' || *end == '\n')
            end++;
        if (end != tmp && *end == 0) {
            *out = jv_int(i);
            return true;
        }
        double d = strtod(tmp, &end);
        while (*end == ' ' || *end == '\t' || *end == '\n')
            end++;
        if (end != tmp && *end == 0 && isfinite(d) && fabs(d) < 9.2e18) {
            *out = jv_int((int64_t)d);
            return true;
        }
        break;
    }
    default: break;
    }
    (void)cx;
    (void)at;
    *out = def ? jv_copy(*def) : jv_int(0);
    return true;
}

static bool f_float(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)cx;
    (void)at;
    jv *def = jargs_get(a, 0, "default");
    switch (v.type) {
    case JV_FLOAT: *out = v; return true;
    case JV_INT: *out = jv_float((double)v.u.i); return true;
    case JV_BOOL: *out = jv_float(v.u.b); return true;
    case JV_STR: {
        char tmp[64];
        size_t n = v.u.s->len < 63 ? v.u.s->len : 63;
        memcpy(tmp, v.u.s->p, n);
        tmp[n] = 0;
        char *end;
        double d = strtod(tmp, &end);
        if (end != tmp && *end == 0) {
            *out = jv_float(d);
            return true;
        }
        break;
    }
    default: break;
    }
    *out = def ? jv_copy(*def) : jv_float(0.0);
    return true;
}

static bool f_escape(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    return jb_html_escape(cx, at, v, out);
}

bool jb_html_escape(jctx *cx, const jnode *at, jv v, jv *out) {
    if (v.type == JV_STR && v.u.s->html_safe) {
        *out = jv_copy(v);
        return true;
    }
    jv s;
    if (!text_of(cx, at, v, &s))
        return false;
    jsb b;
    jsb_init(&b);
    bool ok = true, data = s.u.s->n_spans > 0;
    for (size_t i = 0; ok && i < s.u.s->len; i++) {
        char c = s.u.s->p[i];
        const char *rep = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&#34;" : c == '\'' ? "&#39;" : NULL;
        ok = rep ? jsb_put(cx, at, &b, rep, strlen(rep), data) : jsb_put(cx, at, &b, &c, 1, data);
    }
    jv_decref(cx, s);
    if (!ok) {
        jsb_free(&b);
        return false;
    }
    if (!jsb_finish(cx, at, &b, out))
        return false;
    out->u.s->html_safe = true;
    return true;
}

static bool f_replace(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv *old = jargs_get(a, 0, "old"), *new_ = jargs_get(a, 1, "new"), *count = jargs_get(a, 2, "count");
    jv s, o, n;
    if (!old || !new_)
        return jx_fail(cx, at, "replace takes old and new");
    if (!text_of(cx, at, v, &s))
        return false;
    bool ok = false;
    if (text_of(cx, at, *old, &o)) {
        if (text_of(cx, at, *new_, &n)) {
            ok = replace(cx, at, s.u.s, o.u.s, n.u.s, count && count->type == JV_INT ? count->u.i : -1, out);
            jv_decref(cx, n);
        }
        jv_decref(cx, o);
    }
    jv_decref(cx, s);
    return ok;
}

static bool f_indent(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv *width = jargs_get(a, 0, "width");
    bool first = arg_bool(a, 1, "first", false), blank = arg_bool(a, 2, "blank", false);
    jv s, lines, ind;
    if (width && width->type == JV_STR) {
        ind = jv_copy(*width);
    } else {
        int64_t w = width && width->type == JV_INT ? width->u.i : 4;
        if (w < 0)
            w = 0;
        if (w > 1024)
            return jx_fail(cx, at, "indent width too large");
        char spaces[1025];
        memset(spaces, ' ', (size_t)w);
        if (!jv_str(cx, at, spaces, (size_t)w, false, &ind))
            return false;
    }
    if (!text_of(cx, at, v, &s)) {
        jv_decref(cx, ind);
        return false;
    }
    /* jinja2 appends a newline first so that splitlines keeps a trailing empty line */
    jsb tmp;
    jsb_init(&tmp);
    jv with_nl;
    bool ok = jsb_put_str(cx, at, &tmp, s.u.s) && jsb_put(cx, at, &tmp, "\n", 1, false) && jsb_finish(cx, at, &tmp, &with_nl);
    jv_decref(cx, s);
    if (!ok) {
        jv_decref(cx, ind);
        return false;
    }
    ok = splitlines(cx, at, with_nl.u.s, &lines);
    jv_decref(cx, with_nl);
    jsb b;
    jsb_init(&b);
    if (ok && first)
        ok = jsb_put_str(cx, at, &b, ind.u.s);
    for (size_t i = 0; ok && i < lines.u.l->len; i++) {
        const jstr *line = lines.u.l->items[i].u.s;
        if (i > 0) {
            ok = jsb_put(cx, at, &b, "\n", 1, false);
            if (ok && (blank || line->len > 0))
                ok = jsb_put_str(cx, at, &b, ind.u.s);
        }
        ok = ok && jsb_put_str(cx, at, &b, line);
    }
    if (lines.type == JV_LIST)
        jv_decref(cx, lines);
    jv_decref(cx, ind);
    if (!ok) {
        jsb_free(&b);
        return false;
    }
    return jsb_finish(cx, at, &b, out);
}

static bool f_center(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv *width = jargs_get(a, 0, "width");
    int64_t w = width && width->type == JV_INT ? width->u.i : 80;
    jv s;
    if (!text_of(cx, at, v, &s))
        return false;
    int64_t n = (int64_t)jx_utf8_count(s.u.s->p, s.u.s->len);
    if (w > (int64_t)cx->limits.max_output)
        w = (int64_t)cx->limits.max_output;
    int64_t pad = w > n ? w - n : 0, left = pad / 2 + (pad & w & 1);
    jsb b;
    jsb_init(&b);
    bool ok = true;
    for (int64_t i = 0; ok && i < left; i++)
        ok = jsb_put(cx, at, &b, " ", 1, false);
    ok = ok && jsb_put_str(cx, at, &b, s.u.s);
    for (int64_t i = 0; ok && i < pad - left; i++)
        ok = jsb_put(cx, at, &b, " ", 1, false);
    jv_decref(cx, s);
    if (!ok) {
        jsb_free(&b);
        return false;
    }
    return jsb_finish(cx, at, &b, out);
}

static bool f_pprint(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    buf b = { 0 };
    bool ok = jx_put_repr(cx, at, &b, v, 0) && jv_str(cx, at, b.data ? b.data : "", b.len, jv_has_data(v), out);
    buf_free(&b);
    return ok;
}

static bool f_attr(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv *name = jargs_get(a, 0, "name");
    if (!need_str(cx, at, name, "attr's name"))
        return false;
    return jx_getattr(cx, at, v, name->u.s->p, name->u.s->len, out);
}

static bool f_batch(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv *size = jargs_get(a, 0, "linecount"), *fill = jargs_get(a, 1, "fill_with");
    if (!size || size->type != JV_INT || size->u.i <= 0)
        return jx_fail(cx, at, "batch needs a positive count");
    jv items, cur = { 0 };
    if (!jv_iterate(cx, at, v, &items))
        return false;
    bool ok = jv_list(cx, at, 0, false, out);
    for (size_t i = 0; ok && i < items.u.l->len; i++) {
        if (i % (size_t)size->u.i == 0)
            ok = jv_list(cx, at, 0, false, &cur) && jlist_push(cx, at, out->u.l, cur);
        ok = ok && jlist_push(cx, at, cur.u.l, jv_copy(items.u.l->items[i]));
    }
    if (ok && fill && items.u.l->len % (size_t)size->u.i)
        for (size_t k = items.u.l->len % (size_t)size->u.i; ok && k < (size_t)size->u.i; k++)
            ok = jlist_push(cx, at, cur.u.l, jv_copy(*fill));
    jv_decref(cx, items);
    return ok;
}

static bool f_wordcount(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)a;
    jv s;
    if (!text_of(cx, at, v, &s))
        return false;
    int64_t n = 0;
    bool in_word = false;
    for (size_t i = 0; i < s.u.s->len;) {
        uint32_t cp = next_cp(s.u.s->p, s.u.s->len, &i);
        bool w = (cp >= '0' && cp <= '9') || cp == '_' || is_cased(cp) || cp > 0x2e80;
        n += w && !in_word;
        in_word = w;
    }
    jv_decref(cx, s);
    *out = jv_int(n);
    return true;
}

/* transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
static bool f_tojson(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv *ensure = jargs_get(a, 0, "ensure_ascii"), *indent = jargs_get(a, 1, "indent"),
       *seps = jargs_get(a, 2, "separators");
    bool sort_keys = arg_bool(a, 3, "sort_keys", false);
    char spaces[1025];
    const char *ind = NULL;
    size_t ind_len = 0;
    if (indent && indent->type == JV_INT) {
        int64_t w = indent->u.i < 0 ? 0 : indent->u.i > 1024 ? 1024 : indent->u.i;
        memset(spaces, ' ', (size_t)w);
        ind = spaces;
        ind_len = (size_t)w;
    } else if (indent && indent->type == JV_STR) {
        ind = indent->u.s->p;
        ind_len = indent->u.s->len;
    } else if (indent && indent->type != JV_NONE) {
        return jx_fail(cx, at, "tojson: indent must be an integer or a string");
    }
    const char *item_sep = ind ? "," : ", ", *key_sep = ": ";
    size_t item_len = ind ? 1 : 2, key_len = 2;
    if (seps && seps->type == JV_LIST) {
        if (seps->u.l->len != 2 || seps->u.l->items[0].type != JV_STR || seps->u.l->items[1].type != JV_STR)
            return jx_fail(cx, at, "tojson: separators must be two strings");
        item_sep = seps->u.l->items[0].u.s->p;
        item_len = seps->u.l->items[0].u.s->len;
        key_sep = seps->u.l->items[1].u.s->p;
        key_len = seps->u.l->items[1].u.s->len;
    }
    buf b = { 0 };
    bool ok = jx_put_json(cx, at, &b, v, ind, ind_len, item_sep, item_len, key_sep, key_len, sort_keys,
                          ensure && jv_truthy(*ensure), 0) &&
              jv_str(cx, at, b.data ? b.data : "", b.len, jv_has_data(v), out);
    buf_free(&b);
    return ok;
}

static bool f_unsupported(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    (void)v;
    (void)a;
    (void)out;
    return jx_fail(cx, at, "the filter '%.*s' is not supported by brasa", (int)at->name_len, at->name);
}

static bool f_map(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out);
static bool f_select(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out);
static bool f_reject(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out);
static bool f_selectattr(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out);
static bool f_rejectattr(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out);

static const struct {
    const char *name;
    filter_fn fn;
} filters[] = {
    { "abs", f_abs }, { "attr", f_attr }, { "batch", f_batch }, { "capitalize", f_capitalize },
    { "center", f_center }, { "count", f_length }, { "d", f_default }, { "default", f_default },
    { "dictsort", f_dictsort }, { "e", f_escape }, { "escape", f_escape }, { "filesizeformat", f_unsupported },
    { "first", f_first }, { "float", f_float }, { "forceescape", f_escape }, { "format", f_unsupported },
    { "groupby", f_unsupported }, { "indent", f_indent }, { "int", f_int }, { "join", f_join }, { "last", f_last },
    { "length", f_length }, { "list", f_list }, { "lower", f_lower }, { "items", f_items }, { "map", f_map },
    { "min", f_min }, { "max", f_max }, { "pprint", f_pprint }, { "random", f_unsupported }, { "reject", f_reject },
    { "rejectattr", f_rejectattr }, { "replace", f_replace }, { "reverse", f_reverse }, { "round", f_round },
    { "safe", f_safe }, { "select", f_select }, { "selectattr", f_selectattr }, { "slice", f_unsupported },
    { "sort", f_sort }, { "string", f_string }, { "striptags", f_unsupported }, { "sum", f_sum }, { "title", f_title },
    { "trim", f_trim }, { "truncate", f_unsupported }, { "unique", f_unique }, { "upper", f_upper },
    { "urlencode", f_unsupported }, { "urlize", f_unsupported }, { "wordcount", f_wordcount },
    { "wordwrap", f_unsupported }, { "xmlattr", f_unsupported }, { "tojson", f_tojson },
};

int jb_filter_index(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (name_is(name, len, filters[i].name))
            return (int)i;
    return -1;
}

bool jb_filter(jctx *cx, const jnode *at, int index, jv input, const jargs *a, jv *out) {
    if (!jx_step(cx, at, 1))
        return false;
    return filters[index].fn(cx, at, input, a, out);
}

/* The arguments after the first `skip` positional ones, for a filter or test called by name. */
static jargs rest_args(const jargs *a, size_t skip) {
    jargs r = *a;
    r.pos = a->n_pos > skip ? a->pos + skip : NULL;
    r.n_pos = a->n_pos > skip ? a->n_pos - skip : 0;
    return r;
}

static bool f_map(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) {
    jv items;
    jv *attr = jargs_get(a, SIZE_MAX, "attribute"), *def = jargs_get(a, SIZE_MAX, "default");
    int fi = -1;
    if (!attr) {
        jv *name = jargs_get(a, 0, NULL);
        if (!need_str(cx, at, name, "map's filter name"))
            return false;
        if ((fi = jb_filter_index(name->u.s->p, name->u.s->len)) < 0)
            return jx_fail(cx, at, "no filter named '%.*s'", (int)name->u.s->len, name->u.s->p);
    } else if (attr->type != JV_STR) {
        return jx_fail(cx, at, "map's attribute must be a string");
    }
    if (!jv_truthy(v)) /* jinja2's map and select run only over a true value */
        return jv_list(cx, at, 0, false, out) && (out->u.l->kind = JL_GENERATOR, true);
    if (!jv_iterate(cx, at, v, &items))
        return false;
    jargs rest = rest_args(a, 1);
    rest.n_kw = 0;
    bool ok = jv_list(cx, at, items.u.l->len, false, out);
    if (ok)
        out->u.l->kind = JL_GENERATOR;
    for (size_t i = 0; ok && i < items.u.l->len; i++) {
        jv r;
        if (attr) {
            ok = get_path(cx, at, items.u.l->items[i], attr->u.s, &r);
            if (ok && r.type == JV_UNDEF && def)
                r = jv_copy(*def);
        } else {
            ok = jb_filter(cx, at, fi, items.u.l->items[i], &rest, &r);
        }
        ok = ok && jlist_push(cx, at, out->u.l, r);
    }
    jv_decref(cx, items);
    return ok;
}

/* select/reject (attr NULL) and selectattr/rejectattr: keep items whose test (or truth) is want. */
static bool select_common(jctx *cx, const jnode *at, jv v, const jargs *a, bool by_attr, bool want, jv *out) {
    size_t k = 0;
    jv *attr = NULL;
    if (by_attr) {
        attr = jargs_get(a, k++, NULL);
        if (!need_str(cx, at, attr, "the attribute"))
            return false;
    }
    jv *test_name = jargs_get(a, k++, NULL);
    int ti = -1;
    if (test_name) {
        if (!need_str(cx, at, test_name, "the test name"))
            return false;
        if ((ti = jb_test_index(test_name->u.s->p, test_name->u.s->len)) < 0)
            return jx_fail(cx, at, "no test named '%.*s'", (int)test_name->u.s->len, test_name->u.s->p);
    }
    jargs rest = rest_args(a, k);
    jv items;
    if (!jv_truthy(v))
        return jv_list(cx, at, 0, false, out) && (out->u.l->kind = JL_GENERATOR, true);
    if (!jv_iterate(cx, at, v, &items))
        return false;
    bool ok = jv_list(cx, at, 0, false, out);
    if (ok)
        out->u.l->kind = JL_GENERATOR;
    for (size_t i = 0; ok && i < items.u.l->len; i++) {
        jv x = jv_none(); /* released below even when get_path fails before setting it */
        if (attr)
            ok = get_path(cx, at, items.u.l->items[i], attr->u.s, &x);
        else
            x = jv_copy(items.u.l->items[i]);
        bool r = false;
        if (ok)
            ok = ti >= 0 ? jb_test(cx, at, ti, x, &rest, &r) : (r = jv_truthy(x), true);
        jv_decref(cx, x);
        if (ok && r == want)
            ok = jlist_push(cx, at, out->u.l, jv_copy(items.u.l->items[i]));
    }
    jv_decref(cx, items);
    return ok;
}
static bool f_select(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { return select_common(cx, at, v, a, false, true, out); }
static bool f_reject(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { return select_common(cx, at, v, a, false, false, out); }
static bool f_selectattr(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { return select_common(cx, at, v, a, true, true, out); }
static bool f_rejectattr(jctx *cx, const jnode *at, jv v, const jargs *a, jv *out) { return select_common(cx, at, v, a, true, false, out); }

/* ---- Globals ----------------------------------------------------------------------------------- */

static const char *const globals[JB_GLOBAL_COUNT] = { "range", "namespace", "dict", "raise_exception", "strftime_now" };

int jb_global_index(const char *name, size_t len) {
    for (int i = 0; i < JB_GLOBAL_COUNT; i++)
        if (name_is(name, len, globals[i]))
            return i;
    return -1;
}

/* The sandbox refuses ranges longer than this (jinja2.sandbox.MAX_RANGE). */
#define MAX_RANGE 100000

static bool g_range(jctx *cx, const jnode *at, const jargs *a, jv *out) {
    int64_t start = 0, stop, step = 1;
    for (size_t i = 0; i < a->n_pos; i++)
        if (a->pos[i].type != JV_INT && a->pos[i].type != JV_BOOL)
            return jx_fail(cx, at, "range needs integers, not %s", jv_type_name(a->pos[i]));
#define I(k) (a->pos[k].type == JV_INT ? a->pos[k].u.i : (int64_t)a->pos[k].u.b)
    if (a->n_pos == 1) {
        stop = I(0);
    } else if (a->n_pos == 2 || a->n_pos == 3) {
        start = I(0);
        stop = I(1);
        if (a->n_pos == 3)
            step = I(2);
    } else {
        return jx_fail(cx, at, "range expected 1 to 3 arguments, got %zu", a->n_pos);
    }
#undef I
    if (step == 0)
        return jx_fail(cx, at, "range() arg 3 must not be zero");
    double count = step > 0 ? ceil(((double)stop - (double)start) / (double)step)
                            : ceil(((double)start - (double)stop) / (double)-step);
    if (count < 0)
        count = 0;
    if (count > MAX_RANGE)
        return jx_fail(cx, at, "range too big: more than %d items", MAX_RANGE);
    if (!jv_list(cx, at, (size_t)count, false, out))
        return false;
    for (int64_t i = 0, x = start; i < (int64_t)count; i++, x += step)
        if (!jlist_push(cx, at, out->u.l, jv_int(x)))
            return false;
    return jx_step(cx, at, (uint64_t)count);
}

static bool g_namespace_or_dict(jctx *cx, const jnode *at, const jargs *a, jv_type type, jv *out) {
    if (!jv_dict(cx, at, type, out))
        return false;
    if (a->n_pos > 1)
        return jx_fail(cx, at, "expected at most 1 positional argument");
    if (a->n_pos == 1) {
        jv init = a->pos[0];
        if (init.type != JV_DICT && init.type != JV_NS)
            return jx_fail(cx, at, "the positional argument must be a mapping");
        for (size_t i = 0; i < init.u.d->len; i++)
            if (!jdict_set(cx, at, out->u.d, jv_copy(init.u.d->keys[i]), jv_copy(init.u.d->vals[i])))
                return false;
    }
    for (size_t i = 0; i < a->n_kw; i++) {
        jv k;
        if (!jv_str(cx, at, a->kw_names[i], a->kw_lens[i], false, &k) || !jdict_set(cx, at, out->u.d, k, jv_copy(a->kw[i])))
            return false;
    }
    return true;
}

static bool g_strftime(jctx *cx, const jnode *at, const jargs *a, jv *out) {
    jv *fmt = jargs_get(a, 0, NULL);
    if (!need_str(cx, at, fmt, "strftime_now's format"))
        return false;
    if (fmt->u.s->len > 256)
        return jx_fail(cx, at, "strftime_now: format too long");
    time_t t = (time_t)cx->now;
    struct tm tm = { 0 };
#if defined(_WIN32)
    if (localtime_s(&tm, &t) != 0)
        return jx_fail(cx, at, "strftime_now: bad time");
#else
    if (!localtime_r(&t, &tm))
        return jx_fail(cx, at, "strftime_now: bad time");
#endif
    char text[1024];
    size_t n = fmt->u.s->len ? strftime(text, sizeof text, fmt->u.s->p, &tm) : 0;
    return jv_str(cx, at, text, n, fmt->u.s->n_spans > 0, out);
}

bool jb_call_global(jctx *cx, const jnode *at, int index, const jargs *a, jv *out) {
    switch ((jb_global)index) {
    case JB_RANGE: return g_range(cx, at, a, out);
    case JB_NAMESPACE: return g_namespace_or_dict(cx, at, a, JV_NS, out);
    case JB_DICT: return g_namespace_or_dict(cx, at, a, JV_DICT, out);
    case JB_RAISE: {
        jv *msg = jargs_get(a, 0, NULL);
        if (msg && msg->type == JV_STR)
            return jx_fail(cx, at, "%.*s", (int)(msg->u.s->len > 300 ? 300 : msg->u.s->len), msg->u.s->p);
        return jx_fail(cx, at, "raise_exception called");
    }
    case JB_STRFTIME: return g_strftime(cx, at, a, out);
    default: return jx_fail(cx, at, "unknown function");
    }
}
