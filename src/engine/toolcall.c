/* toolcall.c: the streaming tool-call reader (see toolcall.h). The reply not yet handed out sits in
 * one buffer; each push re-reads it from its start in the current state: text up to a possible
 * marker goes out, a call is kept whole until its end is known (a closing tag, or where its JSON
 * value closes), then read; a call that does not read goes out as the text it was. Searches resume
 * where they stopped, so a long call costs time linear in its length. The syntaxes come from the
 * families' chat templates (how they render past calls) and their public format docs: Hermes
 * function calling (NousResearch), Meta's Llama 3.1 model card (JSON tool calling), Mistral's
 * tokenizer docs ([TOOL_CALLS], [ARGS], [CALL_ID], [THINK]), OpenAI's harmony format, Qwen3-Coder's
 * and GLM 4.5's chat templates. */
#include "engine/toolcall.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"

/* ---- detection ---- */

/* First row whose needles are all in the template wins, so the more specific rows come first. The
 * NONE rows are syntaxes of their own that carry a supported family's marker text. */
static const struct {
    toolcall_format format;
    const char *needles[3];
} detect_rows[] = {
    { TOOLCALL_HARMONY, { "<|channel|>", "<|call|>", NULL } },       /* openai-gpt-oss */
    { TOOLCALL_NONE, { "<invoke name=", NULL, NULL } },              /* MiniMax's XML, inside <tool_call> */
    { TOOLCALL_NONE, { "<tool_calls>", NULL, NULL } },               /* Apriel's JSON list */
    { TOOLCALL_QWEN3_CODER, { "<tool_call>", "<function=", "<parameter=" } },
    { TOOLCALL_GLM, { "<tool_call>", "<arg_key>", NULL } },
    { TOOLCALL_MISTRAL_ARGS, { "[TOOL_CALLS]", "[ARGS]", NULL } },
    { TOOLCALL_MISTRAL, { "[TOOL_CALLS]", NULL, NULL } },
    { TOOLCALL_HERMES, { "<tool_call>", NULL, NULL } },
    { TOOLCALL_LLAMA3, { "<|start_header_id|>", "\"parameters\": ", NULL } },
};

toolcall_format toolcall_detect(const char *chat_template) {
    if (!chat_template)
        return TOOLCALL_NONE;
    for (size_t r = 0; r < sizeof detect_rows / sizeof detect_rows[0]; r++) {
        bool all = true;
        for (size_t k = 0; k < 3 && detect_rows[r].needles[k] && all; k++)
            all = strstr(chat_template, detect_rows[r].needles[k]) != NULL;
        if (all)
            return detect_rows[r].format;
    }
    return TOOLCALL_NONE;
}

static const char *const format_names[] = { "none", "hermes", "llama3", "mistral", "harmony", "qwen3-coder", "glm",
                                            "mistral-args" };
#define N_FORMATS (sizeof format_names / sizeof format_names[0])

const char *toolcall_format_name(toolcall_format f) {
    return (unsigned)f < N_FORMATS ? format_names[f] : "unknown";
}

bool toolcall_format_from_name(const char *name, toolcall_format *out) {
    for (size_t i = 0; name && i < N_FORMATS; i++) {
        if (strcmp(name, format_names[i]) == 0) {
            *out = (toolcall_format)i;
            return true;
        }
    }
    return false;
}

/* ---- the parser's state ---- */

/* How a call (or a reasoning block) that a marker opened ends. */
typedef enum close_kind {
    CLOSE_TAG,     /* at a closing tag */
    CLOSE_JSON,    /* where the JSON object after the marker closes (Llama 3) */
    CLOSE_MISTRAL, /* a JSON list, or NAME[CALL_ID]ID[ARGS] and where the object closes */
    CLOSE_THINK    /* a reasoning block, streamed, up to its closing tag */
} close_kind;

typedef struct opener {
    const char *open, *close;
    close_kind kind;
} opener;

static const opener hermes_openers[] = { { "<tool_call>", "</tool_call>", CLOSE_TAG } };
/* Qwen3-Coder models sometimes leave out the <tool_call> wrapper (as llama.cpp's parser notes) */
static const opener qwen3_coder_openers[] = { { "<tool_call>", "</tool_call>", CLOSE_TAG },
                                              { "<function=", "</function>", CLOSE_TAG } };
static const opener glm_openers[] = { { "<tool_call>", "</tool_call>", CLOSE_TAG } };
/* Magistral and Ministral 3 reasoning models think in [THINK] ... [/THINK] (their templates) */
static const opener mistral_openers[] = { { "[TOOL_CALLS]", NULL, CLOSE_MISTRAL }, { "[THINK]", "[/THINK]", CLOSE_THINK } };
/* Llama 3.1: <|python_tag|> opens a call; a JSON call without it is only the reply's start */
static const opener llama3_openers[] = { { "<|python_tag|>", NULL, CLOSE_JSON } };
static const opener llama3_bare = { "", NULL, CLOSE_JSON };

enum { ST_START, ST_TEXT, ST_CALL, ST_GAP, ST_THINK, H_HEADER, H_BODY, H_BETWEEN };
enum { BODY_CONTENT, BODY_REASONING, BODY_CALL };

/* Where a JSON value that starts with '{' or '[' closes: strings and escapes are followed, nothing
 * else is checked (json_parse judges the value once it is whole). Resumable. */
typedef struct json_scan {
    size_t pos;   /* next byte to look at */
    size_t depth;
    bool in_string, escape;
} json_scan;

struct toolcall_parser {
    toolcall_format format;
    const json_value *tools;
    toolcall_emit_fn emit;
    void *user_data;
    const opener *openers;
    size_t n_openers;
    buf pending;  /* text not yet handed out: [head, len) */
    size_t head;
    int state;
    const opener *open; /* ST_CALL: what opened the call */
    size_t mark;        /* ST_CALL: where the call's body starts; H_BODY call: header length */
    size_t scan;        /* where the search for the end resumes */
    bool json_started;  /* ST_CALL with CLOSE_JSON / CLOSE_MISTRAL: js is running */
    size_t json_start;
    json_scan js;
    int body;           /* H_BODY: what the message's text is */
    bool named, has_id; /* Mistral: the NAME[ARGS] form, with [CALL_ID] */
    bool stopped;       /* emit said stop, or memory ran out */
    buf name, args, id, key; /* the call being read (NUL-terminated) */
};

/* ---- small text helpers ---- */

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Where needle[0..m) first occurs in hay[0..n), or n. */
static size_t find(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0 || m > n)
        return n;
    for (size_t i = 0; i + m <= n; i++) {
        const char *at = memchr(hay + i, needle[0], n - m + 1 - i);
        if (!at)
            return n;
        i = (size_t)(at - hay);
        if (memcmp(at, needle, m) == 0)
            return i;
    }
    return n;
}

/* 2 when t[0..n) starts with s, 1 when t is a proper prefix of s, else 0. */
static int starts(const char *t, size_t n, const char *s) {
    const size_t m = strlen(s);
    if (n >= m)
        return memcmp(t, s, m) == 0 ? 2 : 0;
    return memcmp(t, s, n) == 0 ? 1 : 0;
}

/* How many bytes at the end of p[0..n) start a character that later bytes could complete. */
static size_t incomplete_tail(const char *p, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        const unsigned char b = (unsigned char)p[n - k];
        if ((b & 0xC0) == 0x80)
            continue;
        const size_t need = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 1;
        uint32_t cp;
        return need > k && utf8_decode((const unsigned char *)p + n - k, k, &cp) == -(int)k ? k : 0;
    }
    return 0;
}

static void trim(const char **s, size_t *n) {
    while (*n > 0 && is_space(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_space((*s)[*n - 1]))
        (*n)--;
}


/* Sets b to s[0..n) with a NUL after it (not counted). */
static bool set_text(buf *b, const char *s, size_t n) {
    b->len = 0;
    if (!buf_reserve(b, n + 1))
        return false;
    buf_append(b, s, n);
    b->data[b->len] = '\0';
    return true;
}

static bool terminate(buf *b) {
    if (!buf_reserve(b, 1))
        return false;
    b->data[b->len] = '\0';
    return true;
}

/* ---- handing out ---- */

static void send_text(toolcall_parser *p, toolcall_event kind, const char *text, size_t len) {
    if (len > 0 && !p->stopped && !p->emit(kind, text, len, NULL, p->user_data))
        p->stopped = true;
}

/* Hands out the next n held bytes as text of one kind and drops them. */
static void release(toolcall_parser *p, toolcall_event kind, size_t n) {
    if (n == 0)
        return;
    send_text(p, kind, p->pending.data + p->head, n);
    p->head += n;
}

/* The same, keeping back a last character that the next chunk may complete (unless at the end). */
static void release_whole_chars(toolcall_parser *p, toolcall_event kind, size_t n, bool at_end) {
    if (n == 0)
        return;
    release(p, kind, at_end ? n : n - incomplete_tail(p->pending.data + p->head, n));
}

/* Hands out the call read into p->name/args/id, with its source text. */
static void send_call(toolcall_parser *p, bool has_id, const char *raw, size_t raw_len) {
    const toolcall_call call = { p->name.data, p->args.data, has_id ? p->id.data : NULL, raw, raw_len };
    if (!p->stopped && !p->emit(TOOLCALL_CALL, NULL, 0, &call, p->user_data))
        p->stopped = true;
}

/* ---- reading a call's text ---- */

/* A function name as the model wrote it: non-empty UTF-8, no NUL, no markup or spaces. */
static bool set_name(toolcall_parser *p, const char *s, size_t n) {
    trim(&s, &n);
    if (n == 0 || memchr(s, '\0', n) || !utf8_is_valid(s, n))
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '<' || s[i] == '>' || s[i] == '[' || s[i] == ']' || is_space(s[i]))
            return false;
    return set_text(&p->name, s, n);
}

/* p->args = the arguments value v as compact JSON: an object, or a string holding one (some models
 * write the arguments as a JSON string, as the OpenAI API carries them); missing means none. */
static bool set_args(toolcall_parser *p, const json_value *v) {
    p->args.len = 0;
    if (!v)
        return buf_append(&p->args, "{}", 2) && terminate(&p->args);
    if (v->type == JSON_OBJECT)
        return json_write(&p->args, v) && terminate(&p->args);
    if (v->type != JSON_STRING)
        return false;
    json_doc *doc = NULL;
    bool ok = json_parse(v->str, v->len, &doc, NULL) == BRASA_OK && json_root(doc)->type == JSON_OBJECT &&
              json_write(&p->args, json_root(doc)) && terminate(&p->args);
    json_free(doc);
    return ok;
}

/* A call written as a JSON object {"name": ..., "arguments" or "parameters": {...}, "id"?}. */
static bool read_json_object(toolcall_parser *p, const json_value *o, bool *has_id) {
    if (!o || o->type != JSON_OBJECT)
        return false;
    const json_value *name = json_get(o, "name"), *args = json_get(o, "arguments");
    if (!args)
        args = json_get(o, "parameters");
    if (!name || name->type != JSON_STRING || !set_name(p, name->str, name->len) || !set_args(p, args))
        return false;
    const json_value *id = json_get(o, "id");
    *has_id = id && id->type == JSON_STRING && !memchr(id->str, '\0', id->len) && set_text(&p->id, id->str, id->len);
    return true;
}

static bool read_json_call(toolcall_parser *p, const char *s, size_t n, bool *has_id) {
    json_doc *doc = NULL;
    if (json_parse(s, n, &doc, NULL) != BRASA_OK)
        return false;
    const bool ok = read_json_object(p, json_root(doc), has_id);
    json_free(doc);
    return ok;
}

/* The JSON Schema types a tool's parameter may have: the XML formats write values as text, and
 * these say whether the text is a string or JSON to parse. */
enum { T_STRING = 1, T_OTHER = 2, T_BOOLEAN = 4 };

static unsigned type_bits(const json_value *schema, int depth) {
    unsigned bits = 0;
    const json_value *type = json_get(schema, "type");
    const json_value *one = type && type->type == JSON_ARRAY ? type->items : type;
    const size_t n = type && type->type == JSON_ARRAY ? type->len : type ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        if (one[i].type != JSON_STRING)
            continue;
        bits |= json_is_string(&one[i], "string") ? T_STRING : T_OTHER;
        bits |= json_is_string(&one[i], "boolean") ? T_BOOLEAN : 0;
    }
    static const char *const alternatives[] = { "anyOf", "oneOf" };
    for (size_t a = 0; a < 2 && depth < 4; a++) {
        const json_value *alt = json_get(schema, alternatives[a]);
        for (size_t i = 0; alt && alt->type == JSON_ARRAY && i < alt->len; i++)
            bits |= type_bits(&alt->items[i], depth + 1);
    }
    return bits;
}

/* The tool named p->name in the request's tools, or NULL. */
static const json_value *find_tool(const json_value *tools, const char *name) {
    for (size_t i = 0; tools && tools->type == JSON_ARRAY && i < tools->len; i++) {
        const json_value *fn = json_get(&tools->items[i], "function");
        if (!fn)
            fn = &tools->items[i];
        if (json_is_string(json_get(fn, "name"), name))
            return fn;
    }
    return NULL;
}

static bool equals_nocase(const char *s, size_t n, const char *word) {
    if (strlen(word) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((s[i] | 0x20) != word[i])
            return false;
    return true;
}

/* Appends "key":value to p->args for an XML-format parameter: a string parameter's text stays a
 * string; others are parsed as JSON when they parse (booleans also as Python writes them, which is
 * how Qwen3-Coder's template renders them), else kept as a string. A parameter the tools do not
 * describe is parsed only when it is a JSON object or array. */
static bool add_param(toolcall_parser *p, const char *key, size_t key_len, const char *val, size_t val_len) {
    /* (text that is not UTF-8 cannot be a JSON string: then this is not a call) */
    if (memchr(key, '\0', key_len) || !utf8_is_valid(key, key_len) || !utf8_is_valid(val, val_len) ||
        !set_text(&p->key, key, key_len))
        return false;
    const json_value *tool = find_tool(p->tools, p->name.data);
    const json_value *prop = json_get(json_get(json_get(tool, "parameters"), "properties"), p->key.data);
    const unsigned bits = prop ? type_bits(prop, 0) : 0;
    if (!buf_append(&p->args, p->args.len > 1 ? "," : "", p->args.len > 1) ||
        !json_write_string(&p->args, key, key_len) || !buf_append(&p->args, ":", 1))
        return false;
    if (bits != T_STRING) {
        json_doc *doc = NULL;
        bool written = false;
        if (json_parse(val, val_len, &doc, NULL) == BRASA_OK) {
            const json_type t = json_root(doc)->type;
            if (bits || t == JSON_OBJECT || t == JSON_ARRAY) {
                if (!json_write(&p->args, json_root(doc))) {
                    json_free(doc);
                    return false;
                }
                written = true;
            }
        }
        json_free(doc);
        if (written)
            return true;
        const char *v = val;
        size_t n = val_len;
        trim(&v, &n);
        if ((bits & T_BOOLEAN) && (equals_nocase(v, n, "true") || equals_nocase(v, n, "false")))
            return buf_append(&p->args, n == 4 ? "true" : "false", n);
    }
    return json_write_string(&p->args, val, val_len);
}

/* Skips whitespace, then the literal tag; false when it is not there. */
static bool eat(const char **s, const char *end, const char *tag) {
    while (*s < end && is_space(**s))
        (*s)++;
    const size_t m = strlen(tag);
    if ((size_t)(end - *s) < m || memcmp(*s, tag, m) != 0)
        return false;
    *s += m;
    return true;
}

/* Qwen3-Coder: [<tool_call>] <function=NAME> (<parameter=KEY>\nVALUE\n</parameter>)* </function>
 * [</tool_call>]; the newline the template puts on each side of a value is not part of it. */
static bool read_qwen3_coder(toolcall_parser *p, const char *s, size_t n) {
    const char *end = s + n;
    eat(&s, end, "<tool_call>");
    if (!eat(&s, end, "<function="))
        return false;
    const char *gt = memchr(s, '>', (size_t)(end - s));
    if (!gt || !set_name(p, s, (size_t)(gt - s)))
        return false;
    s = gt + 1;
    p->args.len = 0;
    if (!buf_append(&p->args, "{", 1))
        return false;
    for (;;) {
        if (eat(&s, end, "<parameter=")) {
            gt = memchr(s, '>', (size_t)(end - s));
            if (!gt)
                return false;
            const char *key = s;
            size_t key_len = (size_t)(gt - s);
            trim(&key, &key_len);
            const char *val = gt + 1;
            const size_t close = find(val, (size_t)(end - val), "</parameter>", 12);
            if (key_len == 0 || val + close == end)
                return false;
            size_t val_len = close;
            if (val_len > 0 && val[0] == '\n') {
                val++;
                val_len--;
            }
            if (val_len > 0 && val[val_len - 1] == '\n')
                val_len--;
            if (!add_param(p, key, key_len, val, val_len))
                return false;
            s = val + close + 12;
            if (s > end)
                return false;
        } else {
            break;
        }
    }
    eat(&s, end, "</function>");
    eat(&s, end, "</tool_call>");
    while (s < end && is_space(*s))
        s++;
    return s == end && buf_append(&p->args, "}", 1) && terminate(&p->args);
}

/* GLM 4.5+: <tool_call>NAME (<arg_key>K</arg_key> <arg_value>V</arg_value>)* </tool_call>, with or
 * without newlines between the tags (GLM-4.6 writes them, GLM-4.7 does not); a value is exactly
 * what is between its tags. */
static bool read_glm(toolcall_parser *p, const char *s, size_t n) {
    const char *end = s + n;
    if (!eat(&s, end, "<tool_call>"))
        return false;
    size_t name_len = 0;
    while (s + name_len < end && s[name_len] != '\n' && s[name_len] != '<')
        name_len++;
    if (!set_name(p, s, name_len))
        return false;
    s += name_len;
    p->args.len = 0;
    if (!buf_append(&p->args, "{", 1))
        return false;
    while (eat(&s, end, "<arg_key>")) {
        const size_t close = find(s, (size_t)(end - s), "</arg_key>", 10);
        if (s + close == end)
            return false;
        const char *key = s;
        size_t key_len = close;
        trim(&key, &key_len);
        s += close + 10;
        if (key_len == 0 || !eat(&s, end, "<arg_value>"))
            return false;
        const size_t vclose = find(s, (size_t)(end - s), "</arg_value>", 12);
        if (s + vclose == end || !add_param(p, key, key_len, s, vclose))
            return false;
        s += vclose + 12;
    }
    if (!eat(&s, end, "</tool_call>"))
        return false;
    while (s < end && is_space(*s))
        s++;
    return s == end && buf_append(&p->args, "}", 1) && terminate(&p->args);
}

/* The call in a closed tag block raw[0..n), body from body_at; emitted as a call or as content. */
static void finish_tag_call(toolcall_parser *p, size_t n, size_t body_at) {
    const char *raw = p->pending.data + p->head;
    const opener *o = p->open;
    const size_t close_len = strlen(o->close);
    const char *body = raw + body_at;
    size_t body_len = n - close_len - body_at;
    trim(&body, &body_len);
    bool ok, has_id = false;
    if (body_len > 0 && body[0] == '{') /* JSON in the XML formats' tags: a model writing Hermes */
        ok = read_json_call(p, body, body_len, &has_id);
    else if (p->format == TOOLCALL_QWEN3_CODER)
        ok = read_qwen3_coder(p, raw + (body_at - strlen(o->open)), n - (body_at - strlen(o->open)));
    else if (p->format == TOOLCALL_GLM)
        ok = read_glm(p, raw + (body_at - strlen(o->open)), n - (body_at - strlen(o->open)));
    else
        ok = false;
    if (ok)
        send_call(p, has_id, raw, n);
    else
        send_text(p, TOOLCALL_CONTENT, raw, n);
    p->head += n;
}

/* Mistral's block: [TOOL_CALLS] then a JSON list of calls (or one object), all or nothing. */
static bool read_mistral_list(toolcall_parser *p, const char *s, size_t n, const char *raw, size_t raw_len) {
    json_doc *doc = NULL;
    if (json_parse(s, n, &doc, NULL) != BRASA_OK)
        return false;
    const json_value *root = json_root(doc);
    const json_value *items = root->type == JSON_ARRAY ? root->items : root;
    const size_t count = root->type == JSON_ARRAY ? root->len : 1;
    bool ok = count > 0, has_id;
    for (size_t i = 0; i < count && ok; i++)
        ok = read_json_object(p, &items[i], &has_id);
    for (size_t i = 0; i < count && ok; i++) {
        read_json_object(p, &items[i], &has_id); /* read again: it read before, it reads now */
        send_call(p, has_id, raw, i == 0 ? raw_len : 0);
    }
    json_free(doc);
    return ok;
}

/* ---- the JSON value scanner ---- */

/* 1: the value closed (js->pos just past it); 0: more text needed; -1: nesting too deep. */
static int json_scan_step(json_scan *js, const char *t, size_t n) {
    for (; js->pos < n; js->pos++) {
        const char c = t[js->pos];
        if (js->in_string) {
            if (js->escape)
                js->escape = false;
            else if (c == '\\')
                js->escape = true;
            else if (c == '"')
                js->in_string = false;
        } else if (c == '"') {
            js->in_string = true;
        } else if (c == '{' || c == '[') {
            if (++js->depth > JSON_MAX_DEPTH)
                return -1;
        } else if (c == '}' || c == ']') {
            if (--js->depth == 0) {
                js->pos++;
                return 1;
            }
        }
    }
    return 0;
}

static void start_json(toolcall_parser *p, size_t at) {
    p->json_started = true;
    p->named = false;
    p->json_start = at;
    memset(&p->js, 0, sizeof p->js);
    p->js.pos = at;
}

/* ---- the states ---- */

/* The first opener that starts in t[0..n): *full says whether it is whole (else it is a proper
 * prefix ending the text). Returns its position, or n. */
static size_t find_opener(const toolcall_parser *p, const char *t, size_t n, const opener **which, bool *full) {
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < p->n_openers; k++) {
            const int s = starts(t + i, n - i, p->openers[k].open);
            if (s) {
                *which = &p->openers[k];
                *full = s == 2;
                return i;
            }
        }
    }
    return n;
}

static void enter_call(toolcall_parser *p, const opener *o, size_t body_at) {
    p->state = ST_CALL;
    p->open = o;
    p->mark = body_at;
    p->scan = body_at;
    p->json_started = false;
}

/* Llama 3: only a JSON object that begins {" (or {}) can be a call. */
static bool can_be_call_object(const char *t, size_t n, size_t at, bool at_end, bool *known) {
    size_t i = at + 1;
    while (i < n && is_space(t[i]))
        i++;
    *known = i < n || at_end;
    return i < n && (t[i] == '"' || t[i] == '}');
}

static bool is_name_char(char c) {
    return c == '_' || c == '-' || c == '.' || c == ':' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* Mistral's newer form after [TOOL_CALLS] (at t[i]): NAME, [CALL_ID]ID optionally, [ARGS], then
 * the arguments object. 1: the object began (name and id are set, the scanner runs); 0: more text
 * needed; -1: not a call, *stop says how many bytes of it are certainly text. */
static int mistral_named(toolcall_parser *p, const char *t, size_t n, size_t i, size_t *stop) {
    enum { MAX_FIELD = 256 };
    const size_t name_at = i;
    while (i < n && is_name_char(t[i]) && i - name_at < MAX_FIELD)
        i++;
    const size_t name_end = i;
    *stop = i + 1 < n ? i + 1 : n;
    if (i == n)
        return 0;
    if (i == name_at || t[i] != '[')
        return -1;
    size_t id_at = 0, id_end = 0;
    int s = starts(t + i, n - i, "[CALL_ID]");
    if (s == 1)
        return 0;
    if (s == 2) {
        id_at = i += 9;
        while (i < n && t[i] != '[' && i - id_at < MAX_FIELD)
            i++;
        id_end = i;
        *stop = i + 1 < n ? i + 1 : n;
        if (i == n)
            return 0;
        if (t[i] != '[')
            return -1;
    }
    s = starts(t + i, n - i, "[ARGS]");
    if (s != 2) {
        *stop = i + 1;
        return s == 1 ? 0 : -1;
    }
    i += 6;
    while (i < n && is_space(t[i]))
        i++;
    *stop = i + 1 < n ? i + 1 : n;
    if (i == n)
        return 0;
    if (t[i] != '{' || !set_name(p, t + name_at, name_end - name_at) ||
        (id_end > id_at && (memchr(t + id_at, '\0', id_end - id_at) || !utf8_is_valid(t + id_at, id_end - id_at) ||
                            !set_text(&p->id, t + id_at, id_end - id_at))))
        return -1;
    start_json(p, i);
    p->named = true;
    p->has_id = id_end > id_at;
    return 1;
}

/* One step in the state the parser is in; false when nothing more can be done with what is held. */
static bool step(toolcall_parser *p, bool at_end) {
    /* (nothing yet: the buffer is NULL and nothing is held; n says so for the analyzer too) */
    const char *t = p->pending.data ? p->pending.data + p->head : "";
    const size_t n = p->pending.data ? p->pending.len - p->head : 0;
    switch (p->state) {
    case ST_START: { /* Llama 3: a reply that starts (after spaces) with { may be a call */
        size_t k = 0;
        while (k < n && is_space(t[k]))
            k++;
        if (k == n && !at_end)
            return false;
        if (k < n && t[k] == '{') {
            enter_call(p, &llama3_bare, k);
            return true;
        }
        p->state = ST_TEXT;
        return true;
    }
    case ST_TEXT: {
        const opener *o = NULL;
        bool full = false;
        const size_t at = find_opener(p, t, n, &o, &full);
        if (at < n && full) {
            release(p, TOOLCALL_CONTENT, at);
            if (o->kind == CLOSE_THINK) {
                p->head += strlen(o->open);
                p->state = ST_THINK;
            } else {
                enter_call(p, o, strlen(o->open));
            }
            return true;
        }
        const size_t before = p->head;
        if (at < n && !at_end)
            release(p, TOOLCALL_CONTENT, at);
        else
            release_whole_chars(p, TOOLCALL_CONTENT, n, at_end);
        return p->head != before;
    }
    case ST_THINK: {
        const char *close = "[/THINK]";
        const size_t m = strlen(close);
        const size_t at = find(t, n, close, m);
        if (at < n) {
            release(p, TOOLCALL_REASONING, at);
            p->head += m;
            p->state = ST_TEXT;
            return true;
        }
        size_t keep = 0; /* a proper prefix of the closing tag at the end */
        for (size_t k = m - 1 < n ? m - 1 : n; k > 0 && !keep; k--)
            keep = memcmp(t + n - k, close, k) == 0 ? k : 0;
        const size_t before = p->head;
        if (at_end)
            release(p, TOOLCALL_REASONING, n);
        else
            release_whole_chars(p, TOOLCALL_REASONING, n - keep, false);
        return p->head != before;
    }
    case ST_GAP: { /* after a call: spaces (and Llama 3's ';') held until the next thing shows */
        size_t k = 0;
        while (k < n && (is_space(t[k]) || (p->format == TOOLCALL_LLAMA3 && t[k] == ';')))
            k++;
        if (k == n && !at_end)
            return false;
        if (k < n) {
            if (p->format == TOOLCALL_LLAMA3 && t[k] == '{') {
                enter_call(p, &llama3_bare, k);
                return true;
            }
            for (size_t i = 0; i < p->n_openers; i++) {
                const int s = starts(t + k, n - k, p->openers[i].open);
                if (s == 2 && p->openers[i].kind != CLOSE_THINK) {
                    enter_call(p, &p->openers[i], k + strlen(p->openers[i].open));
                    return true;
                }
                if (s == 1 && !at_end)
                    return false;
            }
        }
        release(p, TOOLCALL_CONTENT, k);
        p->state = ST_TEXT;
        return true;
    }
    case ST_CALL:
        break;
    default:
        return false;
    }

    /* ST_CALL: t[0..mark) is the marker (and what came before it in the gap) */
    const opener *o = p->open;
    if (o->kind == CLOSE_TAG) {
        const size_t m = strlen(o->close);
        const size_t at = find(t + p->scan, n - p->scan, o->close, m);
        if (p->scan + at < n) {
            finish_tag_call(p, p->scan + at + m, p->mark);
            p->state = ST_GAP;
            return true;
        }
        if (at_end) { /* unfinished: it was text */
            release(p, TOOLCALL_CONTENT, n);
            p->state = ST_TEXT;
            return true;
        }
        p->scan = n - p->scan >= m ? n - (m - 1) : p->scan;
        return false;
    }
    if (!p->json_started) {
        size_t i = p->mark;
        if (o->kind == CLOSE_JSON) {
            while (i < n && is_space(t[i]))
                i++;
            if (i == n && !at_end)
                return false;
            bool known = false; /* (set by can_be_call_object, and read only after it ran) */
            if (i < n && t[i] == '{' && can_be_call_object(t, n, i, at_end, &known)) {
                start_json(p, i);
            } else if (i < n && t[i] == '{' && !known) {
                return false;
            } else { /* not a call: its start is text, and what follows is read as text */
                release(p, TOOLCALL_CONTENT, i < n ? i + 1 : n);
                p->state = ST_TEXT;
                return true;
            }
        } else { /* CLOSE_MISTRAL */
            while (i < n && is_space(t[i]))
                i++;
            size_t stop = 0;
            const int h = i < n && (t[i] == '[' || t[i] == '{') ? (start_json(p, i), 1) : mistral_named(p, t, n, i, &stop);
            if (h == 0 && !at_end)
                return false;
            if (h != 1) { /* not a call: its start is text, and what follows is read as text */
                release(p, TOOLCALL_CONTENT, h == 0 ? n : stop);
                p->state = ST_TEXT;
                return true;
            }
        }
    }
    const int r = json_scan_step(&p->js, t, n);
    if (r == 0 && !at_end)
        return false;
    if (r != 1) {
        release(p, TOOLCALL_CONTENT, r < 0 ? p->js.pos : n);
        p->state = ST_TEXT;
        return true;
    }
    const size_t end = p->js.pos, js_at = p->json_start;
    bool ok, has_id = false;
    if (o->kind == CLOSE_JSON) {
        ok = read_json_call(p, t + js_at, end - js_at, &has_id);
        if (ok)
            send_call(p, has_id, t, end);
    } else if (!p->named) {
        ok = read_mistral_list(p, t + js_at, end - js_at, t, end);
    } else {
        /* NAME[ARGS]{...}: the name (and id) were set when the arguments began */
        json_doc *doc = NULL;
        ok = json_parse(t + js_at, end - js_at, &doc, NULL) == BRASA_OK && set_args(p, json_root(doc));
        json_free(doc);
        if (ok)
            send_call(p, p->has_id, t, end);
    }
    if (!ok)
        send_text(p, TOOLCALL_CONTENT, t, end);
    p->head += end;
    p->json_started = false;
    p->state = ok ? ST_GAP : ST_TEXT; /* (a JSON object that is not a call is not followed by calls) */
    return true;
}

/* ---- harmony (OpenAI's harmony response format, as gpt-oss writes it) ---- */

/* A message is <|start|>HEADER<|message|>TEXT and one of <|end|>, <|return|> (the answer's end) or
 * <|call|> (a call's end); the header holds the role, <|channel|>NAME, to=RECIPIENT (before or
 * after the channel) and the content type (json, or <|constrain|>json). The reply begins after
 * the prompt's <|start|>assistant, inside the first header. */
#define HARMONY_MAX_HEADER 512

static const char *const harmony_ends[] = { "<|end|>", "<|return|>", "<|call|>", "<|start|>", "<|channel|>" };
#define N_HARMONY_ENDS (sizeof harmony_ends / sizeof harmony_ends[0])

/* The first message end in t[0..n): *which is its index, *full as in find_opener. Returns n when
 * there is none. */
static size_t find_harmony_end(const char *t, size_t n, size_t *which, bool *full) {
    for (size_t i = 0; i < n; i++) {
        if (t[i] != '<')
            continue;
        for (size_t k = 0; k < N_HARMONY_ENDS; k++) {
            const int s = starts(t + i, n - i, harmony_ends[k]);
            if (s) {
                *which = k;
                *full = s == 2;
                return i;
            }
        }
    }
    return n;
}

/* The word after `key` in the header h[0..n) (up to a space or '<'), or an empty one. */
static void header_field(const char *h, size_t n, const char *key, const char **word, size_t *len) {
    const size_t m = strlen(key);
    const size_t at = find(h, n, key, m);
    *word = h + (at < n ? at + m : n);
    *len = 0;
    while (*word + *len < h + n && !is_space((*word)[*len]) && (*word)[*len] != '<')
        (*len)++;
}

/* Whether t[0..n) can still be the start of a message header. */
static bool header_plausible(const char *t, size_t n) {
    static const char *const starts_of_header[] = { "<|channel|>", "assistant", " to=", "to=", "<|constrain|>" };
    for (size_t k = 0; k < sizeof starts_of_header / sizeof starts_of_header[0]; k++)
        if (starts(t, n, starts_of_header[k]))
            return true;
    return false;
}

/* A harmony call message whole in t[0..n), its text from p->mark to body_end. */
static void finish_harmony_call(toolcall_parser *p, size_t body_end, size_t n) {
    const char *t = p->pending.data ? p->pending.data + p->head : ""; /* (nothing yet: NULL) */
    const char *recipient;
    size_t len;
    header_field(t, p->mark, "to=", &recipient, &len);
    if (len > 10 && memcmp(recipient, "functions.", 10) == 0) {
        recipient += 10;
        len -= 10;
    }
    json_doc *doc = NULL;
    const bool ok = set_name(p, recipient, len) && json_parse(t + p->mark, body_end - p->mark, &doc, NULL) == BRASA_OK &&
                    json_root(doc)->type == JSON_OBJECT && set_args(p, json_root(doc));
    json_free(doc);
    if (ok)
        send_call(p, false, t, n);
    else
        send_text(p, TOOLCALL_CONTENT, t, n);
    p->head += n;
}

static bool harmony_step(toolcall_parser *p, bool at_end) {
    /* (nothing yet: the buffer is NULL and nothing is held; n says so for the analyzer too) */
    const char *t = p->pending.data ? p->pending.data + p->head : "";
    const size_t n = p->pending.data ? p->pending.len - p->head : 0;
    switch (p->state) {
    case H_BETWEEN: {
        const int s = starts(t, n, "<|start|>");
        if (s == 1 && !at_end)
            return false;
        if (s == 2)
            p->head += 9;
        p->state = H_HEADER;
        return true;
    }
    case H_HEADER: {
        const size_t m = strlen("<|message|>");
        const size_t limit = n < HARMONY_MAX_HEADER + m ? n : HARMONY_MAX_HEADER + m;
        const size_t at = find(t, limit, "<|message|>", m);
        /* (how a header starts is judged first, so that the decision does not depend on how much
         * of the reply has come) */
        if (!header_plausible(t, n) || (at == limit && n >= HARMONY_MAX_HEADER + m)) { /* plain text */
            p->body = BODY_CONTENT;
            p->state = H_BODY;
            return true;
        }
        if (at < limit) {
            const char *word;
            size_t len;
            header_field(t, at, "to=", &word, &len);
            const bool call = len > 0;
            header_field(t, at, "<|channel|>", &word, &len);
            p->body = call ? BODY_CALL : len == 8 && memcmp(word, "analysis", 8) == 0 ? BODY_REASONING : BODY_CONTENT;
            p->state = H_BODY;
            if (call)
                p->mark = p->scan = at + m; /* the header stays: it is the call's text too */
            else
                p->head += at + m;
            return true;
        }
        if (!at_end)
            return false;
        release(p, TOOLCALL_CONTENT, n);
        return false;
    }
    case H_BODY:
        break;
    default:
        return false;
    }
    size_t which = 0;
    bool full = false;
    if (p->body == BODY_CALL) {
        const size_t at = p->scan + find_harmony_end(t + p->scan, n - p->scan, &which, &full);
        if (at < n && full) {
            const bool consumed = which < 3; /* <|start|> and <|channel|> begin the next message */
            finish_harmony_call(p, at, consumed ? at + strlen(harmony_ends[which]) : at);
            p->state = which == 4 ? H_HEADER : H_BETWEEN;
            return true;
        }
        if (at_end) {
            finish_harmony_call(p, n, n);
            p->state = H_BETWEEN;
            return true;
        }
        p->scan = at;
        return false;
    }
    const toolcall_event kind = p->body == BODY_REASONING ? TOOLCALL_REASONING : TOOLCALL_CONTENT;
    const size_t at = find_harmony_end(t, n, &which, &full);
    if (at < n && full) {
        release(p, kind, at);
        if (which < 3)
            p->head += strlen(harmony_ends[which]);
        p->state = which == 4 ? H_HEADER : H_BETWEEN;
        return true;
    }
    const size_t before = p->head;
    if (at < n && !at_end)
        release(p, kind, at);
    else
        release_whole_chars(p, kind, n, at_end);
    return p->head != before;
}

/* ---- the parser ---- */

/* Runs the states over what is held, then drops what was handed out. */
static bool run(toolcall_parser *p, bool at_end) {
    while (!p->stopped && (p->format == TOOLCALL_HARMONY ? harmony_step(p, at_end) : step(p, at_end))) {
    }
    if (p->head > 0) {
        memmove(p->pending.data, p->pending.data + p->head, p->pending.len - p->head);
        p->pending.len -= p->head;
        p->head = 0;
    }
    return !p->stopped;
}

brasa_status toolcall_parser_create(toolcall_format f, const json_value *tools, toolcall_emit_fn emit, void *user_data,
                                    toolcall_parser **out, brasa_error *err) {
    *out = NULL;
    if (f == TOOLCALL_NONE || (unsigned)f >= N_FORMATS || !emit)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "toolcall: no tool-call format (%d) or no callback", (int)f);
    toolcall_parser *p = calloc(1, sizeof *p);
    if (!p)
        return err_set(err, BRASA_ERR_NO_MEMORY, "toolcall: out of memory");
    p->format = f;
    p->tools = tools;
    p->emit = emit;
    p->user_data = user_data;
    p->state = ST_TEXT;
    switch (f) {
    case TOOLCALL_HERMES:
        p->openers = hermes_openers;
        p->n_openers = sizeof hermes_openers / sizeof hermes_openers[0];
        break;
    case TOOLCALL_LLAMA3:
        p->openers = llama3_openers;
        p->n_openers = sizeof llama3_openers / sizeof llama3_openers[0];
        p->state = ST_START;
        break;
    case TOOLCALL_MISTRAL:
    case TOOLCALL_MISTRAL_ARGS:
        p->openers = mistral_openers;
        p->n_openers = sizeof mistral_openers / sizeof mistral_openers[0];
        break;
    case TOOLCALL_QWEN3_CODER:
        p->openers = qwen3_coder_openers;
        p->n_openers = sizeof qwen3_coder_openers / sizeof qwen3_coder_openers[0];
        break;
    case TOOLCALL_GLM:
        p->openers = glm_openers;
        p->n_openers = sizeof glm_openers / sizeof glm_openers[0];
        break;
    default: /* harmony */
        p->state = H_HEADER;
        break;
    }
    *out = p;
    return BRASA_OK;
}

void toolcall_parser_free(toolcall_parser *p) {
    if (!p)
        return;
    buf_free(&p->pending);
    buf_free(&p->name);
    buf_free(&p->args);
    buf_free(&p->id);
    buf_free(&p->key);
    free(p);
}

bool toolcall_push(toolcall_parser *p, const char *text, size_t len) {
    if (p->stopped)
        return false;
    if (!buf_append(&p->pending, text, len)) {
        p->stopped = true;
        return false;
    }
    return run(p, false);
}

bool toolcall_finish(toolcall_parser *p) {
    if (p->stopped)
        return false;
    run(p, true);
    if (!p->stopped && p->pending.len > 0) /* (every state hands all out at the end; kept as a guard) */
        send_text(p, TOOLCALL_CONTENT, p->pending.data, p->pending.len);
    p->pending.len = 0;
    return !p->stopped;
}

/* ---- constraints for forced calls ---- */

static bool append_str(buf *b, const char *s) {
    return buf_append(b, s, strlen(s));
}

/* The tool's parameters schema as JSON (an empty object schema when it has none). */
static bool append_parameters(buf *b, const json_value *fn) {
    const json_value *params = json_get(fn, "parameters");
    return params && params->type == JSON_OBJECT ? json_write(b, params) : append_str(b, "{\"type\":\"object\"}");
}

static const char *tool_name(const json_value *tool, const json_value **fn) {
    *fn = json_get(tool, "function");
    if (!*fn)
        *fn = tool;
    const json_value *name = json_get(*fn, "name");
    return name && name->type == JSON_STRING && name->len > 0 && !memchr(name->str, '\0', name->len) ? name->str : NULL;
}

/* {"type":"object","properties":{"name":{"const":NAME},KEY:PARAMETERS},"required":["name",KEY]} */
static bool append_call_schema(buf *b, const json_value *fn, const char *name, const char *args_key) {
    return append_str(b, "{\"type\":\"object\",\"properties\":{\"name\":{\"const\":") &&
           json_write_string(b, name, strlen(name)) && append_str(b, "},\"") && append_str(b, args_key) &&
           append_str(b, "\":") && append_parameters(b, fn) && append_str(b, "},\"required\":[\"name\",\"") &&
           append_str(b, args_key) && append_str(b, "\"]}");
}

brasa_status toolcall_constraint(toolcall_format f, const json_value *tools, const char *name, buf *prefix,
                                 buf *schema_json, buf *suffix, brasa_error *err) {
    prefix->len = schema_json->len = suffix->len = 0;
    if (f == TOOLCALL_QWEN3_CODER || f == TOOLCALL_GLM || f == TOOLCALL_NONE || (unsigned)f >= N_FORMATS)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "toolcall: a forced call cannot be constrained in the %s format",
                       toolcall_format_name(f));
    if (!tools || tools->type != JSON_ARRAY || tools->len == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "toolcall: no tools to call");
    /* the chosen tools: one by name, or all */
    size_t first = tools->len, count = 0;
    for (size_t i = 0; i < tools->len; i++) {
        const json_value *fn;
        const char *tn = tool_name(&tools->items[i], &fn);
        if (!tn)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "toolcall: tool %zu has no name", i);
        if (!name || strcmp(tn, name) == 0) {
            first = first < i ? first : i;
            count++;
        }
    }
    if (count == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "toolcall: no tool is named '%s'", name ? name : "");
    const bool name_in_prefix = f == TOOLCALL_HARMONY || f == TOOLCALL_MISTRAL_ARGS;
    if (name_in_prefix && count > 1)
        return err_set(err, BRASA_ERR_UNSUPPORTED,
                       "toolcall: the %s format names the function before its arguments, so a call to any of %zu "
                       "tools cannot be one constraint; name the tool", toolcall_format_name(f), count);
    bool ok = true;
    const json_value *fn;
    const char *chosen = tool_name(&tools->items[first], &fn);
    if (name_in_prefix) {
        if (f == TOOLCALL_HARMONY)
            /* no suffix: <|call|> ends generation (tok_vocab.eog), so the constraint's end stands for it */
            ok = append_str(prefix, "<|channel|>commentary to=functions.") && append_str(prefix, chosen) &&
                 append_str(prefix, " <|constrain|>json<|message|>");
        else
            ok = append_str(prefix, "[TOOL_CALLS]") && append_str(prefix, chosen) && append_str(prefix, "[ARGS]");
        ok = ok && append_parameters(schema_json, fn);
    } else {
        const char *args_key = f == TOOLCALL_LLAMA3 ? "parameters" : "arguments";
        if (count > 1)
            ok = append_str(schema_json, "{\"anyOf\":[");
        for (size_t i = first, k = 0; i < tools->len && ok; i++) {
            const char *tn = tool_name(&tools->items[i], &fn);
            if (name && strcmp(tn, name) != 0)
                continue;
            ok = (k++ == 0 || append_str(schema_json, ",")) && append_call_schema(schema_json, fn, tn, args_key);
        }
        if (count > 1)
            ok = ok && append_str(schema_json, "]}");
        if (f == TOOLCALL_HERMES)
            ok = ok && append_str(prefix, "<tool_call>\n") && append_str(suffix, "\n</tool_call>");
        else if (f == TOOLCALL_MISTRAL)
            ok = ok && append_str(prefix, "[TOOL_CALLS][") && append_str(suffix, "]");
    }
    if (!ok || !terminate(prefix) || !terminate(schema_json) || !terminate(suffix))
        return err_set(err, BRASA_ERR_NO_MEMORY, "toolcall: out of memory");
    return BRASA_OK;
}
