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
#define API_MAX_TOOLS 128

typedef enum api_kind { API_CHAT, API_COMPLETION } api_kind;

typedef enum api_tool_choice {
    API_TOOLS_AUTO,     /* the model may call a tool */
    API_TOOLS_NONE,     /* no tool: the tools are not shown to the model */
    API_TOOLS_REQUIRED, /* the reply is a call of one of the tools */
    API_TOOLS_NAMED     /* the reply is a call of tool_name */
} api_tool_choice;

#define API_MAX_TOP_LOGPROBS 20

typedef struct api_request {
    api_kind kind;
    const char *messages_json;    /* chat: the messages as a template takes them ("developer" as "system",
                                   * text parts joined), JSON */
    const char *prompt;           /* completion */
    int32_t max_tokens;           /* 0: not given */
    brasa_sampler_params sampling;
    const char *stop[API_MAX_STOP + 1];
    bool stream, include_usage;
    bool enable_thinking;         /* chat: chat_template_kwargs.enable_thinking (default true) */
    const char *kwargs_json;      /* chat: chat_template_kwargs, a JSON object, or NULL */
    const char *tools_json;       /* chat: the tools, a JSON array, or NULL (none, or tool_choice "none") */
    api_tool_choice tool_choice;
    const char *tool_name;        /* API_TOOLS_NAMED */
    bool parallel_tool_calls;     /* default true; false: at most one call */
    const char *schema_json;      /* response_format: a JSON Schema the reply must follow, or NULL */
    int32_t logprobs;             /* -1: none; else the top alternatives to report per token */
    void *json;                   /* the parsed body and owned strings */
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

typedef struct api_tool_call {
    const char *id, *name, *arguments; /* arguments: a JSON object's text */
} api_tool_call;

typedef struct api_logprob {
    const char *text;  /* the token's bytes (any: ill-formed UTF-8 is reported through "bytes") */
    size_t len;
    float logprob;
} api_logprob;

typedef struct api_token_logprobs {
    api_logprob chosen;
    api_logprob top[API_MAX_TOP_LOGPROBS];
    int32_t n_top;
} api_token_logprobs;

/* What a reply (or one stream chunk) says: text may be any bytes (ill-formed UTF-8 becomes
 * U+FFFD). A chat reply's reasoning goes to message.reasoning_content (the field of llama.cpp's and
 * DeepSeek's APIs); its tool calls to message.tool_calls (in a chunk, numbered from
 * first_call_index); logprobs in OpenAI's chat or completions shape when want_logprobs. */
typedef struct api_message {
    const char *content;
    size_t content_len;
    const char *reasoning;
    size_t reasoning_len;
    const api_tool_call *calls;
    size_t n_calls, first_call_index;
    const api_token_logprobs *logprobs;
    size_t n_logprobs;
    bool want_logprobs;
} api_message;

/* A whole response. Each appends to out and returns false when out of memory. */
bool api_completion_json(const api_reply *r, const api_message *m, const char *finish_reason, int32_t prompt_tokens,
                         int32_t completion_tokens, buf *out);
/* "data: {...}\n\n" with a delta (role on the first chunk of a chat); finish_reason NULL: none yet. */
bool api_chunk_sse(const api_reply *r, bool first, const api_message *m, const char *finish_reason, buf *out);
bool api_usage_sse(const api_reply *r, int32_t prompt_tokens, int32_t completion_tokens, buf *out);
bool api_models_json(const char *model, int64_t created, buf *out);
/* {"error": {"message", "type", "param", "code"}} */
bool api_error_json(const char *message, const char *type, const char *param, const char *code, buf *out);

#endif
