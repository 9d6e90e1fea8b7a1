/* replay_main: runs a fuzz target's LLVMFuzzerTestOneInput on every file given, or on every file in
 * the directories given (not recursively), so that any compiler, without libFuzzer, replays the
 * seed corpus and the regression inputs as an ordinary test. A crash or a broken invariant ends
 * the program abnormally; the name of the input is printed first. A directory that does not exist
 * has nothing to replay (git keeps no empty directories).
 *   fuzz_replay_TARGET PATH...  */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L /* opendir and S_ISDIR under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(_WIN32)
#include <windows.h>
#ifndef S_ISDIR
#define S_ISDIR(m) (((m) & _S_IFMT) == _S_IFDIR)
#endif
#else
#include <dirent.h>
#endif

#include "fuzz.h"

/* Reads a whole file into a buffer of exactly its size (so an overrun is one past the input, as
 * under libFuzzer) and runs the target on it. Returns false when the file cannot be read. */
static bool replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    uint8_t *data = size >= 0 ? malloc(size ? (size_t)size : 1) : NULL;
    bool ok = data && fseek(f, 0, SEEK_SET) == 0 && fread(data, 1, (size_t)size, f) == (size_t)size;
    if (f)
        fclose(f);
    if (!ok) {
        fprintf(stderr, "cannot read %s\n", path);
        free(data);
        return false;
    }
    fprintf(stderr, "%s (%ld bytes)\n", path, size);
    LLVMFuzzerTestOneInput(data, (size_t)size);
    free(data);
    return true;
}

static bool is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Replays each file of a directory; counts them in *n. */
static bool replay_directory(const char *dir, size_t *n) {
    char path[4096];
#if defined(_WIN32)
    WIN32_FIND_DATAA e;
    snprintf(path, sizeof path, "%s\\*", dir);
    HANDLE h = FindFirstFileA(path, &e);
    if (h == INVALID_HANDLE_VALUE)
        return true;
    bool ok = true;
    do {
        if (e.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e.cFileName);
        ok = replay_file(path) && ok;
        (*n)++;
    } while (FindNextFileA(h, &e));
    FindClose(h);
    return ok;
#else
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool ok = true;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (is_directory(path))
            continue;
        ok = replay_file(path) && ok;
        (*n)++;
    }
    closedir(d);
    return ok;
#endif
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    bool ok = true;
    size_t n = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: not there, nothing to replay\n", argv[i]);
        } else if (is_directory(argv[i])) {
            ok = replay_directory(argv[i], &n) && ok;
        } else {
            ok = replay_file(argv[i]) && ok;
            n++;
        }
    }
    fprintf(stderr, "replayed %zu inputs\n", n);
    return ok ? 0 : 1;
}
