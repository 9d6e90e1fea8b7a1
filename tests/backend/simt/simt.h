/* simt.h: runs brasa's GPU kernel source on the CPU, one fiber per GPU thread, for tests only.
 *
 * A machine without a GPU can still check what the kernels compute: gpu_port.h maps the kernel
 * dialect (threadIdx, __syncthreads, warp shuffles, __shared__) onto this executor when the .cu
 * file is compiled as plain C++ with BK_GPU_SIMT. Blocks run one after another; the threads of a
 * block are fibers that switch only at barriers and shuffles, so shared memory is a function's
 * static array. The warp width is a parameter (32 or 64), which is how the tests show that no
 * kernel assumes one. Nothing here says anything about speed, and none of it ships in brasa.
 */
#ifndef BRASA_SIMT_H
#define BRASA_SIMT_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace simt {

/* The warp width kernels see as warpSize; launches check that blocks are whole warps. */
void set_warp_size(int width);
int warp_size();

/* Runs body once per thread of every block of grid (x only, as brasa's kernels use; none asks
 * for dynamic shared memory, so a launch that does is refused). Aborts with
 * a message on a barrier some threads of a block or warp never reach: that is a kernel bug. */
void launch(dim3 grid, dim3 block, size_t dynamic_shared_bytes, const std::function<void()> &body);

extern unsigned current_thread; /* the running thread's index in its block */
inline dim3 thread_idx() { return dim3(current_thread); }
dim3 block_idx();
dim3 block_dim();
dim3 grid_dim();

void sync_block(); /* __syncthreads */
/* The shuffle primitive: every lane of the calling warp puts in a 64-bit value and reads lane
 * src's. A warp barrier before and after, as on a GPU where the lanes run in lockstep. */
uint64_t exchange(uint64_t value, int src_lane);

template <typename T> T shfl(T v, int src_lane) {
    static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
    uint64_t u = 0;
    std::memcpy(&u, &v, sizeof v);
    u = exchange(u, src_lane);
    std::memcpy(&v, &u, sizeof v);
    return v;
}

template <typename T> T shfl_xor(T v, int lane_mask) {
    return shfl(v, (int)(current_thread % (unsigned)warp_size()) ^ lane_mask);
}

} // namespace simt

#endif
