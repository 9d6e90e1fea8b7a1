/* The per-user cache directory comes from the documented variables, in order, and is created with its
 * parents (names with accents included); atomic writes replace a file whole, leave no temporary file
 * behind, and on failure leave the target as it was. Runs natively and, for Windows, under wine. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"
#include "../test_env.h"

#ifdef _WIN32
#include <wchar.h>
#include <windows.h>
#define SEP "\\"
#else
#include <unistd.h>
#define SEP "/"
#endif

static int failures;
#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                  \
            fputc('\n', stderr);                           \
            failures++;                                    \
        }                                                  \
    } while (0)

/* Sets (value != NULL) or clears an environment variable; UTF-8 in, wide on Windows. */
static char *read_all(const char *path) {
    FILE *f = plat_fopen(path, "rb");
    if (!f)
        return NULL;
    static char text[256];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

static void check_cache_dir(const char *root) {
    char dir[1024], want[1024];
    /* BRASA_CACHE_DIR first, made with every missing parent, even with accents in its name */
    snprintf(want, sizeof want, "%s" SEP "caché ñandú" SEP "deeper", root);
    set_env("BRASA_CACHE_DIR", want);
    CHECK(plat_cache_dir(dir, sizeof dir), "BRASA_CACHE_DIR=%s not made", want);
    CHECK(strcmp(dir, want) == 0, "cache dir %s, wanted %s", dir, want);
    char file[1100];
    snprintf(file, sizeof file, "%s" SEP "probe.txt", dir);
    brasa_error err;
    CHECK(plat_write_file_atomic(file, "x", 1, &err) == BRASA_OK, "cannot write in %s", dir);
    set_env("BRASA_CACHE_DIR", NULL);
#ifdef _WIN32
    snprintf(want, sizeof want, "%s" SEP "local", root);
    set_env("LOCALAPPDATA", want);
    snprintf(want, sizeof want, "%s" SEP "local" SEP "brasa", root);
    CHECK(plat_cache_dir(dir, sizeof dir) && strcmp(dir, want) == 0, "LOCALAPPDATA: got %s, wanted %s", dir, want);
#else
    snprintf(want, sizeof want, "%s/xdg", root);
    set_env("XDG_CACHE_HOME", want);
    snprintf(want, sizeof want, "%s/xdg/brasa", root);
    CHECK(plat_cache_dir(dir, sizeof dir) && strcmp(dir, want) == 0, "XDG_CACHE_HOME: got %s, wanted %s", dir, want);
    set_env("XDG_CACHE_HOME", "relative/path"); /* the XDG spec: ignored */
    snprintf(want, sizeof want, "%s/home", root);
    set_env("HOME", want);
    snprintf(want, sizeof want, "%s/home/.cache/brasa", root);
    CHECK(plat_cache_dir(dir, sizeof dir) && strcmp(dir, want) == 0, "HOME: got %s, wanted %s", dir, want);
    /* a file where the folder should be: no cache directory, and no crash */
    snprintf(want, sizeof want, "%s/blocked", root);
    CHECK(plat_write_file_atomic(want, "x", 1, &err) == BRASA_OK, "cannot write %s", want);
    set_env("BRASA_CACHE_DIR", want);
    CHECK(!plat_cache_dir(dir, sizeof dir), "a file was taken for the cache directory");
    set_env("BRASA_CACHE_DIR", NULL);
#endif
}

static void check_atomic_write(const char *root) {
    char path[1024], tmp[1100];
    brasa_error err;
    snprintf(path, sizeof path, "%s" SEP "tuning.txt", root);
    CHECK(plat_write_file_atomic(path, "old content\n", 12, &err) == BRASA_OK, "first write: %s", err.message);
    CHECK(plat_write_file_atomic(path, "new\n", 4, &err) == BRASA_OK, "second write: %s", err.message);
    const char *got = read_all(path);
    CHECK(got && strcmp(got, "new\n") == 0, "after two writes the file holds '%s'", got ? got : "(nothing)");
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, plat_pid());
    CHECK(plat_fopen(tmp, "rb") == NULL, "the temporary file %s was left behind", tmp);
    /* a write that cannot finish (the target is a folder) fails with a message and changes nothing */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s" SEP "a folder", root);
    set_env("BRASA_CACHE_DIR", dir);
    char made[1024];
    CHECK(plat_cache_dir(made, sizeof made), "cannot make %s", dir);
    set_env("BRASA_CACHE_DIR", NULL);
    err.message[0] = '\0';
    CHECK(plat_write_file_atomic(dir, "x", 1, &err) != BRASA_OK && err.message[0], "writing over a folder passed");
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dir, plat_pid());
    CHECK(plat_fopen(tmp, "rb") == NULL, "a failed write left %s behind", tmp);
    snprintf(path, sizeof path, "%s" SEP "no such folder" SEP "f.txt", root);
    CHECK(plat_write_file_atomic(path, "x", 1, &err) != BRASA_OK, "writing into a missing folder passed");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR (a folder the test may fill)\n", argv[0]);
        return 2;
    }
    char root[900];
    snprintf(root, sizeof root, "%s" SEP "cache-test-%ld", argv[1], plat_pid());
    set_env("BRASA_CACHE_DIR", root);
    char made[1024];
    if (!plat_cache_dir(made, sizeof made)) {
        fprintf(stderr, "cannot make the scratch folder %s\n", root);
        return 1;
    }
    check_cache_dir(root);
    check_atomic_write(root);
    if (failures)
        return 1;
    printf("cache directory and atomic writes: ok\n");
    return 0;
}
