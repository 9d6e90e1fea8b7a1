/* api_shared.h: what the dialects (api_openai.c, api_ollama.c, api_anthropic.c) share, on cJSON:
 * the request's owned memory, typed field readers whose errors name the parameter, the check of
 * messages and tools in the shape the chat templates take (OpenAI's, which the other dialects are
 * translated into), stop strings, and JSON writing that turns ill-formed UTF-8 into U+FFFD. Not
 * for use outside the dialects. */
#ifndef BRASA_SERVER_API_SHARED_H
#define BRASA_SERVER_API_SHARED_H

#include <cjson/cJSON.h>

#include "server/api.h"

/* A request's owned pieces: the parsed body, trees made from it, and strings. */
typedef struct api_owned {
    cJSON *root;
    cJSON **trees;
    size_t n_trees;
    char **texts;
    size_t n_texts;
    cJSON *kwargs;  /* template variables a dialect sets (in trees) */
} api_owned;

/* Checks that the body is UTF-8 and a JSON object, and starts the request's owned memory in
 * *json; NULL with a message when not. */
const cJSON *api_body_object(const char *body, size_t len, void **json, char *message, size_t size);
/* Keeps text (malloc'd, may be NULL) with the request; NULL when out of memory. */
char *api_own_text(api_owned *own, char *text);
/* The compact JSON of a node, kept with the request. */
char *api_own_json(api_owned *own, const cJSON *node);
/* Keeps a tree (may be NULL) with the request; NULL when out of memory. */
cJSON *api_own_tree(api_owned *own, cJSON *tree);

/* Sets a template variable (taking value) into r->kwargs_json; false when out of memory. */
bool api_set_kwarg(api_owned *own, api_request *r, const char *key, cJSON *value);

/* Sets the message (fmt has one %s: what, or the name) and the parameter; returns false. */
bool api_fail(char *message, size_t size, const char **param, const char *name, const char *fmt, const char *what);
/* Fields of obj read by key, errors naming label (key when NULL); absent or null fields leave *out. */
bool api_get_int(const cJSON *obj, const char *key, const char *label, int64_t lo, int64_t hi, int64_t *out,
                 bool *present, char *message, size_t size, const char **param);
bool api_get_float(const cJSON *obj, const char *key, const char *label, double lo, double hi, bool lo_open,
                   float *out, char *message, size_t size, const char **param);
bool api_get_bool(const cJSON *obj, const char *key, const char *label, bool *out, char *message, size_t size,
                  const char **param);
/* A string or an array of strings into r->stop (at most max, none empty). */
bool api_get_stop(const cJSON *node, const char *label, int max, api_request *r, char *message, size_t size,
                  const char **param);

/* root's "messages" checked into r->messages_json (see api_request); errors name label[i]. */
bool api_check_messages(const cJSON *root, const char *label, api_request *r, api_owned *own, char *message,
                        size_t size, const char **param);
/* root's "tools", "tool_choice" and "parallel_tool_calls" in OpenAI's shapes, checked into r. */
bool api_check_tools(const cJSON *root, api_request *r, api_owned *own, char *message, size_t size, const char **param);
/* A JSON Schema node (an object or a boolean) into r->schema_json. */
bool api_take_schema(const cJSON *schema, const char *label, api_request *r, api_owned *own, char *message, size_t size,
                     const char **param);
/* An embeddings input: a string, an array of strings, an array of tokens or of token arrays. */
bool api_take_inputs(const cJSON *input, const char *label, api_embed_request *r, api_owned *own, char *message,
                     size_t size, const char **param);

/* A JSON string of any bytes (ill-formed UTF-8 becomes U+FFFD). */
cJSON *api_text(const char *s, size_t n);
/* obj[key] = text as api_text makes it; text NULL: "". */
void api_add_text(cJSON *obj, const char *key, const char *text);
/* A new object holding an empty array under key (*array points to it); NULL when out of memory. */
cJSON *api_object_with_array(const char *key, cJSON **array);
/* An array of n floats. */
cJSON *api_floats(const float *v, size_t n);
/* Writes root's compact JSON between prefix and suffix, then frees root; false when out of memory. */
bool api_emit(cJSON *root, const char *prefix, const char *suffix, buf *out);
/* A tool call's arguments (a JSON object's text) as a JSON value; an object always. */
cJSON *api_arguments_object(const char *arguments);
/* "2026-12-06T13:35:00.123456789Z" for seconds since 1970. */
void api_iso_time(double seconds, char *out, size_t size);

#endif
