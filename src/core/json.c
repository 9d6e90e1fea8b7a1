/* json.c: the JSON reader and writer of json.h. A recursive-descent parser (depth bounded by
 * JSON_MAX_DEPTH, so the C stack is too) that checks UTF-8, decodes escapes (a lone surrogate
 * becomes U+FFFD, as a decoder that must not fail would), and keeps integers apart from other
 * numbers. Members are gathered in a growable array per container, then kept at their exact size. */
#include "core/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"

struct json_doc {
    json_value root;
};

typedef struct parser {
    const char *p, *end, *start;
    brasa_error *err;
    brasa_status status;
} parser;

static brasa_status fail(parser *ps, const char *at, const char *what) {
    if (ps->status != BRASA_OK)
        return ps->status;
    size_t line = 1, column = 1;
    for (const char *q = ps->start; q < at && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            column = 1;
        } else if (((unsigned char)*q & 0xC0) != 0x80) {
            column++;
        }
    }
    ps->status = err_set(ps->err, BRASA_ERR_INVALID_ARGUMENT, "line %zu, column %zu: %s", line, column, what);
    return ps->status;
}

static void skip_space(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static void free_value(json_value *v) {
    if (v->type == JSON_STRING) {
        free(v->str);
    } else if (v->type == JSON_ARRAY || v->type == JSON_OBJECT) {
        for (size_t i = 0; i < v->len; i++) {
            free_value(&v->items[i]);
            if (v->keys)
                free_value(&v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    memset(v, 0, sizeof *v);
}

static int hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static bool put_code_point(buf *b, uint32_t cp) {
    char out[4];
    return buf_append(b, out, (size_t)utf8_encode(cp, out));
}

/* A string literal at ps->p (the opening quote). */
static brasa_status parse_string(parser *ps, json_value *out) {
    buf b = { 0 };
    ps->p++;
    for (;;) {
        if (ps->p >= ps->end) {
            buf_free(&b);
            return fail(ps, ps->p, "unterminated string");
        }
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            buf_free(&b);
            return fail(ps, ps->p, "control character in a string (escape it)");
        }
        if (c == '\\') {
            if (ps->end - ps->p < 2) {
                buf_free(&b);
                return fail(ps, ps->p, "unterminated string");
            }
            char e = ps->p[1];
            const char *simple = strchr("\"\\/bfnrt", e);
            bool ok;
            if (e && simple) {
                static const char decoded[] = "\"\\/\b\f\n\r\t";
                ok = buf_append(&b, &decoded[simple - "\"\\/bfnrt"], 1);
                ps->p += 2;
            } else if (e == 'u') {
                int hi = ps->end - ps->p >= 6 ? hex4(ps->p + 2) : -1;
                if (hi < 0) {
                    buf_free(&b);
                    return fail(ps, ps->p, "bad \\u escape (four hex digits)");
                }
                ps->p += 6;
                uint32_t cp = (uint32_t)hi;
                if (cp >= 0xD800 && cp < 0xDC00) {
                    int lo = ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u' ? hex4(ps->p + 2) : -1;
                    if (lo >= 0xDC00 && lo < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                        ps->p += 6;
                    } else {
                        cp = 0xFFFD;
                    }
                } else if (cp >= 0xDC00 && cp < 0xE000) {
                    cp = 0xFFFD;
                }
                ok = put_code_point(&b, cp);
            } else {
                buf_free(&b);
                return fail(ps, ps->p, "unknown escape in a string");
            }
            if (!ok) {
                buf_free(&b);
                return ps->status = err_set(ps->err, BRASA_ERR_NO_MEMORY, "out of memory reading JSON");
            }
            continue;
        }
        /* take the run of well-formed characters up to the next quote, backslash or control byte */
        size_t run = 0;
        while (ps->p + run < ps->end) {
            unsigned char d = (unsigned char)ps->p[run];
            if (d == '"' || d == '\\' || d < 0x20)
                break;
            uint32_t cp;
            int n = utf8_decode((const unsigned char *)ps->p + run, (size_t)(ps->end - ps->p) - run, &cp);
            if (n < 0) {
                buf_free(&b);
                return fail(ps, ps->p + run, "invalid UTF-8 in a string");
            }
            run += (size_t)n;
        }
        if (!buf_append(&b, ps->p, run)) {
            buf_free(&b);
            return ps->status = err_set(ps->err, BRASA_ERR_NO_MEMORY, "out of memory reading JSON");
        }
        ps->p += run;
    }
    if (!buf_append(&b, "", 1)) {
        buf_free(&b);
        return ps->status = err_set(ps->err, BRASA_ERR_NO_MEMORY, "out of memory reading JSON");
    }
    out->type = JSON_STRING;
    out->str = b.data;
    out->len = b.len - 1;
    return BRASA_OK;
}

static brasa_status parse_number(parser *ps, json_value *out) {
    const char *s = ps->p;
    const char *q = s;
    if (q < ps->end && *q == '-')
        q++;
    if (q >= ps->end || *q < '0' || *q > '9')
        return fail(ps, s, "expected a value");
    if (*q == '0')
        q++;
    else
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    bool integer = true;
    if (q < ps->end && *q == '.') {
        integer = false;
        q++;
        if (q >= ps->end || *q < '0' || *q > '9')
            return fail(ps, q, "expected a digit after '.'");
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        integer = false;
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= ps->end || *q < '0' || *q > '9')
            return fail(ps, q, "expected a digit in the exponent");
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    char tmp[64];
    size_t n = (size_t)(q - s);
    out->type = JSON_NUMBER;
    if (n < sizeof tmp) {
        memcpy(tmp, s, n);
        tmp[n] = 0;
        out->number = strtod(tmp, NULL);
        if (integer) {
            errno = 0;
            long long v = strtoll(tmp, NULL, 10);
            if (errno == 0) {
                out->is_integer = true;
                out->integer = v;
            }
        }
    } else {
        /* longer than any double needs: let strtod read it from a heap copy */
        char *heap = malloc(n + 1);
        if (!heap)
            return ps->status = err_set(ps->err, BRASA_ERR_NO_MEMORY, "out of memory reading JSON");
        memcpy(heap, s, n);
        heap[n] = 0;
        out->number = strtod(heap, NULL);
        free(heap);
    }
    ps->p = q;
    return BRASA_OK;
}

static brasa_status parse_value(parser *ps, json_value *out, int depth);

/* An array or object at ps->p; members are gathered in growable arrays, then trimmed. */
static brasa_status parse_container(parser *ps, json_value *out, int depth) {
    const bool object = *ps->p == '{';
    const char close = object ? '}' : ']';
    if (depth >= JSON_MAX_DEPTH)
        return fail(ps, ps->p, "nested too deeply");
    ps->p++;
    out->type = object ? JSON_OBJECT : JSON_ARRAY;
    size_t cap = 0;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return BRASA_OK;
    }
    for (;;) {
        if (out->len == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            json_value *items = realloc(out->items, ncap * sizeof *items);
            if (items)
                out->items = items;
            json_value *keys = object ? realloc(out->keys, ncap * sizeof *keys) : NULL;
            if (keys)
                out->keys = keys;
            if (!items || (object && !keys))
                return ps->status = err_set(ps->err, BRASA_ERR_NO_MEMORY, "out of memory reading JSON");
            cap = ncap;
        }
        json_value *item = &out->items[out->len];
        memset(item, 0, sizeof *item);
        if (object) {
            json_value *key = &out->keys[out->len];
            memset(key, 0, sizeof *key);
            skip_space(ps);
            if (ps->p >= ps->end || *ps->p != '"')
                return fail(ps, ps->p, "expected a member name in quotes");
            out->len++; /* counted now so that a failure below frees the key */
            if (parse_string(ps, key) != BRASA_OK)
                return ps->status;
            skip_space(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return fail(ps, ps->p, "expected ':'");
            ps->p++;
        } else {
            out->len++;
        }
        if (parse_value(ps, item, depth + 1) != BRASA_OK)
            return ps->status;
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return BRASA_OK;
        }
        return fail(ps, ps->p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static brasa_status parse_value(parser *ps, json_value *out, int depth) {
    skip_space(ps);
    if (ps->p >= ps->end)
        return fail(ps, ps->p, "expected a value");
    static const struct {
        const char *word;
        json_type type;
    } words[] = { { "null", JSON_NULL }, { "true", JSON_TRUE }, { "false", JSON_FALSE } };
    switch (*ps->p) {
    case '"':
        return parse_string(ps, out);
    case '{':
    case '[':
        return parse_container(ps, out, depth);
    case 'n':
    case 't':
    case 'f':
        for (size_t i = 0; i < 3; i++) {
            size_t n = strlen(words[i].word);
            if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, words[i].word, n) == 0) {
                out->type = words[i].type;
                ps->p += n;
                return BRASA_OK;
            }
        }
        return fail(ps, ps->p, "expected a value");
    default:
        return parse_number(ps, out);
    }
}

brasa_status json_parse(const char *text, size_t len, json_doc **out, brasa_error *err) {
    if (!out || (!text && len))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "json_parse: invalid arguments");
    *out = NULL;
    json_doc *doc = calloc(1, sizeof *doc);
    if (!doc)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory reading JSON");
    parser ps = { .p = text ? text : "", .end = (text ? text : "") + len, .start = text ? text : "", .err = err };
    if (parse_value(&ps, &doc->root, 0) == BRASA_OK) {
        skip_space(&ps);
        if (ps.p != ps.end)
            fail(&ps, ps.p, "text after the JSON value");
    }
    if (ps.status != BRASA_OK) {
        json_free(doc);
        return ps.status;
    }
    *out = doc;
    return BRASA_OK;
}

const json_value *json_root(const json_doc *doc) {
    return doc ? &doc->root : NULL;
}

json_value *json_root_mut(json_doc *doc) {
    return doc ? &doc->root : NULL;
}

brasa_status json_replace(json_value *slot, const char *text, size_t len, brasa_error *err) {
    json_doc *doc = NULL;
    brasa_status st = json_parse(text, len, &doc, err);
    if (st != BRASA_OK)
        return st;
    if (!doc)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory reading JSON");
    free_value(slot);
    *slot = doc->root; /* the tree moves over; only the document's own block is left to free */
    free(doc);
    return BRASA_OK;
}

void json_free(json_doc *doc) {
    if (!doc)
        return;
    free_value(&doc->root);
    free(doc);
}

const json_value *json_get(const json_value *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT || !key)
        return NULL;
    const size_t n = strlen(key);
    for (size_t i = obj->len; i-- > 0;)
        if (obj->keys[i].len == n && memcmp(obj->keys[i].str, key, n) == 0)
            return &obj->items[i];
    return NULL;
}

bool json_is_string(const json_value *v, const char *s) {
    return v && v->type == JSON_STRING && s && v->len == strlen(s) && memcmp(v->str, s, v->len) == 0;
}

bool json_write_string(buf *out, const char *s, size_t n) {
    if (!buf_append(out, "\"", 1))
        return false;
    size_t run = 0; /* s[run..i) is plain text not yet copied */
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char tmp[8];
        size_t skip = 1;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(tmp, sizeof tmp, "\\u%04x", c);
                esc = tmp;
            } else if (c >= 0x80) {
                uint32_t cp;
                const int k = utf8_decode((const unsigned char *)s + i, n - i, &cp);
                if (k < 0) { /* an ill-formed subpart: U+FFFD, so the output is always valid JSON */
                    esc = "\xEF\xBF\xBD";
                    skip = (size_t)-k;
                } else {
                    skip = (size_t)k;
                }
            }
        }
        if (esc && (!buf_append(out, s + run, i - run) || !buf_append(out, esc, strlen(esc))))
            return false;
        i += skip;
        if (esc)
            run = i;
    }
    return buf_append(out, s + run, n - run) && buf_append(out, "\"", 1);
}

/* The shortest %.{15,16,17}g spelling that reads back as the same double. */
static bool write_double(buf *out, double d) {
    char tmp[40];
    if (!isfinite(d)) /* JSON has no infinities; Python writes Infinity/NaN, which no parser reads back */
        return buf_append(out, "null", 4);
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    /* a number written with a fraction keeps one ("-0.0", "3.0"), as it would read back an integer */
    if (!strpbrk(tmp, ".eEn") && strlen(tmp) + 2 < sizeof tmp)
        strcat(tmp, ".0");
    return buf_append(out, tmp, strlen(tmp));
}

bool json_write(buf *out, const json_value *v) {
    char tmp[32];
    switch (v->type) {
    case JSON_NULL: return buf_append(out, "null", 4);
    case JSON_TRUE: return buf_append(out, "true", 4);
    case JSON_FALSE: return buf_append(out, "false", 5);
    case JSON_NUMBER:
        if (v->is_integer) {
            snprintf(tmp, sizeof tmp, "%lld", (long long)v->integer);
            return buf_append(out, tmp, strlen(tmp));
        }
        return write_double(out, v->number);
    case JSON_STRING: return json_write_string(out, v->str, v->len);
    case JSON_ARRAY:
    case JSON_OBJECT: {
        const bool object = v->type == JSON_OBJECT;
        if (!buf_append(out, object ? "{" : "[", 1))
            return false;
        for (size_t i = 0; i < v->len; i++) {
            if (i && !buf_append(out, ",", 1))
                return false;
            if (object && (!json_write_string(out, v->keys[i].str, v->keys[i].len) || !buf_append(out, ":", 1)))
                return false;
            if (!json_write(out, &v->items[i]))
                return false;
        }
        return buf_append(out, object ? "}" : "]", 1);
    }
    }
    return false;
}
