/* fuzz_json: the library's JSON reader (src/core/json.c) on hostile text. Besides memory safety:
 * what it accepts, written back compactly, reads again and writes the same bytes. */
#include <string.h>

#include "core/json.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_doc *doc = NULL;
    if (json_parse((const char *)data, size, &doc, NULL) != BRASA_OK)
        return 0;
    buf first = { 0 }, second = { 0 };
    FUZZ_CHECK(json_write(&first, json_root(doc)));
    json_doc *again = NULL;
    FUZZ_CHECK(json_parse(first.data, first.len, &again, NULL) == BRASA_OK);
    FUZZ_CHECK(json_write(&second, json_root(again)));
    FUZZ_CHECK(first.len == second.len && memcmp(first.data, second.data, first.len) == 0);
    buf_free(&first);
    buf_free(&second);
    json_free(again);
    json_free(doc);
    return 0;
}
