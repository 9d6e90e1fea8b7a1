/* kernel_env_gpu.c: the kernel test's environment on a real GPU, device 0 of the CUDA runtime or
 * (with BRASA_KERNEL_ENV_HIP) of HIP: managed memory for the buffers, the device's own warp width. */
#include <stdio.h>

#include "kernel_env.h"

#ifdef BRASA_KERNEL_ENV_HIP
#include <hip/hip_runtime_api.h>
#define KE(x) hip##x
typedef hipDeviceProp_t ke_props;
#define KE_SUCCESS hipSuccess
#define KE_MEM_ATTACH hipMemAttachGlobal
#else
#include <cuda_runtime_api.h>
#define KE(x) cuda##x
typedef struct cudaDeviceProp ke_props;
#define KE_SUCCESS cudaSuccess
#define KE_MEM_ATTACH cudaMemAttachGlobal
#endif

static ke_props props;
static char name[320];

int ke_open(char *why, size_t why_size) {
    int n = 0;
    const int rc = (int)KE(GetDeviceCount)(&n);
    if (rc != KE_SUCCESS || n == 0) {
        snprintf(why, why_size, "no device (%s)", rc != KE_SUCCESS ? KE(GetErrorString)(rc) : "none present");
        return -1;
    }
    if (KE(GetDeviceProperties)(&props, 0) != KE_SUCCESS || KE(SetDevice)(0) != KE_SUCCESS) {
        snprintf(why, why_size, "device 0 does not open");
        return -1;
    }
#ifdef BRASA_KERNEL_ENV_HIP
    snprintf(name, sizeof name, "%s (%s)", props.name, props.gcnArchName);
#else
    snprintf(name, sizeof name, "%s (sm_%d%d)", props.name, props.major, props.minor);
#endif
    return 0;
}

int ke_warps(int widths[2]) {
    widths[0] = props.warpSize;
    return 1;
}

void ke_use_warp(int width) { (void)width; }
const char *ke_name(void) { return name; }

void *ke_alloc(size_t bytes) {
    void *p = NULL;
    return KE(MallocManaged)(&p, bytes ? bytes : 1, KE_MEM_ATTACH) == KE_SUCCESS ? p : NULL;
}

void ke_free(void *p) { KE(Free)(p); }
int ke_sync(void) { return (int)KE(DeviceSynchronize)(); }
void *ke_stream(void) { return NULL; }
