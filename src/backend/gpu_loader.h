/* gpu_loader.h: finds and opens the GPU backend modules (brasa-cuda, brasa-hip) at run time, so
 * that brasa starts and works on a machine with no GPU runtime, and can say why a backend did not
 * load: not built, its runtime library missing, no device, driver too old, no kernels for the
 * device's architecture. */
#ifndef BRASA_GPU_LOADER_H
#define BRASA_GPU_LOADER_H

#include <stddef.h>

#include "backend/gpu/gpu_module.h"

typedef struct bk_gpu_backend bk_gpu_backend;

/* The backends brasa ships, in the order `auto` tries them. */
#define BK_GPU_BACKENDS 2
extern const char *const bk_gpu_backend_names[BK_GPU_BACKENDS];

/* Opens backend `name` ("cuda", "hip"; tests build "simt"): the file brasa-<name>.so (.dll) from
 * the directory in $BRASA_MODULE_DIR when set, else beside the program, else the installed module
 * directory. NULL with the reason in why when there is none or it cannot be used. A module stays
 * loaded once opened (there is no close); call from one thread at a time. */
bk_gpu_backend *bk_gpu_open(const char *name, char *why, size_t why_size);
const bk_gpu_module *bk_gpu_module_of(const bk_gpu_backend *b);
const char *bk_gpu_path(const bk_gpu_backend *b); /* the module file it came from */

#endif
