/* fuzz_json_body: the server's request bodies. The input is an HTTP body, checked by api_parse as a
 * chat request and as a completion request; what it accepts must satisfy the ranges api.h promises
 * (chat_template_kwargs, tools, tool_choice, response_format and logprobs included: the JSON it
 * hands on parses), and what it refuses must come with a message. The replies built
 * from the request's own text (and from the raw input, any bytes, also split by the reasoning
 * splitter as a reasoning format's reply, in chunks the input's first byte sizes, the block opened
 * by the prompt when its last byte is odd) must be valid JSON in valid UTF-8, as clients parse
 * them. libmicrohttpd's parsing of the request itself is not ours and is not fuzzed here. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "engine/reasoning.h"
#include "fuzz.h"
#include "server/api.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return 0;
}

/* out holds JSON, or SSE events "data: JSON\n\n"; each must parse. */
static void check_json(const buf *out, bool sse) {
    FUZZ_CHECK(out->len > 0 && utf8_is_valid(out->data, out->len));
    const char *p = out->data, *end = out->data + out->len;
    while (p < end) {
        const char *json = p, *stop = end;
        if (sse) {
            FUZZ_CHECK((size_t)(end - p) > 6 && memcmp(p, "data: ", 6) == 0);
            json = p + 6;
            const char *blank = NULL;
            for (const char *q = json; q + 1 < end && !blank; q++)
                if (q[0] == '\n' && q[1] == '\n')
                    blank = q;
            FUZZ_CHECK(blank != NULL);
            stop = blank;
        }
        cJSON *parsed = cJSON_ParseWithLength(json, (size_t)(stop - json));
        FUZZ_CHECK(parsed != NULL);
        cJSON_Delete(parsed);
        p = sse ? stop + 2 : end;
    }
}

/* A JSON text the request hands on (to the template, the grammar) parses, as the shape it names. */
static void check_json_text(const char *text, int type) {
    if (!text)
        return;
    cJSON *parsed = cJSON_Parse(text);
    FUZZ_CHECK(parsed != NULL && (parsed->type & 0xFF) == type);
    cJSON_Delete(parsed);
}

static void check_accepted(const api_request *r) {
    if (r->kind == API_CHAT) {
        FUZZ_CHECK(r->messages_json != NULL && r->prompt == NULL);
        cJSON *msgs = cJSON_Parse(r->messages_json);
        FUZZ_CHECK(cJSON_IsArray(msgs) && cJSON_GetArraySize(msgs) >= 1 && cJSON_GetArraySize(msgs) <= API_MAX_MESSAGES);
        const cJSON *m;
        cJSON_ArrayForEach(m, msgs) {
            const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
            FUZZ_CHECK(cJSON_IsString(role));
            const char *rs = role->valuestring;
            FUZZ_CHECK(strcmp(rs, "system") == 0 || strcmp(rs, "user") == 0 || strcmp(rs, "assistant") == 0 ||
                       strcmp(rs, "tool") == 0);
        }
        cJSON_Delete(msgs);
        check_json_text(r->tools_json, cJSON_Array);
        check_json_text(r->kwargs_json, cJSON_Object);
        FUZZ_CHECK((r->tool_choice != API_TOOLS_REQUIRED && r->tool_choice != API_TOOLS_NAMED) || r->tools_json);
        FUZZ_CHECK(r->tool_choice != API_TOOLS_NAMED || r->tool_name);
    } else {
        FUZZ_CHECK(r->prompt != NULL && r->prompt[0] != '\0' && r->messages_json == NULL && r->tools_json == NULL);
    }
    if (r->schema_json) {
        cJSON *schema = cJSON_Parse(r->schema_json);
        FUZZ_CHECK(cJSON_IsObject(schema) || cJSON_IsBool(schema));
        cJSON_Delete(schema);
    }
    FUZZ_CHECK(r->logprobs >= -1 && r->logprobs <= API_MAX_TOP_LOGPROBS);
    FUZZ_CHECK(r->max_tokens >= 0);
    FUZZ_CHECK(r->sampling.temperature >= 0.0f && r->sampling.temperature <= 2.0f);
    FUZZ_CHECK(r->sampling.top_p > 0.0f && r->sampling.top_p <= 1.0f);
    FUZZ_CHECK(r->sampling.presence_penalty >= -2.0f && r->sampling.presence_penalty <= 2.0f);
    FUZZ_CHECK(r->sampling.frequency_penalty >= -2.0f && r->sampling.frequency_penalty <= 2.0f);
    size_t n_stop = 0;
    while (n_stop < API_MAX_STOP && r->stop[n_stop])
        FUZZ_CHECK(r->stop[n_stop++][0] != '\0');
    FUZZ_CHECK(r->stop[n_stop] == NULL);
    FUZZ_CHECK(r->kind == API_CHAT || r->enable_thinking);
}

/* Every reply kind, with text as the generated text. */
static void build_replies(api_kind kind, const char *text, size_t len) {
    const api_reply reply = { kind, kind == API_CHAT ? "chatcmpl-fuzz" : "cmpl-fuzz", "fuzz-model", 1700000000 };
    /* the text also as a tool call's name and arguments, and as a token with its alternatives */
    char *copy = malloc(len + 1);
    FUZZ_CHECK(copy != NULL);
    memcpy(copy, text, len);
    copy[len] = '\0';
    const api_tool_call call = { "call_fuzz_0", copy, copy };
    api_token_logprobs lp = { .chosen = { text, len, -0.5f }, .n_top = 2 };
    lp.top[0] = (api_logprob){ text, len, -0.5f };
    lp.top[1] = (api_logprob){ "", 0, -INFINITY };
    const api_message plain = { .content = text, .content_len = len };
    const api_message full = { .content = text, .content_len = len, .reasoning = text, .reasoning_len = len,
                               .calls = &call, .n_calls = 1, .logprobs = &lp, .n_logprobs = 1, .want_logprobs = true };
    const api_message none = { 0 };
    buf out = { 0 };
    FUZZ_CHECK(api_completion_json(&reply, &plain, "stop", 3, 5, &out));
    check_json(&out, false);
    out.len = 0;
    FUZZ_CHECK(api_completion_json(&reply, &full, "tool_calls", 3, 5, &out));
    check_json(&out, false);
    out.len = 0;
    FUZZ_CHECK(api_chunk_sse(&reply, true, &plain, NULL, &out));
    FUZZ_CHECK(api_chunk_sse(&reply, false, &full, "length", &out));
    FUZZ_CHECK(api_chunk_sse(&reply, false, &none, "stop", &out));
    free(copy);
    FUZZ_CHECK(api_usage_sse(&reply, 3, 5, &out));
    check_json(&out, true);
    buf_free(&out);
}

static bool keep_part(reasoning_part part, const char *text, size_t len, void *user) {
    buf *parts = user;
    FUZZ_CHECK(len > 0 && buf_append(&parts[part], text, len));
    return true;
}

/* text as a reasoning format's reply, streamed in chunks of 1 to 16 bytes: both parts together are
 * at most the text (tags and the whitespace after </think> go), and the replies carry both. */
static void build_split_replies(const char *text, size_t len) {
    buf parts[2] = { { 0 }, { 0 } };
    reasoning_splitter s;
    reasoning_init(&s, len && (text[len - 1] & 1) ? BRASA_REASONING_OPEN : BRASA_REASONING_LEADING, keep_part, parts);
    const size_t step = len ? (size_t)((unsigned char)text[0] % 16) + 1 : 1;
    for (size_t i = 0; i < len; i += step)
        FUZZ_CHECK(reasoning_push(&s, text + i, len - i < step ? len - i : step));
    FUZZ_CHECK(reasoning_finish(&s));
    const buf *thought = &parts[REASONING_THOUGHT], *answer = &parts[REASONING_ANSWER];
    FUZZ_CHECK(thought->len + answer->len <= len);
    const api_reply reply = { API_CHAT, "chatcmpl-fuzz", "fuzz-model", 1700000000 };
    buf out = { 0 };
    const api_message both = { .content = answer->data, .content_len = answer->len, .reasoning = thought->data,
                               .reasoning_len = thought->len };
    const api_message thinking = { .reasoning = thought->data, .reasoning_len = thought->len };
    const api_message answering = { .content = answer->data, .content_len = answer->len };
    FUZZ_CHECK(api_completion_json(&reply, &both, "stop", 3, 5, &out));
    check_json(&out, false);
    out.len = 0;
    FUZZ_CHECK(api_chunk_sse(&reply, true, &thinking, NULL, &out));
    FUZZ_CHECK(api_chunk_sse(&reply, false, &answering, NULL, &out));
    check_json(&out, true);
    buf_free(&out);
    buf_free(&parts[0]);
    buf_free(&parts[1]);
}

static void parse_as(api_kind kind, const char *body, size_t len) {
    api_request rq;
    char message[256];
    const char *param = NULL;
    if (api_parse(kind, body, len, &rq, message, sizeof message, &param)) {
        check_accepted(&rq);
        const char *text = kind == API_CHAT ? rq.messages_json : rq.prompt;
        build_replies(kind, text, strlen(text));
    } else {
        FUZZ_CHECK(memchr(message, '\0', sizeof message) != NULL && message[0] != '\0');
        buf out = { 0 };
        FUZZ_CHECK(api_error_json(message, "invalid_request_error", param, NULL, &out));
        check_json(&out, false);
        buf_free(&out);
    }
    api_request_free(&rq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    parse_as(API_CHAT, (const char *)data, size);
    parse_as(API_COMPLETION, (const char *)data, size);
    build_replies(API_CHAT, (const char *)data, size);
    build_split_replies((const char *)data, size);
    return 0;
}
