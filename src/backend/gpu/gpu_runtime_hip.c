/* gpu_runtime_hip.c: gpu_runtime.h on the HIP runtime of ROCm (libamdhip64), native on AMD GPUs. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <hip/hip_runtime_api.h>

#include "backend/gpu/gpu_runtime.h"

const char *gr_vendor(void) { return "hip"; }

int gr_device_count(char *why, size_t why_size) {
    int n = 0;
    const hipError_t e = hipGetDeviceCount(&n);
    if (e == hipErrorNoDevice || (e == hipSuccess && n == 0)) {
        snprintf(why, why_size, "no device (is the amdgpu driver loaded, and may this user open /dev/kfd?)");
        return -1;
    }
    if (e == hipErrorInsufficientDriver) {
        snprintf(why, why_size, "driver too old for this ROCm");
        return -1;
    }
    if (e != hipSuccess) {
        snprintf(why, why_size, "%s", hipGetErrorString(e));
        return -1;
    }
    return n;
}

int gr_device_info(int index, bk_gpu_info *info) {
    hipDeviceProp_t p;
    hipError_t e = hipGetDeviceProperties(&p, index);
    if (e != hipSuccess)
        return (int)e;
    snprintf(info->name, sizeof info->name, "%.255s", p.name);
    /* "gfx1030:sramecc-:xnack-": the target name is what comes before the first feature */
    snprintf(info->arch, sizeof info->arch, "%.31s", p.gcnArchName);
    char *colon = strchr(info->arch, ':');
    if (colon)
        *colon = '\0';
    info->warp = p.warpSize;
    info->unified = p.integrated != 0;
    info->total_bytes = p.totalGlobalMem;
    hipDriverGetVersion(&info->driver_version);
    size_t free_b = 0, total_b = 0;
    int cur = 0;
    if (hipGetDevice(&cur) == hipSuccess && cur == index && hipMemGetInfo(&free_b, &total_b) == hipSuccess)
        info->free_bytes = free_b;
    return 0;
}

int gr_set_device(int index) { return (int)hipSetDevice(index); }

int gr_stream_create(void **stream) {
    hipStream_t s = NULL;
    const hipError_t e = hipStreamCreateWithFlags(&s, hipStreamNonBlocking);
    *stream = s;
    return (int)e;
}

int gr_stream_destroy(void *stream) { return stream ? (int)hipStreamDestroy((hipStream_t)stream) : 0; }
int gr_malloc(void **p, size_t bytes) { return (int)hipMalloc(p, bytes); }
int gr_free(void *p) { return p ? (int)hipFree(p) : 0; }
int gr_memory(size_t *free_bytes, size_t *total_bytes) { return (int)hipMemGetInfo(free_bytes, total_bytes); }

int gr_copy_to_device(void *dst, const void *src, size_t bytes, void *stream) {
    return (int)hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, (hipStream_t)stream);
}

int gr_copy_to_host(void *dst, const void *src, size_t bytes, void *stream) {
    const hipError_t e = hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToHost, (hipStream_t)stream);
    return e != hipSuccess ? (int)e : (int)hipStreamSynchronize((hipStream_t)stream);
}

int gr_copy_on_device(void *dst, const void *src, size_t bytes, void *stream) {
    return (int)hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, (hipStream_t)stream);
}

int gr_memset(void *dst, int value, size_t bytes, void *stream) {
    return (int)hipMemsetAsync(dst, value, bytes, (hipStream_t)stream);
}

/* Newer ROCm maps read-only memory (a mapped model file) with this flag; without it registering
 * such memory fails and the weights are copied instead. */
#ifndef hipHostRegisterReadOnly
#define hipHostRegisterReadOnly 0
#endif

int gr_host_register(const void *host, size_t bytes, void **dev_ptr) {
    void *p = (void *)(uintptr_t)host; /* the runtime takes a non-const pointer; read-only is the flag */
    hipError_t rc = hipHostRegister(p, bytes, hipHostRegisterMapped | hipHostRegisterReadOnly);
    if (rc == hipSuccess) {
        rc = hipHostGetDevicePointer(dev_ptr, p, 0);
        if (rc != hipSuccess)
            hipHostUnregister(p);
    }
    return (int)rc;
}

int gr_host_unregister(const void *host) { return (int)hipHostUnregister((void *)(uintptr_t)host); }

int gr_sync(void *stream) { return (int)hipStreamSynchronize((hipStream_t)stream); }
int gr_last_error(void) { return (int)hipGetLastError(); }
const char *gr_error_string(int code) { return hipGetErrorString((hipError_t)code); }
