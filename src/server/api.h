/* api.h: the HTTP APIs `brasa serve` speaks, one dialect each: OpenAI's (api_openai.c), Ollama's
 * (api_ollama.c) and Anthropic's Messages API (api_anthropic.c). A dialect is a table: its
 * endpoints, a parser that checks a JSON body field by field into the one api_request the server
 * runs (every error names its parameter in the dialect's own terms), and writers for a whole reply,
 * a stream's events, its end, errors, embeddings and model listings in the dialect's shape. No I/O
 * here, so every rule is testable on its own; server.c knows only the tables, so a new dialect is a
 * new file and a line in the server's list of dialects. */
#ifndef BRASA_SERVER_API_H
#define BRASA_SERVER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"
#include "core/buf.h"

#define API_MAX_STOP 16
#define API_MAX_MESSAGES 1024
#define API_MAX_TOOLS 128
#define API_MAX_TOP_LOGPROBS 20
#define API_MAX_INPUTS 2048 /* texts in one embeddings request */

typedef enum api_kind { API_CHAT, API_COMPLETION } api_kind;

typedef enum api_tool_choice {
    API_TOOLS_AUTO,     /* the model may call a tool */
    API_TOOLS_NONE,     /* no tool: the tools are not shown to the model */
    API_TOOLS_REQUIRED, /* the reply is a call of one of the tools */
    API_TOOLS_NAMED     /* the reply is a call of tool_name */
} api_tool_choice;

/* What an endpoint does; the server runs each kind the same way whatever the dialect. */
typedef enum api_action {
    API_GENERATE,     /* a chat or a completion (api_endpoint.kind) */
    API_COUNT_TOKENS, /* the prompt a generation request would make, counted */
    API_EMBED,        /* embeddings of texts */
    API_MODELS,       /* the models this server offers */
    API_RUNNING,      /* the models loaded now */
    API_SHOW,         /* one model in detail (its name in the body) */
    API_VERSION
} api_action;

typedef struct api_endpoint {
    const char *method, *path;
    api_action action;
    api_kind kind;          /* API_GENERATE, API_COUNT_TOKENS */
} api_endpoint;

/* A generation request, whatever the dialect. */
typedef struct api_request {
    api_kind kind;
    const char *model;            /* the model asked for, or NULL */
    const char *messages_json;    /* chat: the messages as a template takes them (OpenAI's shape: "system" for
                                   * "developer", text parts joined, tool_calls with arguments), JSON */
    const char *prompt;           /* completion */
    bool raw;                     /* completion: the prompt is sent as is (no BOS) */
    int32_t max_tokens;           /* 0: not given */
    int32_t ctx_limit;            /* prompt and reply within this many tokens; 0: the slot's context */
    brasa_sampler_params sampling;
    const char *stop[API_MAX_STOP + 1];
    bool stream, include_usage;
    bool enable_thinking;         /* chat: false turns a template's thinking off (default true) */
    bool show_thinking;           /* the reply carries the reasoning (Ollama's think: false drops it) */
    int32_t think_budget;         /* most tokens of reasoning before brasa closes it (Anthropic's
                                   * thinking.budget_tokens); 0: no cap */
    const char *kwargs_json;      /* chat: template variables, a JSON object, or NULL */
    const char *tools_json;       /* chat: the tools in OpenAI's shape, a JSON array, or NULL */
    api_tool_choice tool_choice;
    const char *tool_name;        /* API_TOOLS_NAMED */
    bool parallel_tool_calls;     /* default true; false: at most one call */
    const char *schema_json;      /* a JSON Schema the reply must follow, or NULL */
    int32_t logprobs;             /* -1: none; else the top alternatives to report per token */
    double keep_alive;            /* seconds the model stays loaded after this request; < 0: not given */
    void *json;                   /* the parsed body and owned strings */
} api_request;

/* An embeddings request. */
typedef struct api_embed_request {
    const char *model;            /* or NULL */
    const char **texts;           /* n_texts inputs (texts; token lists are made texts by the server) */
    const brasa_token **token_inputs; /* per input: its tokens when given as a token list, else NULL */
    size_t *n_token_inputs;
    size_t n_texts;
    bool base64;                  /* OpenAI encoding_format "base64" */
    int32_t dimensions;           /* 0: the model's */
    bool truncate;                /* an input past the context is cut (Ollama's default), not refused */
    double keep_alive;
    void *json;
} api_embed_request;

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

/* What a reply (or one stream event) says: text may be any bytes (ill-formed UTF-8 becomes
 * U+FFFD). Its tool calls are numbered from first_call_index in a stream. */
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

/* One reply being written, and the state of its stream between events. */
typedef struct api_reply {
    api_kind kind;
    const char *id;        /* "chatcmpl-...", "msg_...", ... */
    const char *model;
    int64_t created;       /* seconds since 1970 */
    int32_t prompt_tokens;
    bool include_usage;    /* OpenAI's stream_options.include_usage */
    bool started;          /* a stream: its opening events are written */
    int32_t block;         /* Anthropic: the content block open (its index), or -1 */
    int32_t n_blocks;
    int block_type;        /* Anthropic: what the open block holds */
} api_reply;

/* How a reply ended. */
typedef struct api_end {
    const char *finish;    /* "stop", "length" or "tool_calls" */
    const char *stop_string; /* the stop string that ended it, or NULL */
    int32_t prompt_tokens, completion_tokens;
    double load_seconds, prompt_seconds, generate_seconds, total_seconds;
} api_end;

/* A model as the listing endpoints show it. */
typedef struct api_model_info {
    const char *name;
    const brasa_model_desc *desc;   /* NULL when the model is not loaded and its header unread */
    uint64_t file_bytes;
    int64_t modified;               /* seconds since 1970 */
    const char *quant;              /* "Q4_K_M" or the like */
    bool loaded;
    int64_t expires;                /* when it unloads, seconds since 1970; 0: never */
    uint64_t memory_bytes;          /* what it holds in memory when loaded */
    int32_t n_ctx;                  /* the context a slot has */
    bool tools, thinking, embedding; /* what it can do: call tools (its template writes calls brasa
                                      * reads), think apart from its answer, make embeddings */
} api_model_info;

typedef struct api_dialect {
    const char *name;
    const api_endpoint *endpoints;
    size_t n_endpoints;
    const char *stream_type;        /* the Content-Type of a stream */
    /* A generation request; false with a message and the parameter at fault (or NULL). */
    bool (*parse)(const api_endpoint *ep, const char *body, size_t len, api_request *out, char *message, size_t size,
                  const char **param);
    bool (*parse_embed)(const char *body, size_t len, api_embed_request *out, char *message, size_t size,
                        const char **param);
    /* Writers: each appends to out and returns false when out of memory. */
    bool (*whole)(api_reply *r, const api_message *m, const api_end *end, buf *out);
    bool (*chunk)(api_reply *r, const api_message *m, buf *out);
    bool (*end)(api_reply *r, const api_end *end, buf *out);
    bool (*stream_error)(api_reply *r, const char *message, buf *out);
    bool (*error)(int status, const char *message, const char *param, const char *code, buf *out);
    bool (*count)(int32_t tokens, buf *out);
    /* vectors: n rows of dim floats */
    bool (*embeddings)(const api_embed_request *rq, const char *model, const float *vectors, size_t n, size_t dim,
                       int32_t prompt_tokens, double seconds, buf *out);
    /* API_MODELS, API_RUNNING, API_SHOW (one model), API_VERSION */
    bool (*models)(api_action action, const api_model_info *models, size_t n, int64_t started, buf *out);
} api_dialect;

extern const api_dialect api_openai, api_ollama, api_anthropic;

void api_request_free(api_request *r);
void api_embed_request_free(api_embed_request *r);
/* The model a body names ({"model": ...} or Ollama's {"name": ...}) into name; false when the body
 * is not such an object. */
bool api_body_model(const char *body, size_t len, char *name, size_t size);

#endif
