/* gpu_module.h: the contract between brasa and a GPU backend module (brasa-cuda, brasa-hip),
 * which the program loads at run time so that it starts on machines with no GPU runtime at all.
 *
 * A module exports one C function, brasa_gpu_module_v1, returning a table of its entry points.
 * The program checks the table's abi number before using anything else in it; a module built for
 * another brasa is refused with that reason rather than called.
 */
#ifndef BRASA_GPU_MODULE_H
#define BRASA_GPU_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

#define BK_GPU_MODULE_ABI 3
#define BK_GPU_MODULE_ENTRY "brasa_gpu_module_v1"

#if defined(_WIN32)
#define BK_GPU_MODULE_EXPORT __declspec(dllexport)
#else
#define BK_GPU_MODULE_EXPORT __attribute__((visibility("default")))
#endif

/* What a device is, as its runtime reports it. */
typedef struct bk_gpu_info {
    char name[256];          /* "AMD Radeon RX 6800 XT", "NVIDIA H200" */
    char arch[32];           /* "gfx1030", "sm_90" */
    int warp;                /* lanes per warp (wavefront) */
    int unified;             /* 1: integrated, sharing the host's memory (Strix Halo, GB10) */
    int driver_version;      /* the runtime's number for its driver (CUDA: 13000; HIP: its build) */
    uint64_t total_bytes;    /* device memory */
    uint64_t free_bytes;     /* free when asked */
} bk_gpu_info;

typedef struct bk_gpu_module {
    int abi;          /* BK_GPU_MODULE_ABI */
    const char *name;    /* "cuda", "hip" */
    const char *targets; /* the architectures it holds kernels for: "sm_80 sm_90", "gfx1030 gfx90a" */
    /* Devices present, or -1 with the reason in why (no driver, driver too old, no device). */
    int (*device_count)(char *why, size_t why_size);
    brasa_status (*device_info)(int index, bk_gpu_info *info, brasa_error *err);
    /* A device whose ops run there; weights marked constant are copied to it at first use. Fails
     * with the reason when the module holds no kernels for the device's architecture. */
    brasa_status (*device_create)(int index, bk_device **out, brasa_error *err);
    void (*device_free)(bk_device *dev); /* accepts NULL */

    /* Kernel tuning. A product (matmul) has variants per kind (0: decode, up to 15 tokens; 1:
     * prefill), all computing the same sums (gpu_kernels.h); a device uses, per weight shape and
     * kind, the variant set here, else the one a rule picks from the shape. */
    int (*variants)(int kind);
    const char *(*variant_name)(int kind, int variant);
    int (*variant_of)(bk_device *dev, int kind, uint32_t type, int64_t n_out, int64_t n_in);
    brasa_status (*set_variant)(bk_device *dev, int kind, uint32_t type, int64_t n_out, int64_t n_in, int variant,
                                brasa_error *err);
    /* Seconds one product of weights w (a constant host tensor) with n_tok tokens takes in variant
     * `variant` of its kind: the mean of reps runs after a warm-up. BRASA_ERR_UNSUPPORTED for a
     * variant without a kernel for w's type (int8 tiles of float weights). */
    brasa_status (*time_variant)(bk_device *dev, const bk_tensor *w, int64_t n_tok, int variant, int reps, double *seconds,
                                 brasa_error *err);
} bk_gpu_module;

typedef const bk_gpu_module *(*bk_gpu_module_entry)(void);

#endif
