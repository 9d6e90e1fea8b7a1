/* test_reply_parts_split_any_chunking: a chat reply split into reasoning, answer and tool calls
 * (engine/reply_parts.h, what `brasa chat` shows and the server returns) comes out the same
 * however the reply is cut into chunks: whole, at every byte into two and into three, and byte
 * by byte. The replies are gpt-oss's harmony (analysis channel as reasoning, final channel as
 * answer, a commentary message to=functions.NAME as a call, ending where generation stops at
 * <|call|> or <|return|>, whose text the engine does not hand out) and qwen3's <think> block with a
 * Hermes call after it; each expected part is written out here, so no byte may be lost or
 * handed out twice. Also the choice of parser: harmony always, another syntax only with tools. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "engine/reply_parts.h"
#include "engine_check.h"

typedef struct parts {
    buf reasoning, answer, calls; /* calls: "NAME ARGUMENTS\n" each */
} parts;

static bool collect(toolcall_event kind, const char *text, size_t len, const toolcall_call *call, void *user) {
    parts *p = user;
    if (kind == TOOLCALL_CALL)
        return buf_append(&p->calls, call->name, strlen(call->name)) && buf_append(&p->calls, " ", 1) &&
               buf_append(&p->calls, call->arguments, strlen(call->arguments)) && buf_append(&p->calls, "\n", 1);
    return buf_append(kind == TOOLCALL_REASONING ? &p->reasoning : &p->answer, text, len);
}

static void parts_free(parts *p) {
    buf_free(&p->reasoning);
    buf_free(&p->answer);
    buf_free(&p->calls);
}

static bool is(const buf *b, const char *want) {
    return b->len == strlen(want) && (b->len == 0 || memcmp(b->data, want, b->len) == 0);
}

typedef struct reply_case {
    const char *name;
    brasa_chat_reasoning start;
    toolcall_format format;
    const char *text;
    const char *reasoning, *answer, *calls;
} reply_case;

/* Feeds c's text cut at cuts (sorted, within [0, n]); true when the parts are the expected ones. */
static bool run_cut(const reply_case *c, const size_t *cuts, size_t n_cuts, bool report) {
    const size_t n = strlen(c->text);
    parts got = { 0 };
    reply_parts rp;
    bool ok = reply_parts_init(&rp, c->start, c->format, NULL, collect, &got, NULL) == BRASA_OK;
    size_t at = 0;
    for (size_t i = 0; ok && i <= n_cuts; i++) {
        const size_t end = i < n_cuts ? cuts[i] : n;
        ok = reply_parts_push(&rp, c->text + at, end - at);
        at = end;
    }
    ok = ok && reply_parts_finish(&rp);
    reply_parts_free(&rp);
    const bool same = ok && is(&got.reasoning, c->reasoning) && is(&got.answer, c->answer) && is(&got.calls, c->calls);
    if (!same && report)
        printf("  %s: reasoning '%.*s', answer '%.*s', calls '%.*s'\n", c->name, (int)got.reasoning.len,
               got.reasoning.data ? got.reasoning.data : "", (int)got.answer.len, got.answer.data ? got.answer.data : "",
               (int)got.calls.len, got.calls.data ? got.calls.data : "");
    parts_free(&got);
    return same;
}

static void check_case(const reply_case *c) {
    const size_t n = strlen(c->text);
    CHECK(run_cut(c, NULL, 0, true), "%s: whole", c->name);
    for (size_t i = 0; i <= n; i++) {
        const size_t cut[1] = { i };
        if (!run_cut(c, cut, 1, true)) {
            CHECK(false, "%s: cut at byte %zu", c->name, i);
            return;
        }
    }
    for (size_t i = 0; i <= n; i++) {
        for (size_t j = i; j <= n; j++) {
            const size_t cuts[2] = { i, j };
            if (!run_cut(c, cuts, 2, true)) {
                CHECK(false, "%s: cut at bytes %zu and %zu", c->name, i, j);
                return;
            }
        }
    }
    size_t *bytes = malloc((n ? n : 1) * sizeof *bytes);
    for (size_t i = 0; i < n; i++)
        bytes[i] = i + 1;
    CHECK(bytes && run_cut(c, bytes, n ? n - 1 : 0, true), "%s: byte by byte", c->name);
    free(bytes);
}

int main(void) {
    static const reply_case cases[] = {
        { "harmony: reasoning, then the answer (generation stopped at <|return|>)", BRASA_REASONING_NONE,
          TOOLCALL_HARMONY,
          "<|channel|>analysis<|message|>The user greets; answer briefly \xc3\xa9\xe2\x9c\x93.<|end|>"
          "<|start|>assistant<|channel|>final<|message|>Hello! \xf0\x9f\x91\x8b How can I help?",
          "The user greets; answer briefly \xc3\xa9\xe2\x9c\x93.", "Hello! \xf0\x9f\x91\x8b How can I help?", "" },
        { "harmony: reasoning, then a call (generation stopped at <|call|>)", BRASA_REASONING_NONE, TOOLCALL_HARMONY,
          "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
          "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}",
          "Need the weather.", "", "get_weather {\"city\":\"Paris\"}\n" },
        { "harmony: a call with its <|call|>, then an answer", BRASA_REASONING_NONE, TOOLCALL_HARMONY,
          "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"
          "<|start|>assistant<|channel|>analysis<|message|>It is sunny.<|end|>"
          "<|start|>assistant<|channel|>final<|message|>Sunny in Paris.<|return|>",
          "It is sunny.", "Sunny in Paris.", "get_weather {\"city\":\"Paris\"}\n" },
        { "harmony: the answer alone", BRASA_REASONING_NONE, TOOLCALL_HARMONY,
          "<|channel|>final<|message|>Just this.", "", "Just this.", "" },
        { "qwen3: a <think> block, then an answer and a Hermes call", BRASA_REASONING_LEADING, TOOLCALL_HERMES,
          "<think>Call it.</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
          "{\"city\": \"Paris\"}}\n</tool_call>",
          "Call it.", "Checking.\n", "get_weather {\"city\":\"Paris\"}\n" },
        { "qwen3: a <think> block without a parser", BRASA_REASONING_LEADING, TOOLCALL_NONE,
          "<think>plan</think>\n\nAnswer <tool_call>", "plan", "Answer <tool_call>", "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);

    CHECK(reply_parts_format(TOOLCALL_HARMONY, false) == TOOLCALL_HARMONY, "harmony is parsed without tools");
    CHECK(reply_parts_format(TOOLCALL_HARMONY, true) == TOOLCALL_HARMONY, "harmony is parsed with tools");
    CHECK(reply_parts_format(TOOLCALL_HERMES, false) == TOOLCALL_NONE, "hermes is not parsed without tools");
    CHECK(reply_parts_format(TOOLCALL_HERMES, true) == TOOLCALL_HERMES, "hermes is parsed with tools");
    CHECK(reply_parts_format(TOOLCALL_NONE, true) == TOOLCALL_NONE, "no syntax, no parser");
    CHECK(reply_parts_template_format(NULL, NULL) == TOOLCALL_NONE, "no model, no parser");

    if (failures) {
        printf("%d checks failed\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
