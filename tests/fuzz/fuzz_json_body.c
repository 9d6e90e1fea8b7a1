/* fuzz_json_body: the server's request bodies. The input is an HTTP body, checked by every API
 * dialect's parser (OpenAI, Ollama, Anthropic) for each of its endpoints; what it accepts must satisfy the ranges api.h promises
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

/* out holds JSON, or a stream: SSE events ("event: NAME" and "data: JSON" lines, blank lines
 * between, "data: [DONE]" at the end) or NDJSON (a JSON object a line); each JSON must parse. */
static void check_json(const buf *out, bool stream) {
    FUZZ_CHECK(out->len > 0 && utf8_is_valid(out->data, out->len));
    if (!stream) {
        cJSON *parsed = cJSON_ParseWithLength(out->data, out->len);
        FUZZ_CHECK(parsed != NULL);
        cJSON_Delete(parsed);
        return;
    }
    FUZZ_CHECK(out->data[out->len - 1] == '\n');
    const char *p = out->data, *end = out->data + out->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        FUZZ_CHECK(nl != NULL);
        const char *json = p;
        if ((size_t)(nl - p) >= 7 && memcmp(p, "event: ", 7) == 0)
            json = NULL;
        else if ((size_t)(nl - p) >= 6 && memcmp(p, "data: ", 6) == 0)
            json = p + 6;
        if (json && nl > json && !((size_t)(nl - json) == 6 && memcmp(json, "[DONE]", 6) == 0)) {
            cJSON *parsed = cJSON_ParseWithLength(json, (size_t)(nl - json));
            FUZZ_CHECK(parsed != NULL);
            cJSON_Delete(parsed);
        }
        p = nl + 1;
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

static void check_accepted(const api_dialect *d, const api_request *r) {
    if (r->kind == API_CHAT && !r->messages_json) {
        FUZZ_CHECK(d == &api_ollama); /* Ollama's way to load a model: no messages */
    } else if (r->kind == API_CHAT) {
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
    if (d != &api_openai) /* the bounds below are OpenAI's; the others' own are wider */
        return;
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

static void check_embed_accepted(const api_embed_request *r) {
    FUZZ_CHECK(r->n_texts >= 1 && r->n_texts <= API_MAX_INPUTS);
    for (size_t i = 0; i < r->n_texts; i++)
        FUZZ_CHECK(r->texts[i] && (r->texts[i][0] || (r->token_inputs[i] && r->n_token_inputs[i] > 0)));
}

/* Every reply kind of a dialect, with text as the generated text. */
static void build_replies(const api_dialect *d, api_kind kind, const char *text, size_t len) {
    api_reply reply = { kind, "fuzz", "fuzz-model", 1700000000, 3, true, false, -1, 0, 0 };
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
    const api_end stop = { "stop", NULL, 3, 5, 0, 0.1, 0.2, 0.3 }, calls = { "tool_calls", copy, 3, 5, 0, 0, 0, 0 };
    buf out = { 0 };
    FUZZ_CHECK(d->whole(&reply, &plain, &stop, &out));
    check_json(&out, false);
    out.len = 0;
    FUZZ_CHECK(d->whole(&reply, &full, &calls, &out));
    check_json(&out, false);
    out.len = 0;
    FUZZ_CHECK(d->chunk(&reply, &plain, &out));
    FUZZ_CHECK(d->chunk(&reply, &full, &out));
    FUZZ_CHECK(d->chunk(&reply, &none, &out));
    FUZZ_CHECK(d->end(&reply, &calls, &out));
    check_json(&out, true);
    out.len = 0;
    FUZZ_CHECK(d->stream_error(&reply, copy, &out));
    check_json(&out, true);
    out.len = 0;
    FUZZ_CHECK(d->error(400, copy, copy, NULL, &out));
    check_json(&out, false);
    const float vectors[4] = { 0.5f, -0.25f, 1e-30f, -0.0f };
    const api_embed_request er = { .base64 = len & 1 };
    if (d->embeddings) {
        out.len = 0;
        FUZZ_CHECK(d->embeddings(&er, copy, vectors, 2, 2, 7, 0.5, &out));
        check_json(&out, false);
    }
    const brasa_model_desc desc = { .architecture = "llama", .chat_template = copy, .n_params = 135000000 };
    const api_model_info info = { .name = copy, .desc = &desc, .quant = copy, .loaded = true };
    for (api_action a = API_MODELS; a <= API_VERSION && d->models; a++) {
        out.len = 0;
        FUZZ_CHECK(d->models(a, &info, 1, 1700000000, &out));
        check_json(&out, false);
    }
    free(copy);
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
    api_reply reply = { API_CHAT, "fuzz", "fuzz-model", 1700000000, 3, false, false, -1, 0, 0 };
    const api_end end = { "stop", NULL, 3, 5, 0, 0, 0, 0 };
    buf out = { 0 };
    const api_message both = { .content = answer->data, .content_len = answer->len, .reasoning = thought->data,
                               .reasoning_len = thought->len };
    const api_message thinking = { .reasoning = thought->data, .reasoning_len = thought->len };
    const api_message answering = { .content = answer->data, .content_len = answer->len };
    FUZZ_CHECK(api_openai.whole(&reply, &both, &end, &out));
    check_json(&out, false);
    out.len = 0;
    FUZZ_CHECK(api_openai.chunk(&reply, &thinking, &out));
    FUZZ_CHECK(api_openai.chunk(&reply, &answering, &out));
    check_json(&out, true);
    buf_free(&out);
    buf_free(&parts[0]);
    buf_free(&parts[1]);
}

static void parse_as(const api_dialect *d, const api_endpoint *ep, const char *body, size_t len) {
    char message[256];
    const char *param = NULL;
    buf out = { 0 };
    if (ep->action == API_EMBED) {
        api_embed_request er;
        if (d->parse_embed(body, len, &er, message, sizeof message, &param))
            check_embed_accepted(&er);
        else
            FUZZ_CHECK(memchr(message, '\0', sizeof message) != NULL && message[0] != '\0');
        api_embed_request_free(&er);
        return;
    }
    if (ep->action != API_GENERATE && ep->action != API_COUNT_TOKENS)
        return;
    api_request rq;
    if (d->parse(ep, body, len, &rq, message, sizeof message, &param)) {
        check_accepted(d, &rq);
        const char *text = rq.kind == API_CHAT ? rq.messages_json : rq.prompt;
        if (text)
            build_replies(d, ep->kind, text, strlen(text));
    } else {
        FUZZ_CHECK(memchr(message, '\0', sizeof message) != NULL && message[0] != '\0');
        FUZZ_CHECK(d->error(400, message, param, NULL, &out));
        check_json(&out, false);
    }
    buf_free(&out);
    api_request_free(&rq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const api_dialect *const dialects[] = { &api_openai, &api_ollama, &api_anthropic };
    for (size_t d = 0; d < sizeof dialects / sizeof dialects[0]; d++)
        for (size_t e = 0; e < dialects[d]->n_endpoints; e++)
            parse_as(dialects[d], &dialects[d]->endpoints[e], (const char *)data, size);
    for (size_t d = 0; d < sizeof dialects / sizeof dialects[0]; d++)
        build_replies(dialects[d], API_CHAT, (const char *)data, size);
    build_replies(&api_openai, API_COMPLETION, (const char *)data, size);
    build_split_replies((const char *)data, size);
    return 0;
}
