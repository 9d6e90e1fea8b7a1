/* toolcall.h: tool calls read out of a model's reply as it streams, in the syntax the model's family
 * writes them (the syntax its chat template renders past calls in), for the OpenAI-compatible
 * server's `tool_calls`. What is not a call is content; gpt-oss's harmony channels are also split
 * into reasoning (analysis) and content (final). Qwen3's <think> split is reasoning.c's, before this.
 * A call whose text does not read as one (its JSON does not parse, it names no function) is not a
 * call: its text goes out as content, so no byte of the reply is lost.
 *
 * Usage: toolcall_detect(template) once per model; per reply toolcall_parser_create, toolcall_push
 * each decoded chunk (detokenized WITH control tokens' text: [TOOL_CALLS], <|python_tag|>,
 * <|channel|> are control tokens), toolcall_finish, toolcall_parser_free. */
#ifndef BRASA_ENGINE_TOOLCALL_H
#define BRASA_ENGINE_TOOLCALL_H

#include <stdbool.h>
#include <stddef.h>

#include "brasa.h"
#include "core/buf.h"
#include "core/json.h"

typedef enum toolcall_format {
    TOOLCALL_NONE,
    TOOLCALL_HERMES,      /* <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> (Qwen 2.5/3, Hermes, ...) */
    TOOLCALL_LLAMA3,      /* {"name": ..., "parameters": {...}} as the reply, maybe after <|python_tag|>, ';' between */
    TOOLCALL_MISTRAL,     /* [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}] (Mistral Nemo, ...) */
    TOOLCALL_HARMONY,     /* gpt-oss: <|channel|>commentary to=functions.NAME ...<|message|>{...}<|call|> */
    TOOLCALL_QWEN3_CODER, /* <tool_call>\n<function=NAME>\n<parameter=K>\nV\n</parameter>\n</function>\n</tool_call> */
    TOOLCALL_GLM,         /* <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call> */
    TOOLCALL_MISTRAL_ARGS /* [TOOL_CALLS]NAME[ARGS]{...} (Mistral Small 3.2, Devstral, Magistral, Ministral 3) */
} toolcall_format;

/* The format a chat template writes calls in, recognized from the template's text (one table of
 * markers); TOOLCALL_NONE when the template has no tool support, or writes calls in a syntax not
 * listed above (the server then answers 400). NULL gives TOOLCALL_NONE. */
toolcall_format toolcall_detect(const char *chat_template);
/* "none", "hermes", "llama3", "mistral", "harmony", "qwen3-coder", "glm", "mistral-args". */
const char *toolcall_format_name(toolcall_format f);
/* The format named by toolcall_format_name's text; false when the name is unknown. */
bool toolcall_format_from_name(const char *name, toolcall_format *out);

typedef enum toolcall_event { TOOLCALL_CONTENT, TOOLCALL_REASONING, TOOLCALL_CALL } toolcall_event;

typedef struct toolcall_call {
    const char *name;      /* NUL-terminated, non-empty */
    const char *arguments; /* compact JSON text of an object, NUL-terminated */
    const char *id;        /* the call id the model wrote (Mistral), or NULL */
    const char *raw;       /* the reply text the call was read from, markers included (also the
                            * whitespace or ';' between it and the call before); calls read from one
                            * block (a Mistral list) share it: the first carries it, the rest have
                            * raw_len 0. Concatenating content and raw gives the reply back, except
                            * for harmony's headers and the reasoning markers ([THINK]). */
    size_t raw_len;
} toolcall_call;

/* Receives the reply in order: content and reasoning text as soon as they cannot be the start of a
 * call marker (whole UTF-8 characters), a call when it is complete (call is NULL for text, text is
 * NULL for a call). Pointers are valid during the call only. Return false to stop. */
typedef bool (*toolcall_emit_fn)(toolcall_event kind, const char *text, size_t len, const toolcall_call *call,
                                 void *user_data);

typedef struct toolcall_parser toolcall_parser;

/* tools: the request's tools array (OpenAI shape: [{"type":"function","function":{"name",
 * "parameters"}}]) or NULL; borrowed, it must outlive the parser; used for the XML formats' value
 * types. f must not be TOOLCALL_NONE (BRASA_ERR_INVALID_ARGUMENT). */
brasa_status toolcall_parser_create(toolcall_format f, const json_value *tools, toolcall_emit_fn emit, void *user_data,
                                    toolcall_parser **out, brasa_error *err);
void toolcall_parser_free(toolcall_parser *p); /* accepts NULL */
/* Feeds the next chunk of the reply (chunks may end anywhere, inside a marker or a character).
 * Returns false when emit said stop or memory ran out; later calls then do nothing. */
bool toolcall_push(toolcall_parser *p, const char *text, size_t len);
/* The end of the reply: held text goes out (an unfinished call as content; a harmony call whose
 * arguments are complete JSON counts as a call without its <|call|>, which servers stop on). */
bool toolcall_finish(toolcall_parser *p);

/* For forcing a call with grammar-constrained sampling (JSON formats only: Hermes, Llama 3,
 * Mistral, harmony): the literal text before a call's JSON, a JSON Schema (as JSON text) of the
 * call object for the tool named `name` (or any of the tools when name is NULL: an anyOf), and the
 * literal after. Hermes: prefix "<tool_call>\n", schema {"type":"object","properties":{"name":
 * {"const":NAME},"arguments":PARAMETERS},"required":["name","arguments"]}, suffix "\n</tool_call>";
 * Llama 3 the same with "parameters" and no prefix or suffix; Mistral "[TOOL_CALLS][" ... "]". For
 * harmony and mistral-args the JSON is the arguments object itself and the prefix carries the name,
 * so name NULL works only with a single tool (else BRASA_ERR_UNSUPPORTED); harmony's suffix is empty,
 * since its <|call|> ends generation, like the end token every constraint closes with. XML formats:
 * BRASA_ERR_UNSUPPORTED. Each buf is cleared, then filled and NUL-terminated (the NUL not counted
 * in len); the caller frees them. */
brasa_status toolcall_constraint(toolcall_format f, const json_value *tools, const char *name, buf *prefix,
                                 buf *schema_json, buf *suffix, brasa_error *err);

#endif
