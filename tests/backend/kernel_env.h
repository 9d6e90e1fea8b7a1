/* kernel_env.h: where test_gpu_kernels runs the kernels: on the fiber executor (kernel_env_simt.cpp,
 * both warp widths, no GPU) or on a real GPU (kernel_env_gpu.c, built with the CUDA or HIP module,
 * its device's width). Buffers the kernels read and write come from ke_alloc, memory both the host
 * and the device reach (managed memory on a GPU), so the test fills and checks them in place after
 * ke_sync. */
#ifndef BRASA_TESTS_BACKEND_KERNEL_ENV_H
#define BRASA_TESTS_BACKEND_KERNEL_ENV_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the device; 0, or -1 with the reason in why (no device: the test is skipped). */
int ke_open(char *why, size_t why_size);
/* The warp widths to run the kernels with (at most 2): widths[i]; returns how many. */
int ke_warps(int widths[2]);
/* Makes later launches run with this width (the executor's choice; a GPU has one). */
void ke_use_warp(int width);
/* What runs them, for the report: "fiber executor", "NVIDIA H100 (sm_90)". */
const char *ke_name(void);
void *ke_alloc(size_t bytes); /* NULL when out of memory */
void ke_free(void *p);
/* Waits for the launches so far; 0, or the runtime's error code (a kernel that failed). */
int ke_sync(void);
/* The stream launches go to (NULL: the default one). */
void *ke_stream(void);

#ifdef __cplusplus
}
#endif

#endif
