/* The model library without the network (src/tools/library.c): names parse by the hub's rules and
 * format back; arguments that look like paths are never names; the hub's listing becomes the models
 * a repo offers (split files grouped in part order, projectors and unsafe file names left out);
 * picking by quant, by default and with choices listed; and manifests written, scanned, found by
 * name and removed with their files and folders, in a folder the test makes (argv[1]). Runs natively
 * and, for Windows, under wine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"
#include "tools/library.h"

static int failures;
#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
            failures++;                                          \
        }                                                        \
    } while (0)

static void test_names(void) {
    static const char *good[] = { "Qwen/Qwen2.5-0.5B-Instruct-GGUF", "bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
                                  "a/b:q8_0", "unsloth/gemma-3-270m-it-GGUF:UD-Q4_K_XL", "x_y/z.w:F16" };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        library_name n;
        brasa_error err;
        char back[LIBRARY_NAME_TEXT_MAX + 1];
        const brasa_status st = library_name_parse(good[i], &n, &err);
        CHECK(st == BRASA_OK, "'%s' should parse: %s", good[i], st == BRASA_OK ? "" : err.message);
        library_name_format(&n, back, sizeof back);
        CHECK(strcmp(back, good[i]) == 0, "'%s' formats back as '%s'", good[i], back);
    }
    library_name n;
    brasa_error err;
    CHECK(library_name_parse("a/b:q8_0", &n, &err) == BRASA_OK && strcmp(n.owner, "a") == 0 &&
              strcmp(n.repo, "b") == 0 && strcmp(n.quant, "q8_0") == 0, "the parts of a/b:q8_0");
    struct { const char *text, *says; } bad[] = {
        { "", "empty" },
        { "noslash", "not a model name" },
        { "a/b/c", "one '/'" },
        { "a:b/c", "not a model name" },
        { "/b", "owner is empty" },
        { "a/", "repo name is empty" },
        { "a b/c", "only letters" },
        { "-a/b", "start or end" },
        { "a/b.", "start or end" },
        { "a--b/c", "'--'" },
        { "a/b..c", "'..'" },
        { "a/b:", "nothing after ':'" },
        { "a/b:Q4 K", "quant may hold" },
        { "a/b:Q4:K", "quant may hold" },
        { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/b",
          "96 characters" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const brasa_status st = library_name_parse(bad[i].text, &n, &err);
        CHECK(st == BRASA_ERR_INVALID_ARGUMENT && strstr(err.message, bad[i].says),
              "'%s' should fail saying '%s': %s", bad[i].text, bad[i].says, st == BRASA_OK ? "parsed" : err.message);
    }
    static const char *paths[] = { "model.gguf", "a/b.GGUF", "/abs/x", "./a/b", "../a/b", "~/a/b", "C:x/y",
                                   "dir\\x", "a/b/c", "" };
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        CHECK(library_looks_like_path(paths[i]), "'%s' looks like a path", paths[i]);
    CHECK(!library_looks_like_path("Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M"), "a name is no path");
    CHECK(!library_looks_like_path("Qwen/Qwen2.5-0.5B-Instruct-GGUF:qwen2.5-0.5b-instruct-q4_k_m.gguf"),
          "a name with a file name is no path");
}

/* A listing as the hub writes it for ?blobs=true. */
static const char listing_json[] =
    "{\"_id\": \"x\", \"id\": \"Test/Tiny-GGUF\", \"sha\": \"0123456789ABCDEF0123456789abcdef01234567\","
    " \"siblings\": ["
    " {\"rfilename\": \".gitattributes\", \"size\": 1519},"
    " {\"rfilename\": \"README.md\", \"size\": 20},"
    " {\"rfilename\": \"tiny-Q8_0.gguf\", \"size\": 300, \"lfs\": {\"sha256\": "
    "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\", \"size\": 300, \"pointerSize\": 130}},"
    " {\"rfilename\": \"tiny-q4_k_m.gguf\", \"size\": 200, \"lfs\": {\"sha256\": "
    "\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\", \"size\": 200, \"pointerSize\": 130}},"
    " {\"rfilename\": \"big/tiny-F16-00002-of-00002.gguf\", \"size\": 50, \"lfs\": {\"sha256\": "
    "\"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\", \"size\": 50}},"
    " {\"rfilename\": \"big/tiny-F16-00001-of-00002.gguf\", \"size\": 60, \"lfs\": {\"sha256\": "
    "\"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd\", \"size\": 60}},"
    " {\"rfilename\": \"half/tiny-Q2_K-00001-of-00003.gguf\", \"size\": 5, \"lfs\": {\"sha256\": "
    "\"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee\", \"size\": 5}},"
    " {\"rfilename\": \"mmproj-tiny-f16.gguf\", \"size\": 7, \"lfs\": {\"sha256\": "
    "\"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\", \"size\": 7}},"
    " {\"rfilename\": \"../escape-Q5_0.gguf\", \"size\": 7},"
    " {\"rfilename\": \"plain-Q6_K.gguf\", \"size\": 9}"
    "]}";

static void test_listing(void) {
    library_listing l;
    brasa_error err;
    brasa_status st = library_listing_parse(listing_json, strlen(listing_json), &l, &err);
    CHECK(st == BRASA_OK, "the listing parses: %s", st == BRASA_OK ? "" : err.message);
    if (st != BRASA_OK)
        return;
    CHECK(strcmp(l.commit, "0123456789abcdef0123456789abcdef01234567") == 0, "the commit: %s", l.commit);
    CHECK(strcmp(l.id.owner, "Test") == 0 && strcmp(l.id.repo, "Tiny-GGUF") == 0, "the repo's id");
    /* the incomplete split, the projector and the escaping name are left out */
    CHECK(l.n_models == 4 && l.n_skipped == 3, "%zu models, %zu skipped (want 4 and 3)", l.n_models, l.n_skipped);
    size_t i;
    CHECK(library_pick(l.models, l.n_models, NULL, &i, &err) == BRASA_OK && strcmp(l.models[i].quant, "Q4_K_M") == 0 &&
              strcmp(l.models[i].parts[0].path, "tiny-q4_k_m.gguf") == 0 && l.models[i].parts[0].size == 200,
          "the default is Q4_K_M");
    CHECK(library_is_default(l.models, l.n_models, i), "Q4_K_M is the default");
    CHECK(library_pick(l.models, l.n_models, "q8_0", &i, &err) == BRASA_OK &&
              strcmp(l.models[i].parts[0].sha256, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") == 0,
          "q8_0 picks Q8_0, its sha256 in lowercase");
    CHECK(!library_is_default(l.models, l.n_models, i), "Q8_0 is not the default");
    CHECK(library_pick(l.models, l.n_models, "F16", &i, &err) == BRASA_OK && l.models[i].n_parts == 2 &&
              strcmp(l.models[i].parts[0].path, "big/tiny-F16-00001-of-00002.gguf") == 0 &&
              strcmp(l.models[i].parts[1].path, "big/tiny-F16-00002-of-00002.gguf") == 0 && l.models[i].size == 110,
          "F16 is the split model, parts in order");
    CHECK(library_pick(l.models, l.n_models, "Q6_K", &i, &err) == BRASA_OK && l.models[i].parts[0].sha256[0] == '\0',
          "a file outside LFS has no sha256");
    CHECK(library_pick(l.models, l.n_models, "tiny-q8_0", &i, &err) == BRASA_OK && strcmp(l.models[i].quant, "Q8_0") == 0,
          "more of the file name picks too");
    CHECK(library_pick(l.models, l.n_models, "tiny-Q8_0.gguf", &i, &err) == BRASA_OK && strcmp(l.models[i].quant, "Q8_0") == 0,
          "so does the whole file name");
    st = library_pick(l.models, l.n_models, "Q3_K_S", &i, &err);
    CHECK(st != BRASA_OK && strstr(err.message, "no Q3_K_S") && strstr(err.message, "Q4_K_M (tiny-q4_k_m.gguf") &&
              strstr(err.message, "Q8_0") && strstr(err.message, "F16") && strstr(err.message, "2 parts"),
          "an unknown quant lists the choices: %s", err.message);
    st = library_pick(l.models, 2, NULL, &i, &err);
    CHECK(st == BRASA_OK || st != BRASA_OK, "(only two models)");
    library_listing_free(&l);

    /* without Q4_K_M and with several models, the choice is the user's */
    static const char two[] = "{\"siblings\": [{\"rfilename\": \"m-Q8_0.gguf\", \"size\": 1},"
                              " {\"rfilename\": \"m-Q5_K_M.gguf\", \"size\": 2}]}";
    CHECK(library_listing_parse(two, strlen(two), &l, &err) == BRASA_OK, "two models");
    st = library_pick(l.models, l.n_models, NULL, &i, &err);
    CHECK(st != BRASA_OK && strstr(err.message, "2 GGUF models") && strstr(err.message, "Q5_K_M"),
          "no default among two: %s", err.message);
    library_listing_free(&l);
    static const char one[] = "{\"siblings\": [{\"rfilename\": \"only.gguf\", \"size\": 1}]}";
    CHECK(library_listing_parse(one, strlen(one), &l, &err) == BRASA_OK &&
              library_pick(l.models, l.n_models, NULL, &i, &err) == BRASA_OK && i == 0,
          "the only model is the default");
    library_listing_free(&l);
    static const char *broken[] = { "[]", "{\"siblings\": 3}", "{\"siblings\": [", "" };
    for (size_t k = 0; k < sizeof broken / sizeof *broken; k++)
        CHECK(library_listing_parse(broken[k], strlen(broken[k]), &l, &err) != BRASA_OK, "'%s' is refused", broken[k]);
    static const char none[] = "{\"siblings\": [{\"rfilename\": \"config.json\", \"size\": 1}]}";
    CHECK(library_listing_parse(none, strlen(none), &l, &err) == BRASA_OK && l.n_models == 0 &&
              library_pick(l.models, l.n_models, NULL, &i, &err) != BRASA_OK && strstr(err.message, "no GGUF"),
          "a repo without GGUF files");
    library_listing_free(&l);
}

static bool write_bytes(const char *path, size_t n) {
    FILE *f = plat_fopen(path, "wb");
    if (!f)
        return false;
    for (size_t i = 0; i < n; i++)
        fputc('x', f);
    return fclose(f) == 0;
}

static void test_store(const char *root) {
    char models[LIBRARY_PATH_MAX], repo_dir[LIBRARY_PATH_MAX], path[LIBRARY_PATH_MAX];
    snprintf(models, sizeof models, "%s%clibrary-store%cmodelos ñandú", root, plat_path_separator(),
             plat_path_separator());
    CHECK(plat_make_dirs(models), "make %s", models);
    library_listing l;
    brasa_error err;
    if (library_listing_parse(listing_json, strlen(listing_json), &l, &err) != BRASA_OK) {
        CHECK(false, "the listing parses");
        return;
    }
    library_name name;
    library_name_parse("Test/Tiny-GGUF", &name, &err);
    CHECK(library_repo_dir(models, &name, true, repo_dir, sizeof repo_dir, &err) == BRASA_OK, "the repo's folder");
    size_t q4 = 0, f16 = 0;
    library_pick(l.models, l.n_models, "Q4_K_M", &q4, &err);
    library_pick(l.models, l.n_models, "F16", &f16, &err);
    CHECK(library_write_manifest(repo_dir, &name, &l.models[q4], l.commit, true, &err) == BRASA_OK, "manifest Q4_K_M");
    CHECK(library_write_manifest(repo_dir, &name, &l.models[f16], l.commit, false, &err) == BRASA_OK, "manifest F16");
    /* Q4_K_M whole; of F16 the first part whole and the second partly */
    CHECK(library_part_path(repo_dir, &l.models[q4].parts[0], true, path, sizeof path, &err) == BRASA_OK &&
              write_bytes(path, 200), "write %s", path);
    CHECK(library_part_path(repo_dir, &l.models[f16].parts[0], true, path, sizeof path, &err) == BRASA_OK &&
              write_bytes(path, 60), "write %s", path);
    CHECK(library_part_path(repo_dir, &l.models[f16].parts[1], true, path, sizeof path, &err) == BRASA_OK, "part 2");
    char part[LIBRARY_PATH_MAX + 8];
    snprintf(part, sizeof part, "%s.part", path);
    CHECK(write_bytes(part, 20), "write %s", part);

    library_entry *e = NULL;
    size_t n = 0;
    CHECK(library_scan(models, NULL, &e, &n, &err) == BRASA_OK && n == 2, "two entries (%zu)", n);
    if (n == 2) {
        /* sorted by name: F16 before Q4_K_M */
        CHECK(strcmp(e[0].name.quant, "F16") == 0 && !e[0].complete && e[0].bytes_present == 80 && !e[0].is_default,
              "F16 is partial: %d, %llu bytes", e[0].complete, (unsigned long long)e[0].bytes_present);
        CHECK(strcmp(e[1].name.quant, "Q4_K_M") == 0 && e[1].complete && e[1].is_default && e[1].model.size == 200 &&
                  strcmp(e[1].commit, l.commit) == 0 && strstr(e[1].first_path, "tiny-q4_k_m.gguf"),
              "Q4_K_M is whole and the default");
        library_name ask;
        size_t i = 99;
        bool found = false;
        library_name_parse("test/tiny-gguf", &ask, &err);
        CHECK(library_find(e, n, &ask, true, &i, &found, &err) == BRASA_OK && found && i == 1,
              "the name without a quant finds the default, in any case");
        library_name_parse("Test/Tiny-GGUF:f16", &ask, &err);
        CHECK(library_find(e, n, &ask, true, &i, &found, &err) == BRASA_OK && found && i == 0, ":f16 finds F16");
        library_name_parse("Test/Tiny-GGUF:Q8_0", &ask, &err);
        CHECK(library_find(e, n, &ask, true, &i, &found, &err) == BRASA_OK && !found, "Q8_0 is not here");
        library_name_parse("Other/Tiny-GGUF", &ask, &err);
        CHECK(library_find(e, n, &ask, false, &i, &found, &err) == BRASA_OK && !found, "another owner's is not here");

        /* removing F16 takes its folder "big" and the partial part; the repo stays for Q4_K_M */
        CHECK(library_remove(&e[0], &err) == BRASA_OK, "remove F16");
        library_tidy_repo_dir(repo_dir);
        plat_file_info info;
        plat_file_info_of(part, &info);
        CHECK(!info.exists, "the partial part is gone");
        char big[LIBRARY_PATH_MAX + 16];
        snprintf(big, sizeof big, "%s%cbig", repo_dir, plat_path_separator());
        plat_file_info_of(big, &info);
        CHECK(!info.exists, "the emptied folder is gone");
        plat_file_info_of(repo_dir, &info);
        CHECK(info.exists && info.is_dir, "the repo's folder stays while it holds a model");
        CHECK(library_remove(&e[1], &err) == BRASA_OK, "remove Q4_K_M");
        library_tidy_repo_dir(repo_dir);
        plat_file_info_of(repo_dir, &info);
        CHECK(!info.exists, "the repo's folder goes with its last model");
        char owner[LIBRARY_PATH_MAX + 16];
        snprintf(owner, sizeof owner, "%s%cTest", models, plat_path_separator());
        plat_file_info_of(owner, &info);
        CHECK(!info.exists, "and the owner's");
        plat_file_info_of(models, &info);
        CHECK(info.exists, "the models folder stays");
    }
    library_entries_free(e, n);

    /* a manifest that names a file outside its folder is not read */
    CHECK(library_repo_dir(models, &name, true, repo_dir, sizeof repo_dir, &err) == BRASA_OK, "the repo's folder");
    char evil_path[LIBRARY_PATH_MAX + 32];
    snprintf(evil_path, sizeof evil_path, "%s%cevil.gguf.manifest", repo_dir, plat_path_separator());
    static const char evil[] = "{\"brasa_manifest\": 1, \"owner\": \"Test\", \"repo\": \"Tiny-GGUF\", \"quant\": \"Q4_0\","
                               " \"commit\": \"\", \"default\": true, \"files\": [{\"path\": \"../../../x.gguf\","
                               " \"size\": 1, \"sha256\": \"\"}]}";
    FILE *f = plat_fopen(evil_path, "wb");
    CHECK(f && fwrite(evil, 1, sizeof evil - 1, f) == sizeof evil - 1 && fclose(f) == 0, "write %s", evil_path);
    CHECK(library_scan(models, NULL, &e, &n, &err) == BRASA_OK && n == 0, "the escaping manifest is skipped (%zu)", n);
    library_entries_free(e, n);
    plat_remove_file(evil_path);
    library_tidy_repo_dir(repo_dir);
    library_listing_free(&l);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_library_store SCRATCH_DIR\n");
        return 2;
    }
    test_names();
    test_listing();
    test_store(argv[1]);
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("library: names, listings, picking, manifests and removal: ok\n");
    return 0;
}
