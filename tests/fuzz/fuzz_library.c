/* fuzz_library: the model library's readers of outside input (src/tools/library.c): a model name as
 * a user types it, and the hub's JSON listing of a repo. Input: the name, a newline, the listing.
 * Besides memory safety: a name that parses formats back to the same text and is not taken for a
 * path (unless it names a repo *.gguf without a quant); every model of a listing has its parts in
 * order, sizes that add up, and file names that stay inside the repo's folder; a pick by the name's
 * quant (or the default) gives one of the models. */
#include <string.h>

#include "fuzz.h"
#include "tools/library.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return 0;
}

/* What library.c promises of a file name from the hub: relative, no "." or ".." component. */
static bool stays_inside(const char *path) {
    if (!path[0] || path[0] == '/' || strchr(path, '\\') || strchr(path, ':'))
        return false;
    for (const char *s = path; *s;) {
        const char *end = strchr(s, '/');
        const size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        s += n + (end ? 1 : 0);
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    const char *newline = memchr(text, '\n', size);
    const size_t name_len = newline ? (size_t)(newline - text) : size;
    char name_text[LIBRARY_NAME_TEXT_MAX + 8];
    library_name name;
    bool named = false;
    if (name_len < sizeof name_text) {
        memcpy(name_text, text, name_len);
        name_text[name_len] = '\0';
        named = strlen(name_text) == name_len && library_name_parse(name_text, &name, NULL) == BRASA_OK;
        if (named) {
            char back[LIBRARY_NAME_TEXT_MAX + 1];
            library_name_format(&name, back, sizeof back);
            FUZZ_CHECK(strcmp(back, name_text) == 0);
            /* (a repo named *.gguf given without a quant is taken for a file: a mistyped path
             * should not start a download) */
            bool gguf_repo = name_len > 5 && !name.quant[0];
            for (size_t i = 0; gguf_repo && i < 5; i++)
                gguf_repo = (name_text[name_len - 5 + i] | 0x20) == ".gguf"[i];
            FUZZ_CHECK(!library_looks_like_path(name_text) || gguf_repo);
        }
    }
    if (!newline)
        return 0;
    const char *json = newline + 1;
    library_listing l;
    if (library_listing_parse(json, size - name_len - 1, &l, NULL) != BRASA_OK)
        return 0;
    for (size_t i = 0; i < l.n_models; i++) {
        const library_model *m = &l.models[i];
        FUZZ_CHECK(m->n_parts >= 1);
        uint64_t total = 0;
        for (size_t k = 0; k < m->n_parts; k++) {
            FUZZ_CHECK(stays_inside(m->parts[k].path));
            FUZZ_CHECK(strlen(m->parts[k].sha256) == 0 || strlen(m->parts[k].sha256) == 64);
            total += m->parts[k].size;
            if (k > 0)
                FUZZ_CHECK(strcmp(m->parts[k - 1].path, m->parts[k].path) < 0);
        }
        FUZZ_CHECK(total == m->size);
    }
    size_t chosen = l.n_models;
    if (library_pick(l.models, l.n_models, named ? name.quant : NULL, &chosen, NULL) == BRASA_OK)
        FUZZ_CHECK(chosen < l.n_models);
    library_listing_free(&l);
    return 0;
}
