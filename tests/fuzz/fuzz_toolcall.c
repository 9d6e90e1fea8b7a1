/* fuzz_toolcall: the streaming tool-call reader (engine/toolcall.h) on hostile replies. Input: the
 * first byte picks the format ((byte & 0x7F) % 7 + 1, every format but none) and whether the request's
 * tools are given (bit 7); the rest is the reply. It is parsed whole, byte by byte and in chunks
 * whose lengths come from the reply's own bytes. Besides memory safety this checks the reader's
 * promises: every chunking gives the same events (text of one kind merged), and no byte is lost:
 * content and the calls' source text give the reply back (for harmony, and when [THINK] markers
 * were dropped, the events are no longer than the reply); a call's arguments are a JSON object. */
#include <string.h>

#include "core/buf.h"
#include "core/json.h"
#include "engine/toolcall.h"
#include "fuzz.h"

static const char tools_text[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":"
    "{\"s\":{\"type\":\"string\"},\"n\":{\"type\":[\"integer\",\"null\"]},\"b\":{\"type\":\"boolean\"},"
    "\"o\":{\"anyOf\":[{\"type\":\"object\"},{\"type\":\"string\"}]}}}}}]";
static json_doc *tools_doc;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    FUZZ_CHECK(json_parse(tools_text, sizeof tools_text - 1, &tools_doc, NULL) == BRASA_OK);
    return 0;
}

typedef struct events {
    buf seen;      /* kind byte, then the text or name NUL arguments NUL */
    buf accounted; /* content and raw */
    size_t out_bytes;
    bool lossy;    /* reasoning came out, so markers were dropped */
    int last_kind;
} events;

static bool on_event(toolcall_event kind, const char *text, size_t len, const toolcall_call *call, void *user) {
    events *e = user;
    if (kind == TOOLCALL_CALL) {
        FUZZ_CHECK(call && call->name[0] != '\0');
        json_doc *doc = NULL;
        FUZZ_CHECK(json_parse(call->arguments, strlen(call->arguments), &doc, NULL) == BRASA_OK);
        FUZZ_CHECK(json_root(doc)->type == JSON_OBJECT);
        json_free(doc);
        FUZZ_CHECK(buf_append(&e->seen, "C", 1) && buf_append(&e->seen, call->name, strlen(call->name) + 1) &&
                   buf_append(&e->seen, call->arguments, strlen(call->arguments) + 1));
        FUZZ_CHECK(buf_append(&e->accounted, call->raw, call->raw_len));
        e->out_bytes += call->raw_len;
        e->last_kind = -1;
        return true;
    }
    FUZZ_CHECK(text && len > 0 && !call);
    if (e->last_kind != (int)kind)
        FUZZ_CHECK(buf_append(&e->seen, kind == TOOLCALL_CONTENT ? "T" : "R", 1));
    e->last_kind = (int)kind;
    FUZZ_CHECK(buf_append(&e->seen, text, len));
    if (kind == TOOLCALL_CONTENT)
        FUZZ_CHECK(buf_append(&e->accounted, text, len));
    else
        e->lossy = true;
    e->out_bytes += len;
    return true;
}

/* mode 0: whole; 1: bytes; 2: lengths from the reply's bytes */
static void parse(toolcall_format f, const json_value *tools, const uint8_t *data, size_t n, int mode, events *e) {
    memset(e, 0, sizeof *e);
    e->last_kind = -1;
    toolcall_parser *p = NULL;
    FUZZ_CHECK(toolcall_parser_create(f, tools, on_event, e, &p, NULL) == BRASA_OK);
    for (size_t at = 0, k = 0; at < n; k++) {
        size_t len = mode == 0 ? n : mode == 1 ? 1 : 1 + (size_t)(data[k % n] % 23);
        len = len < n - at ? len : n - at;
        FUZZ_CHECK(toolcall_push(p, (const char *)data + at, len));
        at += len;
    }
    FUZZ_CHECK(toolcall_finish(p));
    toolcall_parser_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    const toolcall_format f = (toolcall_format)((data[0] & 0x7F) % 7 + 1);
    const json_value *tools = data[0] & 0x80 ? json_root(tools_doc) : NULL;
    const uint8_t *reply = data + 1;
    const size_t n = size - 1;
    events whole;
    parse(f, tools, reply, n, 0, &whole);
    /* harmony's headers and Mistral's [THINK] markers are not handed out (even when the block is empty) */
    bool markers_dropped = f == TOOLCALL_HARMONY || whole.lossy;
    for (size_t i = 0; i + 7 <= n && !markers_dropped; i++)
        markers_dropped = (f == TOOLCALL_MISTRAL || f == TOOLCALL_MISTRAL_ARGS) && memcmp(reply + i, "[THINK]", 7) == 0;
    if (!markers_dropped)
        FUZZ_CHECK(whole.accounted.len == n && (n == 0 || memcmp(whole.accounted.data, reply, n) == 0));
    else
        FUZZ_CHECK(whole.out_bytes <= n);
    for (int mode = 1; mode <= 2; mode++) {
        events other;
        parse(f, tools, reply, n, mode, &other);
        FUZZ_CHECK(other.seen.len == whole.seen.len &&
                   (whole.seen.len == 0 || memcmp(other.seen.data, whole.seen.data, whole.seen.len) == 0));
        buf_free(&other.seen);
        buf_free(&other.accounted);
    }
    buf_free(&whole.seen);
    buf_free(&whole.accounted);
    return 0;
}
