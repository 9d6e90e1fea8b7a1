/* api.h: the OpenAI-compatible request and response bodies: a JSON body checked field by field into
 * an api_request (every error names its parameter, as OpenAI's do), and the JSON of completions,
 * stream chunks, model lists and errors. No I/O here, so every rule is testable on its own. */
#ifndef BRASA_SERVER_API_H
#define BRASA_SERVER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"
#include "core/buf.h"

#define API_MAX_STOP 4
#define API_MAX_MESSAGES 1024

typedef enum api_kind { API_CHAT, API_COMPLETION } api_kind;

typedef struct api_request {
    api_kind kind;
    brasa_chat_message *messages; /* chat: pointing into the parsed body */
    size_t n_messages;
    const char *prompt;           /* completion */
    int32_t max_tokens;           /* 0: not given */
    brasa_sampler_params sampling;
    const char *stop[API_MAX_STOP + 1];
    bool stream, include_usage;
    bool enable_thinking;         /* chat: chat_template_kwargs.enable_thinking (default true) */
    void *json;                   /* the parsed body, owned */
} api_request;

/* Checks a body; on failure returns false with a message and the parameter at fault (or NULL). */
bool api_parse(api_kind kind, const char *body, size_t len, api_request *out, char *message, size_t size,
               const char **param);
void api_request_free(api_request *r);

typedef struct api_reply {
    api_kind kind;
    const char *id;      /* "chatcmpl-..." or "cmpl-..." */
    const char *model;
    int64_t created;
} api_reply;

/* Whole responses and stream chunks; text may be any bytes (ill-formed UTF-8 becomes U+FFFD).
 * finish_reason NULL: none yet. Each appends to out and returns false when out of memory. A chat
 * reply of a reasoning format carries its reasoning apart from the answer (text), as
 * message.reasoning_content (when there is some; the field of llama.cpp's and DeepSeek's APIs). */
bool api_completion_json(const api_reply *r, const char *text, size_t len, const char *reasoning, size_t reasoning_len,
                         const char *finish_reason, int32_t prompt_tokens, int32_t completion_tokens, buf *out);
/* "data: {...}\n\n" with a delta (role on the first chunk of a chat), or the usage-only chunk. */
bool api_chunk_sse(const api_reply *r, bool first, const char *text, size_t len, const char *finish_reason, buf *out);
/* A chat chunk whose delta holds reasoning (delta.reasoning_content) instead of content. */
bool api_reasoning_chunk_sse(const api_reply *r, bool first, const char *text, size_t len, buf *out);
bool api_usage_sse(const api_reply *r, int32_t prompt_tokens, int32_t completion_tokens, buf *out);
bool api_models_json(const char *model, int64_t created, buf *out);
/* {"error": {"message", "type", "param", "code"}} */
bool api_error_json(const char *message, const char *type, const char *param, const char *code, buf *out);

#endif
