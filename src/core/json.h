/* json.h: a small JSON reader (RFC 8259) for what the library itself reads as JSON: the messages
 * and tools a chat template renders, JSON Schemas for constrained output, and tool-call arguments.
 * The library needs it on every platform (the server's cJSON is optional), and it keeps what a
 * template must see exactly: whether a number was written as an integer, and member order. A
 * document is one allocation tree owned by a json_doc; input is untrusted: depth and size are
 * bounded and every error names the line and column. */
#ifndef BRASA_CORE_JSON_H
#define BRASA_CORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"
#include "core/buf.h"

#define JSON_MAX_DEPTH 128

typedef enum json_type { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value json_value;
struct json_value {
    json_type type;
    bool is_integer;   /* NUMBER written without fraction or exponent and within int64 */
    int64_t integer;   /* NUMBER with is_integer */
    double number;     /* NUMBER, always set */
    char *str;         /* STRING: UTF-8 (checked), NUL-terminated; may hold NUL bytes, so use len */
    size_t len;        /* STRING: bytes; ARRAY and OBJECT: members */
    json_value *items; /* ARRAY: len values; OBJECT: len values, in the order written */
    json_value *keys;  /* OBJECT: len STRING values, keys[i] naming items[i] (duplicates kept) */
};

typedef struct json_doc json_doc;

/* Parses text[0..len) (one value, whitespace around it allowed). On failure returns the status and
 * a message such as "line 3, column 7: expected ',' or '}'". */
brasa_status json_parse(const char *text, size_t len, json_doc **out, brasa_error *err);
const json_value *json_root(const json_doc *doc);
/* The root, to be changed in place (json_replace). */
json_value *json_root_mut(json_doc *doc);
/* Replaces *slot, a value inside a document, by the value text[0..len) parses to (what was there is
 * freed); on failure *slot is unchanged. */
brasa_status json_replace(json_value *slot, const char *text, size_t len, brasa_error *err);
void json_free(json_doc *doc); /* accepts NULL */

/* An object's member named key (the last one when written twice, as Python's json module takes
 * it), or NULL; NULL also when obj is not an object. */
const json_value *json_get(const json_value *obj, const char *key);
/* Whether v is a STRING equal to s. */
bool json_is_string(const json_value *v, const char *s);

/* Appends s[0..n) as a JSON string literal, quotes included, escaped as Python's json.dumps does
 * with ensure_ascii=False: \" \\ \n \r \t \b \f, other control characters as \u00XX, the rest as
 * is, but each ill-formed UTF-8 subpart as U+FFFD (the output is always valid JSON). Returns false
 * when out of memory. */
bool json_write_string(buf *out, const char *s, size_t n);
/* Appends v as compact JSON (no spaces), numbers as written (integers exactly, others in the
 * shortest %.17g spelling that reads back the same, with ".0" when that looks like an integer).
 * Returns false when out of memory. */
bool json_write(buf *out, const json_value *v);

#endif
