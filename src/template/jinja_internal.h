/* jinja_internal.h: what the files of the template module share and nothing outside it uses: the
 * tokens the lexer hands the parser, the syntax tree the parser builds and the evaluator walks, and
 * the run-time values (Python's types as jinja2 sees them) with their byte provenance. */
#ifndef BRASA_TEMPLATE_JINJA_INTERNAL_H
#define BRASA_TEMPLATE_JINJA_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/error.h"
#include "template/jinja.h"

/* Deepest nesting of expressions and statements the parser accepts, so that neither it nor the
 * evaluator can run the C stack out on "((((...". Real templates nest a few dozen levels. */
#define JINJA_MAX_PARSE_DEPTH 200

/* ---- Template memory: every token string and node lives in one arena freed with the template -- */

typedef struct jarena_block jarena_block;
typedef struct jarena {
    jarena_block *head;
} jarena;
void *jarena_alloc(jarena *a, size_t bytes); /* zeroed; NULL when out of memory */
void jarena_free(jarena *a);

/* ---- Tokens ------------------------------------------------------------------------------------ */

typedef enum jtok_kind {
    JT_EOF,
    JT_DATA,        /* template text, already trimmed by the whitespace rules */
    JT_VAR_BEGIN,   /* {{ */
    JT_VAR_END,     /* }} */
    JT_BLOCK_BEGIN, /* {% */
    JT_BLOCK_END,   /* %} */
    JT_NAME,
    JT_STRING, /* text holds the decoded value */
    JT_INT,
    JT_FLOAT,
    JT_OP,
} jtok_kind;

typedef enum jop {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_TILDE,
    OP_LBRACKET, OP_RBRACKET, OP_LPAREN, OP_RPAREN, OP_LBRACE, OP_RBRACE,
    OP_EQ, OP_NE, OP_GT, OP_GE, OP_LT, OP_LE, OP_ASSIGN, OP_DOT, OP_COLON, OP_PIPE, OP_COMMA,
    OP_SEMICOLON,
    OP_IN, OP_NOT_IN /* comparison operators of the tree only, never tokens */
} jop;

typedef struct jtok {
    jtok_kind kind;
    int line;
    const char *text; /* DATA, NAME, STRING (decoded): arena memory */
    size_t len;
    int64_t ival;
    double fval;
    jop op;
} jtok;

/* Splits src into tokens (arena memory, ending with JT_EOF), applying jinja2's newline
 * normalization, trim_blocks, lstrip_blocks, '-' and '+' and raw blocks. */
brasa_status jinja_lex(jarena *arena, const char *src, size_t len, jtok **tokens, size_t *n_tokens, brasa_error *err);

/* ---- Syntax tree -------------------------------------------------------------------------------- */

typedef enum jnode_kind {
    /* expressions */
    N_STR, N_INT, N_FLOAT, N_BOOL, N_NONE, N_NAME, N_LIST, N_TUPLE, N_DICT,
    N_BINOP,   /* op, a, b (arithmetic and ~) */
    N_COMPARE, /* a, then items[i] compared with ops[i]: a < b <= c */
    N_AND, N_OR, N_NOT, N_NEG, N_POS,
    N_COND,    /* b if a else c (c may be NULL) */
    N_GETATTR, /* a.name */
    N_GETITEM, /* a[b] */
    N_SLICE,   /* [a:b:c] as b of a GETITEM; any part may be NULL */
    N_CALL,    /* a(args, kwargs) */
    N_FILTER,  /* a | name(args): a NULL means the body of a filter block */
    N_TEST,    /* a is name(args) */
    N_NSATTR,  /* name.attr as an assignment target (name in name, attr in attr) */
    /* statements */
    S_BODY,   /* items */
    S_DATA,   /* template text in name */
    S_OUTPUT, /* {{ a }} */
    S_IF,     /* if a: b else c (c an S_BODY, an S_IF for elif, or NULL) */
    S_FOR,    /* for a in b if c: d else e */
    S_SET,    /* a = b */
    S_SETBLOCK, /* a = body d, through the filter chain c when not NULL */
    S_MACRO,  /* name(params = args, defaults = kw_values): d */
    S_CALLBLOCK, /* call(params = args, defaults = kw_values) a: d */
    S_FILTERBLOCK, /* d through the filter chain c */
    S_BREAK, S_CONTINUE,
} jnode_kind;

typedef struct jnode jnode;
struct jnode {
    jnode_kind kind;
    int line;
    jop op;
    const char *name; /* STR value, NAME, attribute, filter, test, macro name, DATA text */
    size_t name_len;
    const char *attr; /* NSATTR */
    size_t attr_len;
    int64_t ival;
    double fval;
    int builtin; /* FILTER and TEST: index of the built-in, -1 when unknown (an error if reached) */
    jnode *a, *b, *c, *d, *e;
    jnode **items; /* list, tuple, dict (key, value, key, value...), body, compare operands, call args */
    size_t n_items;
    jop *ops; /* COMPARE */
    const char **kw_names; /* call keyword arguments / macro parameter defaults (by position) */
    size_t *kw_lens;
    jnode **kw_values;
    size_t n_kw;
};

struct jinja_template {
    jarena arena;
    jnode *root; /* S_BODY */
};

brasa_status jinja_parse_tokens(jarena *arena, const jtok *tokens, size_t n_tokens, jnode **root, brasa_error *err);

/* Built-in filters and tests by name: an index, or -1. */
int jb_filter_index(const char *name, size_t len);
int jb_test_index(const char *name, size_t len);

/* ---- Values ------------------------------------------------------------------------------------ */

typedef enum jv_type {
    JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT,
    JV_NS,     /* namespace(): a dict whose attributes can be set */
    JV_MACRO,
    JV_FUNC,   /* a global function: ival is a jb_global */
    JV_METHOD, /* a method bound to its object */
    JV_LOOP,
} jv_type;

typedef struct jobj jobj;
typedef struct jstr jstr;
typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jframe jframe;
typedef struct jmacro jmacro;
typedef struct jmethod jmethod;
typedef struct jloop jloop;

/* An undefined value remembers the expression that made it, for the error when it is misused. */
typedef struct jv {
    jv_type type;
    bool unsafe; /* UNDEF: a mutating method the sandbox refuses */
    union {
        bool b;
        int64_t i;
        double f;
        jstr *s;
        jlist *l;
        jdict *d;
        jmacro *m;
        jmethod *method;
        jloop *loop;
        const jnode *undef;
        jobj *obj;
    } u;
} jv;

/* Every heap value is on the render's list, so whatever a cycle (a namespace holding itself) or an
 * error path leaves behind is freed when the render ends; reference counts free the rest early. */
struct jobj {
    jobj *prev, *next;
    size_t refs;
    size_t bytes;
    jv_type type; /* JV_STR ... JV_LOOP, or JV_UNDEF for a frame */
};

/* A string: UTF-8 bytes plus the byte ranges that came from data (untrusted variables). */
struct jstr {
    jobj h;
    size_t len;
    size_t n_spans;
    size_t *spans; /* pairs [start, end) of data bytes, ordered, merged; NULL when none */
    char *p;       /* len bytes and a NUL */
    bool html_safe; /* markupsafe's Markup (from safe and escape): what + joins to it gets escaped */
};

/* What a list stands for: most are lists or tuples, but Python hands some filters' and methods'
 * results over as iterators or views, which behave differently (always true, no len, no index,
 * not JSON, a generator iterates once) and templates depend on it. */
typedef enum jlist_kind { JL_PLAIN, JL_GENERATOR, JL_DICT_ITEMS, JL_DICT_KEYS, JL_DICT_VALUES } jlist_kind;

struct jlist {
    jobj h;
    bool tuple;
    jlist_kind kind;
    bool consumed; /* a generator already iterated */
    size_t len, cap;
    jv *items;
};

struct jdict {
    jobj h;
    size_t len, cap;
    jv *keys, *vals; /* insertion order, as Python keeps it */
};

struct jframe {
    jobj h;
    jframe *parent;
    size_t len, cap;
    const char **names;
    size_t *name_lens;
    jv *vals;
};

struct jmacro {
    jobj h;
    const jnode *def; /* S_MACRO or S_CALLBLOCK (a caller) */
    jframe *closure;
    jv caller; /* for a macro invoked by a call block: the caller macro */
};

struct jmethod {
    jobj h;
    jv self;
    const char *name;
    size_t name_len;
};

struct jloop {
    jobj h;
    jv items; /* JV_LIST */
    size_t index0;
};

/* A string under construction, with the data ranges it collects. */
typedef struct jsb {
    buf text;
    size_t *spans;
    size_t n_spans, cap_spans;
} jsb;

/* The state of one render. */
typedef struct jctx {
    jinja_limits limits;
    uint64_t steps;
    int depth;       /* nesting of evaluation (expressions, statements) */
    int macro_depth; /* nesting of macro calls */
    size_t live_bytes;
    jobj objects; /* head of the list of live heap values */
    jobj **dying; /* values whose count reached zero, freed without recursion (deep nesting) */
    size_t n_dying, cap_dying;
    bool releasing;
    jframe *globals;
    int64_t now;
    jsb *out;  /* where output goes now: the render's, or a capture */
    brasa_error *err;
    bool failed;
} jctx;

/* Fails the render (the first failure wins) with "line N: message". Returns false. */
bool jx_fail(jctx *cx, const jnode *at, const char *fmt, ...) ERR_PRINTF(3, 4);
/* Counts n steps, failing when over the limit. */
bool jx_step(jctx *cx, const jnode *at, uint64_t n);

/* Heap values */
void *jx_alloc(jctx *cx, const jnode *at, size_t bytes, jv_type type); /* a zeroed jobj, counted */
bool jx_grow(jctx *cx, const jnode *at, jobj *o, void **array, size_t *cap, size_t need, size_t elem);
void jx_free_all(jctx *cx);
void jv_incref(jv v);
void jv_decref(jctx *cx, jv v);
void jx_release(jctx *cx, jobj *o); /* drops a reference to any heap object, frames included */
static inline jv jv_copy(jv v) {
    jv_incref(v);
    return v;
}

static inline jv jv_none(void) { jv v = { .type = JV_NONE }; return v; }
static inline jv jv_undef(const jnode *at) { jv v = { .type = JV_UNDEF }; v.u.undef = at; return v; }
static inline jv jv_bool(bool b) { jv v = { .type = JV_BOOL }; v.u.b = b; return v; }
static inline jv jv_int(int64_t i) { jv v = { .type = JV_INT }; v.u.i = i; return v; }
static inline jv jv_float(double f) { jv v = { .type = JV_FLOAT }; v.u.f = f; return v; }

/* Strings. A new string is markup, or data as a whole when data is true. */
bool jv_str(jctx *cx, const jnode *at, const char *p, size_t n, bool data, jv *out);
static inline bool jv_str_has_data(jv v) { return v.type == JV_STR && v.u.s->n_spans > 0; }
/* The first occurrence of needle[0..m) in hay[0..n), or NULL (memmem, which C11 lacks). */
const char *jx_find(const char *hay, size_t n, const char *needle, size_t m);
size_t jx_utf8_count(const char *p, size_t n); /* code points */
size_t jx_utf8_offset(const char *p, size_t n, size_t cp_index); /* byte offset of a code point */

void jsb_init(jsb *b);
void jsb_free(jsb *b);
bool jsb_put(jctx *cx, const jnode *at, jsb *b, const char *p, size_t n, bool data);
bool jsb_put_str(jctx *cx, const jnode *at, jsb *b, const jstr *s); /* keeps its data ranges */
bool jsb_finish(jctx *cx, const jnode *at, jsb *b, jv *out);     /* makes a string; frees b */

/* Containers */
bool jv_list(jctx *cx, const jnode *at, size_t cap, bool tuple, jv *out);
bool jlist_push(jctx *cx, const jnode *at, jlist *l, jv item); /* takes the reference */
bool jv_dict(jctx *cx, const jnode *at, jv_type type, jv *out); /* JV_DICT or JV_NS */
bool jdict_set(jctx *cx, const jnode *at, jdict *d, jv key, jv val); /* takes both references */
jv *jdict_find(const jdict *d, jv key);
jv *jdict_find_str(const jdict *d, const char *key, size_t len);

/* Python semantics */
bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
/* a < b as Python orders numbers, strings and sequences; a type error otherwise. */
bool jv_less(jctx *cx, const jnode *at, jv a, jv b, bool *less);
const char *jv_type_name(jv v); /* Python's name: 'str', 'dict', 'NoneType'... */
bool jv_has_data(jv v); /* whether any string inside came from data */
/* Python str() (undefined: empty) and repr(), appended; data strings stay data. */
bool jx_put_str(jctx *cx, const jnode *at, jsb *b, jv v);
bool jx_put_repr(jctx *cx, const jnode *at, buf *b, jv v, int depth); /* provenance: see jv_has_data */
bool jv_to_str(jctx *cx, const jnode *at, jv v, jv *out); /* str(v) as a new reference */
void jx_format_float(double f, char out[40]);
/* transformers' tojson: json.dumps(v, ensure_ascii=False, indent, separators, sort_keys). indent
 * NULL for none; the separators NULL for the defaults. */
bool jx_put_json(jctx *cx, const jnode *at, buf *b, jv v, const char *indent, size_t indent_len,
                 const char *item_sep, size_t item_sep_len, const char *key_sep, size_t key_sep_len, bool sort_keys,
                 bool ensure_ascii, int level);
/* Converts a JSON value; every string of an untrusted one is data. */
bool jv_from_json(jctx *cx, const json_value *j, bool trusted, int depth, jv *out);

/* Iteration: a list of what `for` would iterate (a new reference), or a type error. */
bool jv_iterate(jctx *cx, const jnode *at, jv v, jv *list_out);

/* ---- Built-ins: filters, tests, methods, global functions -------------------------------------- */

typedef struct jargs {
    jv *pos;
    size_t n_pos;
    const char **kw_names;
    size_t *kw_lens;
    jv *kw;
    size_t n_kw;
} jargs;

/* The argument at position i or named name, or NULL. */
jv *jargs_get(const jargs *a, size_t i, const char *name);

typedef enum jb_global { JB_RANGE, JB_NAMESPACE, JB_DICT, JB_RAISE, JB_STRFTIME, JB_GLOBAL_COUNT } jb_global;
/* The global function named, or -1. */
int jb_global_index(const char *name, size_t len);

bool jb_filter(jctx *cx, const jnode *at, int index, jv input, const jargs *a, jv *out);
bool jb_test(jctx *cx, const jnode *at, int index, jv input, const jargs *a, bool *result);
/* markupsafe's escape: a Markup string as it is, anything else as str() with & < > ' " escaped. */
bool jb_html_escape(jctx *cx, const jnode *at, jv v, jv *out);
bool jb_call_global(jctx *cx, const jnode *at, int index, const jargs *a, jv *out);
/* Attribute lookup the way the sandbox does it: a method of the value's type, or nothing. Sets
 * *found; a refused (mutating) method comes back as an unsafe undefined. */
bool jb_method_lookup(jctx *cx, const jnode *at, jv self, const char *name, size_t len, jv *out, bool *found);
bool jb_call_method(jctx *cx, const jnode *at, const jmethod *m, const jargs *a, jv *out);

/* From the evaluator, for filters that take a test or filter by name and for calling macros. */
bool jx_getattr(jctx *cx, const jnode *at, jv obj, const char *name, size_t len, jv *out);
bool jx_call(jctx *cx, const jnode *at, jv callee, const jargs *a, jv *out);

#endif
