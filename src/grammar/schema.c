/* schema.c: JSON Schema -> automaton. Each schema object becomes a rule (compiled once, looked up by
 * its address, so a recursive $ref calls a rule that is still being built); inside a rule the
 * keywords become byte fragments: an object's properties in schema order with the optional ones
 * skippable, arrays unrolled up to their bounds, strings validated as UTF-8 byte by byte. Anything
 * the compiler cannot enforce exactly is refused with the keyword and its JSON path, never
 * silently loosened: output that passes the grammar must validate against the schema. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "grammar/grammar_impl.h"

#define MAX_UNROLL 10000      /* bounds on items and string lengths that are unrolled into nodes */
#define MAX_COMPILE_DEPTH 256 /* schema nesting followed while compiling */
#define INDENT_MAX 20         /* a newline may be followed by up to this many spaces or tabs */
/* Digits a number may have: in its integer part, its fraction and its exponent. A small model held
 * to a number can repeat a digit until its tokens run out (SmolLM2 did, "-1234567891011...", on a
 * schema of this project's server test), leaving JSON that does not parse; a double holds 15 to 17
 * significant digits and an exponent of three, so longer numbers say nothing more (llama.cpp's
 * schema grammars bound them the same way). */
#define NUMBER_INT_DIGITS 16
#define NUMBER_FRAC_DIGITS 16
#define NUMBER_EXP_DIGITS 3

typedef struct rule_ref {
    const json_value *schema;
    uint32_t rule;
} rule_ref;

typedef struct compiler {
    gbuild *b;
    brasa_error *err;
    brasa_status status; /* the first failure; later ones are not reported */
    const json_value *root;
    rule_ref *rules;
    size_t n_rules, cap_rules;
    /* shared rules, made on first use */
    uint32_t rule_indent, rule_char, rule_string, rule_number, rule_integer, rule_any;
    char path[512]; /* JSON pointer of the schema being compiled, for messages */
    size_t path_len;
    unsigned depth;
} compiler;

static void fail(compiler *c, brasa_status st, const char *fmt, ...) ERR_PRINTF(3, 4);

static void fail(compiler *c, brasa_status st, const char *fmt, ...) {
    if (c->status != BRASA_OK)
        return;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->status = c->path_len ? err_set(c->err, st, "schema at %s: %s", c->path, msg)
                            : err_set(c->err, st, "schema: %s", msg);
}

static bool failed(const compiler *c) {
    return c->status != BRASA_OK || c->b->failed;
}

/* Appends "/seg" (escaped as RFC 6901 says) to the path; returns the length to go back to. A path
 * too long to keep is cut, which only shortens messages. */
static size_t path_push(compiler *c, const char *seg, size_t n) {
    const size_t old = c->path_len, room = sizeof c->path - 1;
    size_t at = old < room ? old : room;
    if (at < room)
        c->path[at++] = '/';
    for (size_t i = 0; i < n; i++) {
        const bool escaped = seg[i] == '~' || seg[i] == '/';
        if (at + (escaped ? 2 : 1) > room)
            break;
        if (escaped) {
            c->path[at] = '~';
            c->path[at + 1] = seg[i] == '~' ? '0' : '1';
            at += 2;
        } else {
            c->path[at++] = seg[i];
        }
    }
    c->path[at] = '\0';
    c->path_len = at;
    return old;
}

static size_t path_push_index(compiler *c, const char *name, size_t i) {
    const size_t old = path_push(c, name, strlen(name));
    char index[32];
    int n = snprintf(index, sizeof index, "%zu", i);
    path_push(c, index, (size_t)n);
    return old;
}

static void path_pop(compiler *c, size_t old) {
    if (old >= sizeof c->path)
        return; /* never: lengths come from path_push, which stays inside the buffer */
    c->path_len = old;
    c->path[old] = '\0';
}

/* ---- fragments: each adds nodes from `from` and returns the node after them ---- */

static uint32_t node(compiler *c) {
    return gbuild_node(c->b);
}

static uint32_t lit(compiler *c, uint32_t from, const char *s) {
    return gbuild_literal(c->b, from, s, strlen(s));
}

static uint32_t call(compiler *c, uint32_t from, uint32_t rule) {
    return gbuild_call(c->b, from, rule);
}

/* Whitespace between tokens, bounded so that a model cannot loop on it: nothing, one space, or a
 * newline and up to INDENT_MAX spaces or tabs (a rule shared by every place). */
static uint32_t ws(compiler *c, uint32_t from) {
    gbuild *b = c->b;
    if (c->rule_indent == GRAMMAR_NONE) {
        uint32_t prev = c->rule_indent = node(c);
        gbuild_return(b, prev);
        for (int i = 0; i < INDENT_MAX; i++) {
            uint32_t next = node(c);
            gbuild_range(b, prev, ' ', ' ', next);
            gbuild_range(b, prev, '\t', '\t', next);
            gbuild_return(b, next);
            prev = next;
        }
    }
    uint32_t to = node(c), nl = node(c);
    gbuild_eps(b, from, to);
    gbuild_range(b, from, ' ', ' ', to);
    gbuild_range(b, from, '\n', '\n', nl);
    gbuild_eps(b, call(c, nl, c->rule_indent), to);
    return to;
}

static void hex_digit(gbuild *b, uint32_t from, uint32_t to) {
    gbuild_range(b, from, '0', '9', to);
    gbuild_range(b, from, 'A', 'F', to);
    gbuild_range(b, from, 'a', 'f', to);
}

/* The multi-byte UTF-8 characters (Unicode Table 3-7: no overlong forms, no surrogates, nothing
 * above U+10FFFF) from `from` to `to`. */
static void utf8_multibyte(compiler *c, uint32_t from, uint32_t to) {
    gbuild *b = c->b;
    uint32_t c1 = node(c), c2 = node(c), c3 = node(c); /* continuation bytes still due */
    gbuild_range(b, c1, 0x80, 0xBF, to);
    gbuild_range(b, c2, 0x80, 0xBF, c1);
    gbuild_range(b, c3, 0x80, 0xBF, c2);
    gbuild_range(b, from, 0xC2, 0xDF, c1);
    uint32_t e0 = node(c), ed = node(c), f0 = node(c), f4 = node(c);
    gbuild_range(b, from, 0xE0, 0xE0, e0);
    gbuild_range(b, e0, 0xA0, 0xBF, c1);
    gbuild_range(b, from, 0xE1, 0xEC, c2);
    gbuild_range(b, from, 0xED, 0xED, ed);
    gbuild_range(b, ed, 0x80, 0x9F, c1);
    gbuild_range(b, from, 0xEE, 0xEF, c2);
    gbuild_range(b, from, 0xF0, 0xF0, f0);
    gbuild_range(b, f0, 0x90, 0xBF, c2);
    gbuild_range(b, from, 0xF1, 0xF3, c3);
    gbuild_range(b, from, 0xF4, 0xF4, f4);
    gbuild_range(b, f4, 0x80, 0x8F, c2);
}

/* An escape after its backslash: \" \\ \/ \b \f \n \r \t, or \uXXXX where a high surrogate must be
 * followed by an escaped low one and a lone low surrogate is refused (the pair is one character,
 * as Python counts it). */
static void escape_tail(compiler *c, uint32_t esc, uint32_t to) {
    gbuild *b = c->b;
    for (const char *p = "\"\\/bfnrt"; *p; p++)
        gbuild_range(b, esc, (uint8_t)*p, (uint8_t)*p, to);
    uint32_t u = node(c), x1 = node(c), x2 = node(c), x3 = node(c), ud = node(c);
    gbuild_range(b, esc, 'u', 'u', u);
    hex_digit(b, x1, to);
    hex_digit(b, x2, x1);
    hex_digit(b, x3, x2);
    gbuild_range(b, u, '0', '9', x3);
    gbuild_range(b, u, 'A', 'C', x3);
    gbuild_range(b, u, 'E', 'F', x3);
    gbuild_range(b, u, 'a', 'c', x3);
    gbuild_range(b, u, 'e', 'f', x3);
    gbuild_range(b, u, 'D', 'D', ud);
    gbuild_range(b, u, 'd', 'd', ud);
    gbuild_range(b, ud, '0', '7', x2);
    uint32_t h2 = node(c), h1 = node(c), l0 = node(c), l1 = node(c), l2 = node(c), l3 = node(c);
    gbuild_range(b, ud, '8', '9', h2);
    gbuild_range(b, ud, 'A', 'B', h2);
    gbuild_range(b, ud, 'a', 'b', h2);
    hex_digit(b, h2, h1);
    hex_digit(b, h1, l0);
    gbuild_range(b, l0, '\\', '\\', l1);
    gbuild_range(b, l1, 'u', 'u', l2);
    gbuild_range(b, l2, 'D', 'D', l3);
    gbuild_range(b, l2, 'd', 'd', l3);
    gbuild_range(b, l3, 'C', 'F', x2);
    gbuild_range(b, l3, 'c', 'f', x2);
}

/* One character of a JSON string's contents: anything but '"', '\\' and control characters, or an
 * escape. */
static void string_char(compiler *c, uint32_t from, uint32_t to) {
    gbuild *b = c->b;
    gbuild_range(b, from, 0x20, 0x21, to);
    gbuild_range(b, from, 0x23, 0x5B, to);
    gbuild_range(b, from, 0x5D, 0x7F, to);
    utf8_multibyte(c, from, to);
    uint32_t esc = node(c);
    gbuild_range(b, from, '\\', '\\', esc);
    escape_tail(c, esc, to);
}

static uint32_t char_rule(compiler *c) {
    if (c->rule_char == GRAMMAR_NONE) {
        uint32_t start = c->rule_char = node(c), end = node(c);
        string_char(c, start, end);
        gbuild_return(c->b, end);
    }
    return c->rule_char;
}

static uint32_t string_rule(compiler *c) {
    if (c->rule_string == GRAMMAR_NONE) {
        uint32_t start = c->rule_string = node(c), body = lit(c, start, "\"");
        string_char(c, body, body);
        gbuild_return(c->b, lit(c, body, "\""));
    }
    return c->rule_string;
}

/* One to `most` digits from `from` to `to`. */
static void digit_run(compiler *c, uint32_t from, uint32_t to, int most) {
    for (int i = 0; i < most; i++) {
        const uint32_t next = node(c);
        gbuild_range(c->b, from, '0', '9', next);
        gbuild_eps(c->b, next, to);
        from = next;
    }
}

/* RFC 8259 numbers, of at most NUMBER_*_DIGITS digits a part; integers have no fraction or
 * exponent. */
static uint32_t number_frag(compiler *c, uint32_t from, bool integer) {
    gbuild *b = c->b;
    uint32_t sign = node(c), zero = node(c), lead = node(c), whole = node(c);
    gbuild_eps(b, from, sign);
    gbuild_range(b, from, '-', '-', sign);
    gbuild_range(b, sign, '0', '0', zero);
    gbuild_range(b, sign, '1', '9', lead);
    digit_run(c, lead, whole, NUMBER_INT_DIGITS - 1);
    gbuild_eps(b, zero, whole);
    gbuild_eps(b, lead, whole);
    if (integer)
        return whole;
    uint32_t to = node(c), dot = node(c), frac = node(c), e = node(c), esign = node(c);
    gbuild_eps(b, whole, to);
    gbuild_range(b, whole, '.', '.', dot);
    digit_run(c, dot, frac, NUMBER_FRAC_DIGITS);
    gbuild_eps(b, frac, to);
    gbuild_range(b, whole, 'e', 'e', e);
    gbuild_range(b, whole, 'E', 'E', e);
    gbuild_range(b, frac, 'e', 'e', e);
    gbuild_range(b, frac, 'E', 'E', e);
    gbuild_eps(b, e, esign);
    gbuild_range(b, e, '+', '+', esign);
    gbuild_range(b, e, '-', '-', esign);
    digit_run(c, esign, to, NUMBER_EXP_DIGITS);
    return to;
}

static uint32_t number_rule(compiler *c, bool integer) {
    uint32_t *rule = integer ? &c->rule_integer : &c->rule_number;
    if (*rule == GRAMMAR_NONE) {
        uint32_t start = *rule = node(c);
        gbuild_return(c->b, number_frag(c, start, integer));
    }
    return *rule;
}

/* '{' members '}' where every member is key_rule ws ':' ws value_rule (the any-object, and objects
 * without properties). */
static uint32_t members_frag(compiler *c, uint32_t from, uint32_t key_rule, uint32_t value_rule) {
    gbuild *b = c->b;
    uint32_t open = ws(c, lit(c, from, "{")), to = node(c), member = node(c), after = node(c);
    gbuild_eps(b, lit(c, open, "}"), to);
    gbuild_eps(b, open, member);
    uint32_t v = call(c, ws(c, lit(c, ws(c, call(c, member, key_rule)), ":")), value_rule);
    gbuild_eps(b, v, after);
    uint32_t gap = ws(c, after);
    gbuild_eps(b, ws(c, lit(c, gap, ",")), member);
    gbuild_eps(b, lit(c, gap, "}"), to);
    return to;
}

static uint32_t any_rule(compiler *c) {
    if (c->rule_any != GRAMMAR_NONE)
        return c->rule_any;
    gbuild *b = c->b;
    uint32_t start = c->rule_any = node(c), end = node(c);
    gbuild_return(b, end);
    gbuild_eps(b, call(c, start, string_rule(c)), end);
    gbuild_eps(b, call(c, start, number_rule(c, false)), end);
    gbuild_eps(b, lit(c, start, "true"), end);
    gbuild_eps(b, lit(c, start, "false"), end);
    gbuild_eps(b, lit(c, start, "null"), end);
    gbuild_eps(b, members_frag(c, start, string_rule(c), start), end);
    uint32_t open = ws(c, lit(c, start, "[")), item = node(c), after = node(c);
    gbuild_eps(b, lit(c, open, "]"), end);
    gbuild_eps(b, open, item);
    gbuild_eps(b, call(c, item, start), after);
    uint32_t gap = ws(c, after);
    gbuild_eps(b, ws(c, lit(c, gap, ",")), item);
    gbuild_eps(b, lit(c, gap, "]"), end);
    return start;
}

/* ---- keywords ---- */

typedef enum kw_kind { KW_ANNOTATION, KW_DEFS, KW_VALIDATION } kw_kind;

static const struct {
    const char *name;
    kw_kind kind;
} keywords[] = {
    { "description", KW_ANNOTATION }, { "title", KW_ANNOTATION },      { "default", KW_ANNOTATION },
    { "examples", KW_ANNOTATION },    { "$schema", KW_ANNOTATION },    { "$id", KW_ANNOTATION },
    { "$comment", KW_ANNOTATION },    { "format", KW_ANNOTATION },     { "deprecated", KW_ANNOTATION },
    { "readOnly", KW_ANNOTATION },    { "writeOnly", KW_ANNOTATION },  { "$defs", KW_DEFS },
    { "definitions", KW_DEFS },       { "type", KW_VALIDATION },       { "properties", KW_VALIDATION },
    { "required", KW_VALIDATION },    { "additionalProperties", KW_VALIDATION },
    { "enum", KW_VALIDATION },        { "const", KW_VALIDATION },      { "items", KW_VALIDATION },
    { "prefixItems", KW_VALIDATION }, { "minItems", KW_VALIDATION },   { "maxItems", KW_VALIDATION },
    { "anyOf", KW_VALIDATION },       { "oneOf", KW_VALIDATION },      { "allOf", KW_VALIDATION },
    { "$ref", KW_VALIDATION },        { "minLength", KW_VALIDATION },  { "maxLength", KW_VALIDATION },
};

static int keyword_index(const json_value *key) {
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (json_is_string(key, keywords[i].name))
            return (int)i;
    return -1;
}

/* Every keyword known, and besides `alone` (a combinator or $ref) only annotations and
 * definitions. */
static bool check_keywords(compiler *c, const json_value *s, const char *alone) {
    for (size_t i = 0; i < s->len; i++) {
        int k = keyword_index(&s->keys[i]);
        if (k < 0) {
            fail(c, BRASA_ERR_UNSUPPORTED, "'%.100s' is not supported", s->keys[i].str);
            return false;
        }
        if (alone && keywords[k].kind == KW_VALIDATION && !json_is_string(&s->keys[i], alone)) {
            fail(c, BRASA_ERR_UNSUPPORTED, "'%s' together with '%s' is not supported", alone, keywords[k].name);
            return false;
        }
    }
    return true;
}

/* A non-negative integer keyword: *out, or `dflt` when absent. */
static bool count_keyword(compiler *c, const json_value *s, const char *name, size_t dflt, size_t *out) {
    const json_value *v = json_get(s, name);
    *out = dflt;
    if (!v)
        return true;
    if (v->type != JSON_NUMBER || !v->is_integer || v->integer < 0) {
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "'%s' must be a non-negative integer", name);
        return false;
    }
    *out = (uint64_t)v->integer > SIZE_MAX ? SIZE_MAX : (size_t)v->integer;
    return true;
}

static uint32_t compile_rule(compiler *c, const json_value *s);

/* The rule for a subschema at path segment(s) `seg`. */
static uint32_t sub_rule(compiler *c, const json_value *s, const char *seg, size_t seg_len) {
    size_t old = path_push(c, seg, seg_len);
    uint32_t r = compile_rule(c, s);
    path_pop(c, old);
    return r;
}

static uint32_t sub_rule_index(compiler *c, const json_value *s, const char *name, size_t i) {
    size_t old = path_push_index(c, name, i);
    uint32_t r = compile_rule(c, s);
    path_pop(c, old);
    return r;
}

/* ---- strings ---- */

static uint32_t string_frag(compiler *c, const json_value *s, uint32_t from) {
    size_t min, max;
    if (!count_keyword(c, s, "minLength", 0, &min) || !count_keyword(c, s, "maxLength", SIZE_MAX, &max))
        return from;
    if (min == 0 && max == SIZE_MAX)
        return call(c, from, string_rule(c));
    if (min > max) {
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "'minLength' is above 'maxLength'");
        return from;
    }
    if (min > MAX_UNROLL || (max != SIZE_MAX && max > MAX_UNROLL)) {
        fail(c, BRASA_ERR_UNSUPPORTED, "string lengths above %d are not supported", MAX_UNROLL);
        return from;
    }
    gbuild *b = c->b;
    uint32_t q = lit(c, from, "\""), close = node(c);
    for (size_t i = 0; i < min && !failed(c); i++)
        q = call(c, q, char_rule(c));
    if (max == SIZE_MAX) {
        gbuild_eps(b, call(c, q, char_rule(c)), q);
    } else {
        for (size_t i = min; i < max && !failed(c); i++) {
            gbuild_eps(b, q, close);
            q = call(c, q, char_rule(c));
        }
    }
    gbuild_eps(b, q, close);
    return lit(c, close, "\"");
}

/* ---- objects ---- */

/* A key that is none of names[0..n) (raw UTF-8, the schema's property names), for extra members
 * next to declared ones: the declared names' bytes are followed as a trie, and the key may leave it
 * by a printable ASCII byte that no name has there, or close where no name ends; after leaving,
 * anything goes. While on the trie no escape is allowed, so no escaped spelling of a declared name
 * gets through (an extra key that shares a prefix with a name cannot escape before it leaves). */
static void key_trie(compiler *c, uint32_t t, const json_value **names, size_t n, size_t depth, bool at_char,
                     uint32_t free_body, uint32_t end) {
    gbuild *b = c->b;
    bool ends_here = false, next[256] = { false };
    for (size_t i = 0; i < n; i++) {
        if (names[i]->len == depth)
            ends_here = true;
        else
            next[(uint8_t)names[i]->str[depth]] = true;
    }
    if (!ends_here)
        gbuild_range(b, t, '"', '"', end);
    if (at_char)
        for (int x = 0x20; x < 0x7F; x++)
            if (!next[x] && x != '"' && x != '\\')
                gbuild_range(b, t, (uint8_t)x, (uint8_t)x, free_body);
    const json_value **group = malloc(n * sizeof(const json_value *)); /* an array of pointers */
    if (!group) {
        c->b->failed = true;
        return;
    }
    for (int x = 0x20; x < 256 && !failed(c); x++) {
        if (!next[x] || x == '"' || x == '\\')
            continue;
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (names[i]->len > depth && (uint8_t)names[i]->str[depth] == x)
                group[m++] = names[i];
        uint32_t child = node(c);
        gbuild_range(b, t, (uint8_t)x, (uint8_t)x, child);
        /* a name's next byte that is a continuation byte is in the middle of a character */
        bool child_at_char = true;
        for (size_t i = 0; i < m; i++)
            if (group[i]->len > depth + 1 && ((uint8_t)group[i]->str[depth + 1] & 0xC0) == 0x80)
                child_at_char = false;
        key_trie(c, child, group, m, depth + 1, child_at_char, free_body, end);
    }
    free(group);
}

static uint32_t key_excluding(compiler *c, uint32_t from, const json_value *props) {
    if (!props || props->len == 0)
        return call(c, from, string_rule(c));
    const json_value **names = malloc(props->len * sizeof(const json_value *)); /* an array of pointers */
    if (!names) {
        c->b->failed = true;
        return from;
    }
    for (size_t i = 0; i < props->len; i++)
        names[i] = &props->keys[i];
    uint32_t t = lit(c, from, "\""), free_body = node(c), end = node(c);
    string_char(c, free_body, free_body);
    gbuild_range(c->b, free_body, '"', '"', end);
    key_trie(c, t, names, props->len, 0, true, free_body, end);
    free(names);
    return end;
}

static bool is_required(const json_value *required, const json_value *name) {
    for (size_t i = 0; required && i < required->len; i++)
        if (required->items[i].len == name->len && memcmp(required->items[i].str, name->str, name->len) == 0)
            return true;
    return false;
}

static bool has_property(const json_value *props, const json_value *name, size_t before) {
    for (size_t i = 0; props && i < before; i++)
        if (props->keys[i].len == name->len && memcmp(props->keys[i].str, name->str, name->len) == 0)
            return true;
    return false;
}

/* The properties in schema order. A[i]: before property i with nothing written yet; B[i]: with
 * something written (so the next member needs a comma). Both reach property i's member, which
 * leads to B[i+1]; an optional property can also be skipped (A[i] -> A[i+1], B[i] -> B[i+1]). */
static uint32_t object_frag(compiler *c, const json_value *s, uint32_t from) {
    gbuild *b = c->b;
    const json_value *props = json_get(s, "properties"), *required = json_get(s, "required");
    const json_value *addl = json_get(s, "additionalProperties");
    if (props && props->type != JSON_OBJECT) {
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "'properties' must be an object");
        return from;
    }
    if (required) {
        bool ok = required->type == JSON_ARRAY;
        for (size_t i = 0; ok && i < required->len; i++)
            ok = required->items[i].type == JSON_STRING;
        if (!ok) {
            fail(c, BRASA_ERR_INVALID_ARGUMENT, "'required' must be an array of strings");
            return from;
        }
        for (size_t i = 0; i < required->len; i++)
            if (!has_property(props, &required->items[i], props ? props->len : 0)) {
                fail(c, BRASA_ERR_UNSUPPORTED, "'required' names '%.100s', which is not in 'properties'",
                     required->items[i].str);
                return from;
            }
    }
    /* extra members: by default only without properties (the issue's rule: additionalProperties
     * false is the default when properties are given) */
    bool extras = props == NULL;
    uint32_t extra_rule = GRAMMAR_NONE;
    if (addl) {
        if (addl->type == JSON_FALSE)
            extras = false;
        else if (addl->type == JSON_TRUE || addl->type == JSON_OBJECT)
            extras = true;
        else {
            fail(c, BRASA_ERR_INVALID_ARGUMENT, "'additionalProperties' must be a boolean or a schema");
            return from;
        }
        if (addl->type == JSON_OBJECT)
            extra_rule = sub_rule(c, addl, "additionalProperties", 20);
    }
    if (extras && extra_rule == GRAMMAR_NONE)
        extra_rule = any_rule(c);

    uint32_t a = ws(c, lit(c, from, "{")), bb = node(c); /* bb: unreachable until a member is written */
    buf key = { 0 };
    for (size_t i = 0; props && i < props->len && !failed(c); i++) {
        const json_value *name = &props->keys[i];
        bool later = false; /* written twice: the last one counts, as json_get and Python take it */
        for (size_t j = i + 1; j < props->len && !later; j++)
            later = props->keys[j].len == name->len && memcmp(props->keys[j].str, name->str, name->len) == 0;
        if (later)
            continue;
        const json_value *schema = &props->items[i];
        uint32_t member = node(c), a2 = node(c), b2 = node(c);
        gbuild_eps(b, a, member);
        gbuild_eps(b, ws(c, lit(c, ws(c, bb), ",")), member);
        key.len = 0;
        if (!json_write_string(&key, name->str, name->len)) {
            b->failed = true;
            break;
        }
        uint32_t k = gbuild_literal(b, member, key.data, key.len);
        size_t old = path_push(c, "properties", 10);
        uint32_t value = sub_rule(c, schema, name->str, name->len);
        path_pop(c, old);
        gbuild_eps(b, call(c, ws(c, lit(c, ws(c, k), ":")), value), b2);
        if (!is_required(required, name)) {
            gbuild_eps(b, a, a2);
            gbuild_eps(b, bb, b2);
        }
        a = a2;
        bb = b2;
    }
    buf_free(&key);
    if (extras) {
        uint32_t member = node(c);
        gbuild_eps(b, a, member);
        gbuild_eps(b, ws(c, lit(c, ws(c, bb), ",")), member);
        uint32_t k = key_excluding(c, member, props);
        gbuild_eps(b, call(c, ws(c, lit(c, ws(c, k), ":")), extra_rule), bb);
    }
    uint32_t to = node(c);
    gbuild_eps(b, lit(c, a, "}"), to);
    gbuild_eps(b, lit(c, ws(c, bb), "}"), to);
    return to;
}

/* ---- arrays ---- */

static uint32_t array_frag(compiler *c, const json_value *s, uint32_t from) {
    gbuild *b = c->b;
    const json_value *items = json_get(s, "items"), *prefix = json_get(s, "prefixItems");
    size_t min, max;
    if (!count_keyword(c, s, "minItems", 0, &min) || !count_keyword(c, s, "maxItems", SIZE_MAX, &max))
        return from;
    if (prefix && prefix->type != JSON_ARRAY) {
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "'prefixItems' must be an array");
        return from;
    }
    if (items && items->type == JSON_ARRAY) {
        fail(c, BRASA_ERR_UNSUPPORTED, "'items' as an array (draft 4 tuples) is not supported: use 'prefixItems'");
        return from;
    }
    const size_t n_prefix = prefix ? prefix->len : 0;
    if (items && items->type == JSON_FALSE && max > n_prefix)
        max = n_prefix;
    if (min > max) {
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "'minItems' is above what 'maxItems' or 'items' allow");
        return from;
    }
    /* unrolled positions: all of them when bounded, else enough for min and the prefix, then a loop */
    size_t unrolled = max;
    if (max == SIZE_MAX) {
        unrolled = min > n_prefix ? min : n_prefix;
        if (unrolled == 0)
            unrolled = 1;
    }
    if (unrolled > MAX_UNROLL) {
        fail(c, BRASA_ERR_UNSUPPORTED, "arrays bounded above %d items are not supported", MAX_UNROLL);
        return from;
    }
    uint32_t items_rule = GRAMMAR_NONE;
    if (n_prefix < max || max == SIZE_MAX)
        items_rule = items && items->type != JSON_TRUE ? sub_rule(c, items, "items", 5) : any_rule(c);

    uint32_t to = node(c), p = ws(c, lit(c, from, "["));
    if (min == 0)
        gbuild_eps(b, lit(c, p, "]"), to);
    if (max == 0)
        return to;
    p = call(c, p, n_prefix ? sub_rule_index(c, &prefix->items[0], "prefixItems", 0) : items_rule);
    for (size_t k = 1; k <= unrolled && !failed(c); k++) {
        uint32_t gap = ws(c, p);
        if (k >= min)
            gbuild_eps(b, lit(c, gap, "]"), to);
        if (k == max)
            break;
        uint32_t next = ws(c, lit(c, gap, ","));
        if (k < unrolled) {
            p = call(c, next, k < n_prefix ? sub_rule_index(c, &prefix->items[k], "prefixItems", k) : items_rule);
        } else {
            gbuild_eps(b, call(c, next, items_rule), p); /* unbounded: more of `items` */
        }
    }
    return to;
}

/* ---- enum, const, types ---- */

static bool is_integral(const json_value *v) {
    return v->type == JSON_NUMBER &&
           (v->is_integer || (v->number > -9e15 && v->number < 9e15 && v->number == (double)(long long)v->number));
}

static bool type_matches(const char *type, const json_value *v) {
    if (!strcmp(type, "string"))
        return v->type == JSON_STRING;
    if (!strcmp(type, "number"))
        return v->type == JSON_NUMBER;
    if (!strcmp(type, "integer"))
        return is_integral(v);
    if (!strcmp(type, "boolean"))
        return v->type == JSON_TRUE || v->type == JSON_FALSE;
    if (!strcmp(type, "null"))
        return v->type == JSON_NULL;
    if (!strcmp(type, "object"))
        return v->type == JSON_OBJECT;
    if (!strcmp(type, "array"))
        return v->type == JSON_ARRAY;
    return false;
}

static bool known_type(const json_value *t) {
    static const char *const names[] = { "string", "number", "integer", "boolean", "null", "object", "array" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (json_is_string(t, names[i]))
            return true;
    return false;
}

/* Whether v satisfies the schema's "type" (absent: anything). */
static bool value_has_type(const json_value *type, const json_value *v) {
    if (!type)
        return true;
    if (type->type == JSON_STRING)
        return type_matches(type->str, v);
    for (size_t i = 0; i < type->len; i++)
        if (type_matches(type->items[i].str, v))
            return true;
    return false;
}

/* The values as their compact JSON texts, each one alternative. */
static uint32_t values_frag(compiler *c, const json_value *values, size_t n, const json_value *type, uint32_t from,
                            const char *keyword) {
    uint32_t to = node(c);
    buf text = { 0 };
    size_t kept = 0;
    for (size_t i = 0; i < n && !failed(c); i++) {
        if (!value_has_type(type, &values[i]))
            continue;
        text.len = 0;
        if (!json_write(&text, &values[i])) {
            c->b->failed = true;
            break;
        }
        gbuild_eps(c->b, gbuild_literal(c->b, from, text.data, text.len), to);
        kept++;
    }
    buf_free(&text);
    if (kept == 0)
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "no value of '%s' has the schema's type", keyword);
    return to;
}

static uint32_t type_frag(compiler *c, const json_value *s, const char *type, uint32_t from) {
    if (!strcmp(type, "string"))
        return string_frag(c, s, from);
    if (!strcmp(type, "number") || !strcmp(type, "integer"))
        return call(c, from, number_rule(c, type[0] == 'i'));
    if (!strcmp(type, "boolean")) {
        uint32_t to = node(c);
        gbuild_eps(c->b, lit(c, from, "true"), to);
        gbuild_eps(c->b, lit(c, from, "false"), to);
        return to;
    }
    if (!strcmp(type, "null"))
        return lit(c, from, "null");
    if (!strcmp(type, "object"))
        return object_frag(c, s, from);
    return array_frag(c, s, from);
}

/* What a schema without "type" describes: the kind its keywords imply, else any value. A schema
 * with "properties" but no type also allows, say, a number; the grammar writes an object, which
 * is a valid subset. */
static const char *implied_type(const json_value *s) {
    static const char *const object_kw[] = { "properties", "required", "additionalProperties" };
    static const char *const array_kw[] = { "items", "prefixItems", "minItems", "maxItems" };
    static const char *const string_kw[] = { "minLength", "maxLength" };
    for (size_t i = 0; i < 3; i++)
        if (json_get(s, object_kw[i]))
            return "object";
    for (size_t i = 0; i < 4; i++)
        if (json_get(s, array_kw[i]))
            return "array";
    for (size_t i = 0; i < 2; i++)
        if (json_get(s, string_kw[i]))
            return "string";
    return NULL;
}

/* "#", "#/$defs/NAME" or "#/definitions/NAME" (NAME with RFC 6901 escapes), from the root. */
static const json_value *resolve_ref(compiler *c, const json_value *ref, char *target, size_t cap) {
    if (ref->type != JSON_STRING) {
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "'$ref' must be a string");
        return NULL;
    }
    if (json_is_string(ref, "#")) {
        target[0] = '\0';
        return c->root;
    }
    const char *defs = NULL;
    size_t skip = 0;
    if (ref->len > 8 && !strncmp(ref->str, "#/$defs/", 8)) {
        defs = "$defs";
        skip = 8;
    } else if (ref->len > 14 && !strncmp(ref->str, "#/definitions/", 14)) {
        defs = "definitions";
        skip = 14;
    }
    char name[256];
    size_t n = 0;
    bool ok = defs != NULL;
    for (size_t i = skip; ok && i < ref->len; i++) {
        char ch = ref->str[i];
        if (ch == '~' && i + 1 < ref->len && (ref->str[i + 1] == '0' || ref->str[i + 1] == '1'))
            ch = ref->str[++i] == '0' ? '~' : '/';
        else if (ch == '/' || ch == '~' || ch == '\0')
            ok = false;
        if (n + 1 >= sizeof name)
            ok = false;
        else
            name[n++] = ch;
    }
    if (!ok) {
        fail(c, BRASA_ERR_UNSUPPORTED, "'$ref' to '%.100s' is not supported (only '#', '#/$defs/NAME', '#/definitions/NAME')",
             ref->str);
        return NULL;
    }
    name[n] = '\0';
    const json_value *target_schema = json_get(json_get(c->root, defs), name);
    if (!target_schema) {
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "'$ref' to '%.100s': no such definition", ref->str);
        return NULL;
    }
    snprintf(target, cap, "/%s/%s", defs, ref->str + skip);
    return target_schema;
}

/* The body of the rule for schema s, from `from`; returns its end. */
static uint32_t schema_frag(compiler *c, const json_value *s, uint32_t from) {
    gbuild *b = c->b;
    if (s->type == JSON_TRUE)
        return call(c, from, any_rule(c));
    if (s->type == JSON_FALSE) {
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "the schema false admits no value");
        return from;
    }
    if (s->type != JSON_OBJECT) {
        fail(c, BRASA_ERR_INVALID_ARGUMENT, "a schema must be an object or a boolean");
        return from;
    }
    if (!check_keywords(c, s, NULL))
        return from;
    const json_value *ref = json_get(s, "$ref");
    if (ref) {
        if (!check_keywords(c, s, "$ref"))
            return from;
        char target[300];
        const json_value *t = resolve_ref(c, ref, target, sizeof target);
        if (!t)
            return from;
        char saved[sizeof c->path];
        size_t saved_len = c->path_len;
        memcpy(saved, c->path, saved_len + 1);
        snprintf(c->path, sizeof c->path, "%s", target);
        c->path_len = strlen(c->path);
        uint32_t r = compile_rule(c, t);
        memcpy(c->path, saved, saved_len + 1);
        c->path_len = saved_len;
        return call(c, from, r);
    }
    const char *combinators[] = { "anyOf", "oneOf", "allOf" };
    for (size_t k = 0; k < 3; k++) {
        const json_value *alts = json_get(s, combinators[k]);
        if (!alts)
            continue;
        if (!check_keywords(c, s, combinators[k]))
            return from;
        if (alts->type != JSON_ARRAY || alts->len == 0) {
            fail(c, BRASA_ERR_INVALID_ARGUMENT, "'%s' must be a non-empty array", combinators[k]);
            return from;
        }
        if (k == 2 && alts->len != 1) {
            fail(c, BRASA_ERR_UNSUPPORTED, "'allOf' with more than one schema is not supported");
            return from;
        }
        /* oneOf is taken as anyOf: the grammar cannot tell that two branches overlap, and the
         * schemas people send make them disjoint */
        uint32_t to = node(c);
        for (size_t i = 0; i < alts->len && !failed(c); i++)
            gbuild_eps(b, call(c, from, sub_rule_index(c, &alts->items[i], combinators[k], i)), to);
        return to;
    }
    const json_value *type = json_get(s, "type");
    if (type) {
        bool ok = type->type == JSON_STRING ? known_type(type) : type->type == JSON_ARRAY && type->len > 0;
        for (size_t i = 0; ok && type->type == JSON_ARRAY && i < type->len; i++)
            ok = known_type(&type->items[i]);
        if (!ok) {
            fail(c, BRASA_ERR_INVALID_ARGUMENT, "'type' must be one of string, number, integer, boolean, null, "
                                                "object, array, or a non-empty list of them");
            return from;
        }
    }
    const json_value *cnst = json_get(s, "const"), *enm = json_get(s, "enum");
    if (cnst)
        return values_frag(c, cnst, 1, type, from, "const");
    if (enm) {
        if (enm->type != JSON_ARRAY) {
            fail(c, BRASA_ERR_INVALID_ARGUMENT, "'enum' must be an array");
            return from;
        }
        return values_frag(c, enm->items, enm->len, type, from, "enum");
    }
    if (!type) {
        const char *implied = implied_type(s);
        return implied ? type_frag(c, s, implied, from) : call(c, from, any_rule(c));
    }
    if (type->type == JSON_STRING)
        return type_frag(c, s, type->str, from);
    uint32_t to = node(c);
    for (size_t i = 0; i < type->len && !failed(c); i++) {
        /* "integer" next to "number" adds nothing */
        if (json_is_string(&type->items[i], "integer")) {
            bool has_number = false;
            for (size_t j = 0; j < type->len; j++)
                has_number |= json_is_string(&type->items[j], "number");
            if (has_number)
                continue;
        }
        uint32_t alt = node(c);
        gbuild_eps(b, from, alt);
        gbuild_eps(b, type_frag(c, s, type->items[i].str, alt), to);
    }
    return to;
}

static uint32_t compile_rule(compiler *c, const json_value *s) {
    for (size_t i = 0; i < c->n_rules; i++)
        if (c->rules[i].schema == s)
            return c->rules[i].rule;
    if (failed(c))
        return 0;
    if (c->depth >= MAX_COMPILE_DEPTH) {
        fail(c, BRASA_ERR_UNSUPPORTED, "schema nested more than %d deep", MAX_COMPILE_DEPTH);
        return 0;
    }
    if (c->n_rules == c->cap_rules) {
        size_t cap = c->cap_rules ? c->cap_rules * 2 : 32;
        rule_ref *p = realloc(c->rules, cap * sizeof *p);
        if (!p) {
            c->b->failed = true;
            return 0;
        }
        c->rules = p;
        c->cap_rules = cap;
    }
    uint32_t start = node(c);
    c->rules[c->n_rules++] = (rule_ref){ s, start };
    c->depth++;
    uint32_t end = schema_frag(c, s, start);
    c->depth--;
    gbuild_return(c->b, end);
    return start;
}

brasa_status grammar_build_parts(gbuild *b, const grammar_part *parts, size_t n_parts, uint32_t *start,
                                 brasa_error *err) {
    compiler c;
    memset(&c, 0, sizeof c);
    c.b = b;
    c.err = err;
    c.rule_indent = c.rule_char = c.rule_string = c.rule_number = c.rule_integer = c.rule_any = GRAMMAR_NONE;
    uint32_t cur = *start = gbuild_node(b);
    for (size_t i = 0; i < n_parts && !failed(&c); i++) {
        if (parts[i].kind == GRAMMAR_LITERAL) {
            if (!parts[i].literal && parts[i].literal_len)
                fail(&c, BRASA_ERR_INVALID_ARGUMENT, "grammar part %zu: literal without bytes", i);
            else
                cur = gbuild_literal(b, cur, parts[i].literal, parts[i].literal_len);
        } else if (parts[i].kind == GRAMMAR_SCHEMA && parts[i].schema) {
            c.root = parts[i].schema;
            cur = call(&c, cur, compile_rule(&c, parts[i].schema));
        } else {
            fail(&c, BRASA_ERR_INVALID_ARGUMENT, "grammar part %zu: neither a literal nor a schema", i);
        }
    }
    gbuild_return(b, cur);
    free(c.rules);
    if (c.status != BRASA_OK)
        return c.status;
    if (b->failed)
        return b->n_nodes >= GRAMMAR_MAX_NODES
                   ? err_set(err, BRASA_ERR_UNSUPPORTED, "schema too large: over %u automaton nodes", GRAMMAR_MAX_NODES)
                   : err_set(err, BRASA_ERR_NO_MEMORY, "out of memory compiling the schema");
    return BRASA_OK;
}
