/* gpu_runtime_cuda.c: gpu_runtime.h on the CUDA runtime (linked statically into brasa-cuda, so
 * the module needs only the NVIDIA driver on the machine). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend/gpu/gpu_runtime.h"

const char *gr_vendor(void) { return "cuda"; }

int gr_device_count(char *why, size_t why_size) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
        snprintf(why, why_size, "no device");
        return -1;
    }
    if (e == cudaErrorInsufficientDriver) {
        int have = 0;
        cudaDriverGetVersion(&have);
        snprintf(why, why_size, have ? "driver too old (it supports CUDA %d.%d; this module needs %d.%d)" : "no NVIDIA driver",
                 have / 1000, have % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        return -1;
    }
    if (e != cudaSuccess) {
        snprintf(why, why_size, "%s", cudaGetErrorString(e));
        return -1;
    }
    return n;
}

int gr_device_info(int index, bk_gpu_info *info) {
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, index);
    if (e != cudaSuccess)
        return (int)e;
    snprintf(info->name, sizeof info->name, "%.255s", p.name);
    snprintf(info->arch, sizeof info->arch, "sm_%d%d", p.major, p.minor);
    info->warp = p.warpSize;
    info->unified = p.integrated != 0;
    info->total_bytes = p.totalGlobalMem;
    cudaDriverGetVersion(&info->driver_version);
    size_t free_b = 0, total_b = 0;
    int cur = 0;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == index && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        info->free_bytes = free_b;
    return 0;
}

int gr_set_device(int index) { return (int)cudaSetDevice(index); }

int gr_stream_create(void **stream) {
    cudaStream_t s = NULL;
    const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    *stream = s;
    return (int)e;
}

int gr_stream_destroy(void *stream) { return stream ? (int)cudaStreamDestroy((cudaStream_t)stream) : 0; }
int gr_malloc(void **p, size_t bytes) { return (int)cudaMalloc(p, bytes); }
int gr_free(void *p) { return p ? (int)cudaFree(p) : 0; }
int gr_memory(size_t *free_bytes, size_t *total_bytes) { return (int)cudaMemGetInfo(free_bytes, total_bytes); }

int gr_copy_to_device(void *dst, const void *src, size_t bytes, void *stream) {
    return (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream);
}

int gr_copy_to_host(void *dst, const void *src, size_t bytes, void *stream) {
    const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream);
    return e != cudaSuccess ? (int)e : (int)cudaStreamSynchronize((cudaStream_t)stream);
}

int gr_copy_on_device(void *dst, const void *src, size_t bytes, void *stream) {
    return (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
}

int gr_memset(void *dst, int value, size_t bytes, void *stream) {
    return (int)cudaMemsetAsync(dst, value, bytes, (cudaStream_t)stream);
}

int gr_host_register(const void *host, size_t bytes, void **dev_ptr) {
    void *p = (void *)(uintptr_t)host; /* the runtime takes a non-const pointer; read-only is the flag */
    cudaError_t rc = cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterReadOnly);
    if (rc == cudaSuccess) {
        rc = cudaHostGetDevicePointer(dev_ptr, p, 0);
        if (rc != cudaSuccess)
            cudaHostUnregister(p);
    }
    return (int)rc;
}

int gr_host_unregister(const void *host) { return (int)cudaHostUnregister((void *)(uintptr_t)host); }

int gr_sync(void *stream) { return (int)cudaStreamSynchronize((cudaStream_t)stream); }
int gr_last_error(void) { return (int)cudaGetLastError(); }
const char *gr_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }
