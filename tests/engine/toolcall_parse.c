/* toolcall_parse: drives the tool-call reader (engine/toolcall.h) for tests/engine/
 * test_toolcalls_round_trip.py. The reply is read from stdin and parsed whole, byte by byte and in
 * random chunkings; every chunking must give the same events (adjacent text of one kind merged),
 * text pieces of valid UTF-8 must be whole characters, and the events must account for the reply:
 * content and the calls' source text concatenated give it back (for harmony, and when reasoning
 * markers were dropped, they are no longer than it). Prints the events as JSON lines:
 *   {"kind":"content"|"reasoning","text":...}  {"kind":"call","name":...,"arguments":...,"id":...}
 * (arguments as a JSON string, as OpenAI carries them). Exit 0 when every check held, 1 when one
 * failed (the reason on stderr), 2 on usage errors.
 *
 * Usage: toolcall_parse parse FORMAT [--tools FILE] [--chunkings N] [--seed S] < REPLY
 *        toolcall_parse detect TEMPLATE...   (prints "FORMAT<TAB>TEMPLATE" per file) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/utf8.h"
#include "engine/toolcall.h"

typedef struct run_state {
    buf lines;       /* the merged events, serialized */
    buf text;        /* text of the event being merged */
    int text_kind;   /* -1: none */
    buf accounted;   /* content + calls' raw, in order */
    size_t out_bytes;
    bool reasoning_seen, broken_char, check_chars, after_stop;
    int events, stop_after;
} run_state;

static void flush_text(run_state *r) {
    if (r->text_kind < 0)
        return;
    const char *kind = r->text_kind == TOOLCALL_REASONING ? "reasoning" : "content";
    buf_append(&r->lines, "{\"kind\":\"", 9);
    buf_append(&r->lines, kind, strlen(kind));
    buf_append(&r->lines, "\",\"text\":", 9);
    json_write_string(&r->lines, r->text.data ? r->text.data : "", r->text.len);
    buf_append(&r->lines, "}\n", 2);
    r->text.len = 0;
    r->text_kind = -1;
}

static bool on_event(toolcall_event kind, const char *text, size_t len, const toolcall_call *call, void *user) {
    run_state *r = user;
    if (r->stop_after > 0 && r->events >= r->stop_after)
        r->after_stop = true;
    r->events++;
    if (kind == TOOLCALL_CALL) {
        flush_text(r);
        buf_append(&r->lines, "{\"kind\":\"call\",\"name\":", 22);
        json_write_string(&r->lines, call->name, strlen(call->name));
        buf_append(&r->lines, ",\"arguments\":", 13);
        json_write_string(&r->lines, call->arguments, strlen(call->arguments));
        if (call->id) {
            buf_append(&r->lines, ",\"id\":", 6);
            json_write_string(&r->lines, call->id, strlen(call->id));
        }
        buf_append(&r->lines, "}\n", 2);
        buf_append(&r->accounted, call->raw, call->raw_len);
        r->out_bytes += call->raw_len;
    } else {
        if (r->text_kind != (int)kind)
            flush_text(r);
        r->text_kind = (int)kind;
        buf_append(&r->text, text, len);
        if (r->check_chars && !utf8_is_valid(text, len))
            r->broken_char = true;
        if (kind == TOOLCALL_CONTENT)
            buf_append(&r->accounted, text, len);
        else
            r->reasoning_seen = true;
        r->out_bytes += len;
    }
    return r->stop_after == 0 || r->events < r->stop_after;
}

static uint64_t rng_state;
static size_t next_random(size_t bound) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (size_t)((rng_state >> 33) % bound);
}

/* Parses reply in chunks: chunk 0 = whole, 1 = bytes, else random lengths up to 2 * chunk. */
static bool parse(toolcall_format f, const json_value *tools, const char *reply, size_t n, size_t chunk,
                  run_state *r) {
    memset(r, 0, sizeof *r);
    r->text_kind = -1;
    r->check_chars = utf8_is_valid(reply, n);
    toolcall_parser *p = NULL;
    brasa_error err;
    if (toolcall_parser_create(f, tools, on_event, r, &p, &err) != BRASA_OK) {
        fprintf(stderr, "toolcall_parse: %s\n", err.message);
        return false;
    }
    for (size_t at = 0; at < n;) {
        size_t len = chunk == 0 ? n : chunk == 1 ? 1 : 1 + next_random(2 * chunk);
        len = len < n - at ? len : n - at;
        toolcall_push(p, reply + at, len);
        at += len;
    }
    toolcall_finish(p);
    toolcall_parser_free(p);
    flush_text(r);
    return true;
}

static void free_run(run_state *r) {
    buf_free(&r->lines);
    buf_free(&r->text);
    buf_free(&r->accounted);
}

static char *read_all(FILE *in, size_t *n) {
    buf b = { 0 };
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, in)) > 0)
        if (!buf_append(&b, chunk, got))
            exit(1);
    buf_append(&b, "", 1);
    *n = b.len - 1;
    return b.data;
}

static int detect(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "toolcall_parse: cannot open %s\n", argv[i]);
            return 2;
        }
        size_t n;
        char *text = read_all(f, &n);
        fclose(f);
        printf("%s\t%s\n", toolcall_format_name(toolcall_detect(text)), argv[i]);
        free(text);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "detect") == 0)
        return detect(argc, argv);
    toolcall_format f;
    if (argc < 3 || strcmp(argv[1], "parse") != 0 || !toolcall_format_from_name(argv[2], &f) || f == TOOLCALL_NONE) {
        fprintf(stderr, "usage: toolcall_parse parse FORMAT [--tools FILE] [--chunkings N] [--seed S] < REPLY\n"
                        "       toolcall_parse detect TEMPLATE...\n");
        return 2;
    }
    const char *tools_path = NULL;
    long chunkings = 20;
    rng_state = 1;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--tools") == 0)
            tools_path = argv[i + 1];
        else if (strcmp(argv[i], "--chunkings") == 0)
            chunkings = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--seed") == 0)
            rng_state = strtoull(argv[i + 1], NULL, 10);
    }
    json_doc *tools_doc = NULL;
    if (tools_path) {
        FILE *tf = fopen(tools_path, "rb");
        size_t tn = 0;
        char *tools_text = tf ? read_all(tf, &tn) : NULL;
        if (tf)
            fclose(tf);
        brasa_error err;
        if (!tools_text || json_parse(tools_text, tn, &tools_doc, &err) != BRASA_OK) {
            fprintf(stderr, "toolcall_parse: tools %s: %s\n", tools_path, tools_text ? err.message : "cannot open");
            return 2;
        }
        free(tools_text);
    }
    const json_value *tools = tools_doc ? json_root(tools_doc) : NULL;
    size_t n;
    char *reply = read_all(stdin, &n);
    int status = 0;
    run_state whole;
    if (!parse(f, tools, reply, n, 0, &whole))
        return 1;
    for (long c = 0; c < chunkings + 1 && status == 0; c++) {
        run_state other;
        const size_t chunk = c == 0 ? 1 : 1 + (size_t)c % 16;
        parse(f, tools, reply, n, chunk, &other);
        if (other.lines.len != whole.lines.len || memcmp(other.lines.data, whole.lines.data, whole.lines.len) != 0) {
            fprintf(stderr, "toolcall_parse: chunking %ld (about %zu bytes) gives other events:\n%.*s", c, chunk,
                    (int)other.lines.len, other.lines.data ? other.lines.data : "");
            status = 1;
        }
        free_run(&other);
    }
    if (whole.broken_char) {
        fprintf(stderr, "toolcall_parse: a text piece ends inside a character\n");
        status = 1;
    }
    /* harmony's headers and Mistral's [THINK] markers are not handed out (even when the block is empty) */
    bool exact = f != TOOLCALL_HARMONY && !whole.reasoning_seen;
    for (size_t i = 0; i + 7 <= n && exact; i++)
        exact = !((f == TOOLCALL_MISTRAL || f == TOOLCALL_MISTRAL_ARGS) && memcmp(reply + i, "[THINK]", 7) == 0);
    if (exact ? whole.accounted.len != n || (n && memcmp(whole.accounted.data, reply, n) != 0) : whole.out_bytes > n) {
        fprintf(stderr, "toolcall_parse: the events do not account for the reply's %zu bytes (%zu)\n", n,
                whole.accounted.len);
        status = 1;
    }
    /* a callback that says stop is the last one called */
    run_state stopping;
    memset(&stopping, 0, sizeof stopping);
    stopping.text_kind = -1;
    stopping.stop_after = 1;
    toolcall_parser *p = NULL;
    if (toolcall_parser_create(f, tools, on_event, &stopping, &p, NULL) == BRASA_OK) {
        for (size_t at = 0; at < n; at++)
            toolcall_push(p, reply + at, 1);
        toolcall_finish(p);
        toolcall_parser_free(p);
        if (stopping.after_stop) {
            fprintf(stderr, "toolcall_parse: events came after the callback said stop\n");
            status = 1;
        }
    }
    free_run(&stopping);
    fwrite(whole.lines.data ? whole.lines.data : "", 1, whole.lines.len, stdout);
    free_run(&whole);
    free(reply);
    json_free(tools_doc);
    return status;
}
