/* simt.cpp: the fiber executor behind simt.h. Each thread of a block is a ucontext fiber; the
 * scheduler runs every runnable fiber until it blocks at a barrier or ends, then releases a block
 * barrier when all of the block waits there and a warp barrier when all of that warp does. */
#include "simt.h"

#include <cstdio>
#include <cstdlib>
#include <vector>
#include <ucontext.h>

namespace simt {
namespace {

enum fiber_state { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };

struct fiber {
    ucontext_t ctx;
    fiber_state state;
    std::vector<unsigned char> stack;
};

/* Kernels run on one OS thread, one block at a time: the executor's state is this one record. */
struct executor {
    int warp = 32;
    dim3 grid, block, block_id;
    std::vector<fiber> fibers;
    std::vector<uint64_t> lanes; /* exchange slots, one per thread of the block */
    std::vector<unsigned char> shared;
    const std::function<void()> *body = nullptr;
    ucontext_t scheduler;
    unsigned current = 0;
    bool running = false;
};

executor ex;
constexpr size_t FIBER_STACK = 256 * 1024;

[[noreturn]] void fail(const char *what) {
    std::fprintf(stderr, "simt: %s (block %u, thread %u)\n", what, ex.block_id.x, ex.current);
    std::abort();
}

void fiber_main() {
    (*ex.body)();
    ex.fibers[ex.current].state = DONE; /* uc_link returns to the scheduler */
}

void wait_at(fiber_state barrier) {
    if (!ex.running)
        fail("barrier outside a kernel");
    fiber &f = ex.fibers[ex.current];
    f.state = barrier;
    swapcontext(&f.ctx, &ex.scheduler);
}

/* Releases whatever barriers are complete; false when no fiber can run and some have not ended. */
bool release_barriers() {
    const unsigned n = ex.block.x, w = (unsigned)ex.warp;
    bool any_block = false, all_block = true, all_done = true;
    for (unsigned i = 0; i < n; i++) {
        const fiber_state s = ex.fibers[i].state;
        any_block |= s == AT_BLOCK_BARRIER;
        all_block &= s == AT_BLOCK_BARRIER;
        all_done &= s == DONE;
    }
    if (all_done)
        return true;
    if (all_block) {
        for (unsigned i = 0; i < n; i++)
            ex.fibers[i].state = RUNNABLE;
        return true;
    }
    bool progress = false;
    for (unsigned w0 = 0; w0 < n; w0 += w) {
        bool all_warp = true, any_warp = false;
        for (unsigned i = w0; i < w0 + w; i++) {
            all_warp &= ex.fibers[i].state == AT_WARP_BARRIER;
            any_warp |= ex.fibers[i].state == AT_WARP_BARRIER;
        }
        if (all_warp) {
            for (unsigned i = w0; i < w0 + w; i++)
                ex.fibers[i].state = RUNNABLE;
            progress = true;
        } else if (any_warp) {
            for (unsigned i = w0; i < w0 + w; i++)
                if (ex.fibers[i].state == DONE)
                    fail("a warp shuffle that some lanes of the warp never reach (they returned)");
        }
    }
    if (!progress && any_block)
        fail("__syncthreads that some threads of the block never reach");
    return progress;
}

void run_block() {
    const unsigned n = ex.block.x;
    for (unsigned i = 0; i < n; i++) {
        fiber &f = ex.fibers[i];
        if (f.stack.empty())
            f.stack.resize(FIBER_STACK);
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack.data();
        f.ctx.uc_stack.ss_size = f.stack.size();
        f.ctx.uc_link = &ex.scheduler;
        makecontext(&f.ctx, fiber_main, 0);
        f.state = RUNNABLE;
    }
    for (;;) {
        bool ran = false;
        for (unsigned i = 0; i < n; i++) {
            if (ex.fibers[i].state != RUNNABLE)
                continue;
            ex.current = i;
            swapcontext(&ex.scheduler, &ex.fibers[i].ctx);
            ran = true;
        }
        bool all_done = true;
        for (unsigned i = 0; i < n; i++)
            all_done &= ex.fibers[i].state == DONE;
        if (all_done)
            return;
        if (!release_barriers() && !ran)
            fail("no thread can run");
    }
}

} // namespace

void set_warp_size(int width) {
    if (width != 32 && width != 64)
        fail("warp width must be 32 or 64");
    ex.warp = width;
}

int warp_size() { return ex.warp; }

void launch(dim3 grid, dim3 block, size_t dynamic_shared_bytes, const std::function<void()> &body) {
    if (ex.running)
        fail("a launch from inside a kernel");
    if (block.x == 0 || block.x > 1024 || block.x % (unsigned)ex.warp != 0 || block.y != 1 || block.z != 1 || grid.y != 1 ||
        grid.z != 1)
        fail("blocks must be 1-D whole warps of at most 1024 threads, grids 1-D");
    ex.grid = grid;
    ex.block = block;
    ex.body = &body;
    if (ex.fibers.size() < block.x)
        ex.fibers.resize(block.x);
    ex.lanes.assign(block.x, 0);
    ex.shared.assign(dynamic_shared_bytes + 16, 0);
    ex.running = true;
    for (unsigned b = 0; b < grid.x; b++) {
        ex.block_id = dim3(b);
        run_block();
    }
    ex.running = false;
}

dim3 thread_idx() { return dim3(ex.current); }
dim3 block_idx() { return ex.block_id; }
dim3 block_dim() { return ex.block; }
dim3 grid_dim() { return ex.grid; }
void *dynamic_shared() { return ex.shared.data(); }

void sync_block() { wait_at(AT_BLOCK_BARRIER); }

uint64_t exchange(uint64_t value, int src_lane) {
    const unsigned me = ex.current, w = (unsigned)ex.warp;
    if (src_lane < 0 || src_lane >= ex.warp)
        fail("shuffle from a lane outside the warp");
    ex.lanes[me] = value;
    wait_at(AT_WARP_BARRIER); /* every lane has put its value in */
    const uint64_t got = ex.lanes[me / w * w + (unsigned)src_lane];
    wait_at(AT_WARP_BARRIER); /* every lane has read before any slot is reused */
    return got;
}

} // namespace simt
