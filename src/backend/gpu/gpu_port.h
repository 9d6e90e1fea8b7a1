/* gpu_port.h: the one dialect brasa's GPU kernels are written in, mapped onto CUDA (nvcc), HIP
 * (hipcc / clang, compiled natively for the AMD GPU) or the tests' CPU executor (BK_GPU_SIMT).
 *
 * Kernels use CUDA's spelling for what both vendors share (threadIdx, __shared__, __syncthreads)
 * and the gp_ names below for what differs: warp shuffles (CUDA needs a lane mask, HIP does not),
 * half-float conversions and kernel launches. warpSize is read at run time: 32 on NVIDIA and RDNA,
 * 64 on CDNA, so nothing may assume a width; GP_WARP_MIN sizes per-warp arrays.
 */
#ifndef BRASA_GPU_PORT_H
#define BRASA_GPU_PORT_H

#include <stddef.h>
#include <stdint.h>

#define GP_WARP_MIN 32
#define GP_WARP_MAX 64

#if defined(BK_GPU_SIMT)
#include "simt.h"
extern "C" {
#include "core/f16.h"
}

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static /* one block runs at a time, its threads share the function's statics */
#define threadIdx (simt::thread_idx())
#define blockIdx (simt::block_idx())
#define blockDim (simt::block_dim())
#define gridDim (simt::grid_dim())
#define warpSize (simt::warp_size())
#define __syncthreads() simt::sync_block()
typedef void *gp_stream;
#define GP_LAUNCH(kernel, grid, block, shmem, stream, ...)                                                         \
    ((void)(stream), simt::launch((grid), (block), (shmem), [&]() { kernel(__VA_ARGS__); }))
template <typename T> static inline T gp_shfl(T v, int lane) { return simt::shfl(v, lane); }
template <typename T> static inline T gp_shfl_xor(T v, int mask) { return simt::shfl_xor(v, mask); }
static inline float gp_half_to_float(uint16_t h) { return f16_to_f32(h); }
static inline uint16_t gp_float_to_half(float f) { return f32_to_f16(f); }
static inline float gp_bits_to_float(uint32_t u) { return f32_from_bits(u); }

#elif defined(__HIPCC__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

typedef hipStream_t gp_stream;
#define GP_LAUNCH(kernel, grid, block, shmem, stream, ...)                                                         \
    hipLaunchKernelGGL(kernel, (grid), (block), (shmem), (stream), __VA_ARGS__)
/* HIP's shuffles cover the whole wavefront (32 or 64 lanes) and take no mask */
template <typename T> static __device__ __forceinline__ T gp_shfl(T v, int lane) { return __shfl(v, lane); }
template <typename T> static __device__ __forceinline__ T gp_shfl_xor(T v, int mask) { return __shfl_xor(v, mask); }
static __device__ __forceinline__ float gp_half_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
static __device__ __forceinline__ uint16_t gp_float_to_half(float f) { return __half_as_ushort(__float2half_rn(f)); }
static __device__ __forceinline__ float gp_bits_to_float(uint32_t u) { return __uint_as_float(u); }

#elif defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

typedef cudaStream_t gp_stream;
#define GP_LAUNCH(kernel, grid, block, shmem, stream, ...) kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)
/* every lane of a warp takes part in every shuffle brasa's kernels make */
template <typename T> static __device__ __forceinline__ T gp_shfl(T v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }
template <typename T> static __device__ __forceinline__ T gp_shfl_xor(T v, int mask) {
    return __shfl_xor_sync(0xffffffffu, v, mask);
}
static __device__ __forceinline__ float gp_half_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
static __device__ __forceinline__ uint16_t gp_float_to_half(float f) { return __half_as_ushort(__float2half_rn(f)); }
static __device__ __forceinline__ float gp_bits_to_float(uint32_t u) { return __uint_as_float(u); }

#else
#error "gpu_port.h is for nvcc, hipcc or the BK_GPU_SIMT test build"
#endif

/* c + the sum of the products of the four signed bytes of a and of b: one instruction where the
 * chip has it (dp4a on NVIDIA since sm_61; sdot4 on CDNA and RDNA2, sudot4 on RDNA3/4). */
static __device__ __forceinline__ int gp_dot4(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
    return __dp4a(a, b, c);
#elif defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
    defined(__gfx942__) || defined(__gfx1030__) || defined(__gfx1031__) || defined(__gfx1032__) || defined(__gfx1034__) ||   \
    defined(__gfx1035__) || defined(__gfx1036__)
    return __builtin_amdgcn_sdot4(a, b, c, false);
#elif defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) || defined(__gfx1150__) || \
    defined(__gfx1151__) || defined(__gfx1152__) || defined(__gfx1200__) || defined(__gfx1201__)
    return __builtin_amdgcn_sudot4(true, a, true, b, c, false);
#else
    for (int i = 0; i < 32; i += 8)
        c += (int)(int8_t)(a >> i) * (int)(int8_t)(b >> i);
    return c;
#endif
}

/* Sum and maximum over the lanes of a warp; every lane gets the result. */
static __device__ __forceinline__ float gp_warp_sum(float v) {
    for (int m = warpSize / 2; m > 0; m >>= 1)
        v += gp_shfl_xor(v, m);
    return v;
}

/* Sum over groups of `width` neighbouring lanes (a power of two dividing the warp); every lane of
 * a group gets its group's sum. */
static __device__ __forceinline__ float gp_group_sum(float v, int width) {
    for (int m = width / 2; m > 0; m >>= 1)
        v += gp_shfl_xor(v, m);
    return v;
}

static __device__ __forceinline__ float gp_warp_max(float v) {
    for (int m = warpSize / 2; m > 0; m >>= 1) {
        const float o = gp_shfl_xor(v, m);
        v = o > v ? o : v;
    }
    return v;
}

#endif
