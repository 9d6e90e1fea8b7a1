/* gpu_loader.c: the module search and its checks (gpu_loader.h). A module, once loaded, stays
 * loaded for the life of the process and later opens return it again: GPU runtimes register exit
 * handlers inside the module, which must not be unmapped under them. This table is brasa's
 * backend registry, the one piece of process-wide state the library keeps. */
#include "backend/gpu_loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

#ifndef BRASA_MODULE_INSTALL_DIR
#define BRASA_MODULE_INSTALL_DIR ""
#endif

const char *const bk_gpu_backend_names[BK_GPU_BACKENDS] = { "cuda", "hip" };

struct bk_gpu_backend {
    char name[17];
    plat_lib *lib;
    const bk_gpu_module *module;
    char path[4096];
};

#define LOADED_MAX 8
static bk_gpu_backend *loaded[LOADED_MAX];

static bool file_exists(const char *path) {
    FILE *f = plat_fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

/* The first directory of the search that holds the module's file; false when none does. */
static bool find_module(const char *file, char *path, size_t size) {
    char dirs[3][4096] = { "", "", "" };
    const char *env = getenv("BRASA_MODULE_DIR");
    if (env && *env)
        snprintf(dirs[0], sizeof dirs[0], "%s", env);
    else if (!plat_exe_dir(dirs[1], sizeof dirs[1]))
        dirs[1][0] = '\0';
    if (!(env && *env))
        snprintf(dirs[2], sizeof dirs[2], "%s", BRASA_MODULE_INSTALL_DIR);
    for (int i = 0; i < 3; i++) {
        if (!dirs[i][0])
            continue;
        const int n = snprintf(path, size, "%s/%s", dirs[i], file);
        if (n > 0 && (size_t)n < size && file_exists(path))
            return true;
    }
    return false;
}

bk_gpu_backend *bk_gpu_open(const char *name, char *why, size_t why_size) {
    char file[64], path[4096];
    if (!name || strlen(name) > 16 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(name)) {
        snprintf(why, why_size, "not a backend name");
        return NULL;
    }
    for (int i = 0; i < LOADED_MAX && loaded[i]; i++)
        if (strcmp(loaded[i]->name, name) == 0)
            return loaded[i];
    snprintf(file, sizeof file, "brasa-%s%s", name, plat_module_suffix());
    if (!find_module(file, path, sizeof path)) {
        snprintf(why, why_size, "not in this build (no %s beside brasa%s)", file,
                 getenv("BRASA_MODULE_DIR") ? " or in $BRASA_MODULE_DIR" : "");
        return NULL;
    }
    char reason[1024] = "";
    plat_lib *lib = plat_lib_open(path, reason, sizeof reason);
    if (!lib) {
        /* almost always the vendor runtime the module links (libamdhip64, the CUDA driver) */
        snprintf(why, why_size, "%s does not load: %s", file, reason);
        return NULL;
    }
    bk_gpu_module_entry entry = (bk_gpu_module_entry)plat_lib_symbol(lib, BK_GPU_MODULE_ENTRY);
    const bk_gpu_module *m = entry ? entry() : NULL;
    if (!m || m->abi != BK_GPU_MODULE_ABI) {
        snprintf(why, why_size, "%s is not a module of this brasa (interface %d, this brasa speaks %d)", file, m ? m->abi : 0,
                 BK_GPU_MODULE_ABI);
        plat_lib_close(lib);
        return NULL;
    }
    int slot = 0;
    while (slot < LOADED_MAX && loaded[slot])
        slot++;
    bk_gpu_backend *b = slot < LOADED_MAX ? calloc(1, sizeof *b) : NULL;
    if (!b) {
        snprintf(why, why_size, "out of memory");
        plat_lib_close(lib);
        return NULL;
    }
    b->lib = lib;
    b->module = m;
    snprintf(b->path, sizeof b->path, "%s", path);
    snprintf(b->name, sizeof b->name, "%s", name);
    loaded[slot] = b;
    return b;
}

const bk_gpu_module *bk_gpu_module_of(const bk_gpu_backend *b) { return b->module; }
const char *bk_gpu_path(const bk_gpu_backend *b) { return b->path; }
