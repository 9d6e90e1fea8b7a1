/* simt.cpp: the fiber executor behind simt.h. Each thread of a block is a fiber. Lanes of a warp
 * hand over to one another directly: a lane that reaches a shuffle switches to the next lane of
 * its warp still running, and the last to arrive releases the warp and resumes its first lane, so
 * a warp runs its shuffles with one switch per lane. At a __syncthreads, or when its warp is done,
 * a lane returns to the scheduler, which releases the block barrier once every lane is there. */
#include "simt.h"

#include <cstdio>
#include <cstdlib>
#include <vector>
#include <ucontext.h>

/* Switching fibers. glibc's swapcontext saves and restores the signal mask with a system call on
 * every switch, and a model's forward pass makes hundreds of millions of them; on x86-64 a switch
 * is instead six register saves and a stack pointer swap, announced to AddressSanitizer (when it
 * is on) through its fiber interface so that it follows the stacks. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIMT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SIMT_ASAN 1
#endif
#ifdef SIMT_ASAN
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__) && !defined(__APPLE__)
#define SIMT_FAST_SWITCH 1
extern "C" void simt_switch(void **save_sp, void *new_sp);
asm(".text\n"
    ".globl simt_switch\n"
    ".hidden simt_switch\n"
    ".type simt_switch,@function\n"
    "simt_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size simt_switch, .-simt_switch\n");
#endif

namespace simt {

unsigned current_thread = 0;

namespace {

enum fiber_state { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };

struct context {
    ucontext_t uc;
    void *sp;                /* the saved stack pointer (fast switch) */
    const void *stack_base;  /* the stack's lowest address and size, for AddressSanitizer */
    size_t stack_size;
    void *fake_stack;        /* AddressSanitizer's state of the context while it is switched out */
};

struct fiber {
    context ctx;
    fiber_state state;
    std::vector<unsigned char> stack;
};

/* Kernels run on one OS thread, one block at a time: the executor's state is this one record. */
struct executor {
    int warp = 32;
    dim3 grid, block, block_id;
    std::vector<fiber> fibers;
    std::vector<uint64_t> lanes; /* exchange slots, one per thread of the block */
    const std::function<void()> *body = nullptr;
    context scheduler;
    bool running = false;
};

executor ex;
constexpr size_t FIBER_STACK = 256 * 1024;

[[noreturn]] void fail(const char *what) {
    std::fprintf(stderr, "simt: %s (block %u, thread %u)\n", what, ex.block_id.x, current_thread);
    std::abort();
}

/* exiting: the context `from` never runs again (a fiber whose body returned) */
void switch_context(context &from, context &to, bool exiting = false) {
#ifdef SIMT_ASAN
    __sanitizer_start_switch_fiber(exiting ? nullptr : &from.fake_stack, to.stack_base, to.stack_size);
#else
    (void)exiting;
#endif
#ifdef SIMT_FAST_SWITCH
    simt_switch(&from.sp, to.sp);
#else
    swapcontext(&from.uc, &to.uc);
#endif
#ifdef SIMT_ASAN
    __sanitizer_finish_switch_fiber(from.fake_stack, nullptr, nullptr);
#endif
}

/* Moves from the current lane to lane `to` of the block (or stays, when it is the same). */
void switch_to(unsigned to) {
    const unsigned from = current_thread;
    if (to == from)
        return;
    current_thread = to;
    switch_context(ex.fibers[from].ctx, ex.fibers[to].ctx);
}

/* The next lane after the current one in its warp that can run, or -1. */
int next_in_warp() {
    const unsigned w = (unsigned)ex.warp, w0 = current_thread / w * w;
    for (unsigned k = 1; k < w; k++) {
        const unsigned i = w0 + (current_thread - w0 + k) % w;
        if (ex.fibers[i].state == RUNNABLE)
            return (int)i;
    }
    return -1;
}

/* Whether another lane of the current lane's warp waits at a shuffle. */
bool warp_waits_at_shuffle() {
    const unsigned w = (unsigned)ex.warp, w0 = current_thread / w * w;
    for (unsigned i = w0; i < w0 + w; i++)
        if (ex.fibers[i].state == AT_WARP_BARRIER)
            return true;
    return false;
}

/* The current lane stops at a barrier: hands over to the next lane of its warp that can run and
 * returns true once resumed, or returns false at once when none can (the lane arrived last). */
bool arrive(fiber_state barrier) {
    ex.fibers[current_thread].state = barrier;
    const int next = next_in_warp();
    if (next < 0)
        return false;
    switch_to((unsigned)next);
    return true;
}

void fiber_main() {
#ifdef SIMT_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr); /* a fresh fiber has no state to restore */
#endif
    (*ex.body)();
    ex.fibers[current_thread].state = DONE;
    const int next = next_in_warp();
    if (next >= 0) {
        const unsigned from = current_thread;
        current_thread = (unsigned)next;
        switch_context(ex.fibers[from].ctx, ex.fibers[next].ctx, true); /* never comes back */
    }
    if (warp_waits_at_shuffle())
        fail("a warp shuffle that some lanes of the warp never reach (they returned)");
    fiber &me = ex.fibers[current_thread];
    switch_context(me.ctx, ex.scheduler, true); /* never comes back: the fiber is started afresh */
}

void start_fiber(fiber &f) {
    if (f.stack.empty())
        f.stack.resize(FIBER_STACK);
    f.ctx.stack_base = f.stack.data();
    f.ctx.stack_size = f.stack.size();
#ifdef SIMT_FAST_SWITCH
    /* a stack as simt_switch leaves it: six saved registers, then fiber_main as the return
     * address, entered as if called (the stack pointer 8 past a 16-byte boundary) */
    const uintptr_t top = ((uintptr_t)f.stack.data() + f.stack.size()) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = nullptr; /* fiber_main's own return address: never used */
    *--sp = (void *)&fiber_main;
    for (int i = 0; i < 6; i++)
        *--sp = nullptr;
    f.ctx.sp = sp;
#else
    getcontext(&f.ctx.uc);
    f.ctx.uc.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc.uc_stack.ss_size = f.stack.size();
    f.ctx.uc.uc_link = &ex.scheduler.uc;
    makecontext(&f.ctx.uc, fiber_main, 0);
#endif
    f.state = RUNNABLE;
}

void run_block() {
    const unsigned n = ex.block.x;
    for (unsigned i = 0; i < n; i++)
        start_fiber(ex.fibers[i]);
    for (;;) {
        /* each warp runs until all its lanes are done or at the block barrier */
        for (unsigned i = 0; i < n; i++) {
            if (ex.fibers[i].state != RUNNABLE)
                continue;
            current_thread = i;
            switch_context(ex.scheduler, ex.fibers[i].ctx);
        }
        unsigned done = 0, at_barrier = 0;
        for (unsigned i = 0; i < n; i++) {
            done += ex.fibers[i].state == DONE;
            at_barrier += ex.fibers[i].state == AT_BLOCK_BARRIER;
        }
        if (done == n)
            return;
        if (done + at_barrier != n)
            fail("no thread can run (a lane waits at a shuffle its warp left)");
        if (done > 0)
            fail("__syncthreads that some threads of the block never reach (they returned)");
        for (unsigned i = 0; i < n; i++)
            ex.fibers[i].state = RUNNABLE;
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
    if (dynamic_shared_bytes != 0)
        fail("dynamic shared memory (brasa's kernels declare theirs)");
#ifdef SIMT_ASAN
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *base = nullptr;
        size_t size = 0;
        pthread_attr_getstack(&attr, &base, &size);
        ex.scheduler.stack_base = base;
        ex.scheduler.stack_size = size;
        pthread_attr_destroy(&attr);
    }
#endif
    ex.running = true;
    for (unsigned b = 0; b < grid.x; b++) {
        ex.block_id = dim3(b);
        run_block();
    }
    ex.running = false;
}

dim3 block_idx() { return ex.block_id; }
dim3 block_dim() { return ex.block; }
dim3 grid_dim() { return ex.grid; }

void sync_block() {
    if (!ex.running)
        fail("__syncthreads outside a kernel");
    if (arrive(AT_BLOCK_BARRIER))
        return;
    if (warp_waits_at_shuffle())
        fail("__syncthreads while other lanes of the warp wait at a shuffle");
    switch_context(ex.fibers[current_thread].ctx, ex.scheduler);
}

/* The warp barrier: hands over to the next lane still running; the last lane to arrive releases
 * the warp and resumes its first lane. */
static void warp_barrier() {
    if (arrive(AT_WARP_BARRIER))
        return;
    const unsigned w = (unsigned)ex.warp, w0 = current_thread / w * w;
    for (unsigned i = w0; i < w0 + w; i++) {
        if (ex.fibers[i].state != AT_WARP_BARRIER)
            fail(ex.fibers[i].state == DONE ? "a warp shuffle that some lanes of the warp never reach (they returned)"
                                            : "a warp shuffle while other lanes wait at __syncthreads");
        ex.fibers[i].state = RUNNABLE;
    }
    switch_to(w0);
}

uint64_t exchange(uint64_t value, int src_lane) {
    if (!ex.running)
        fail("a shuffle outside a kernel");
    if (src_lane < 0 || src_lane >= ex.warp)
        fail("shuffle from a lane outside the warp");
    const unsigned me = current_thread, w = (unsigned)ex.warp;
    ex.lanes[me] = value;
    warp_barrier(); /* every lane has put its value in */
    const uint64_t got = ex.lanes[me / w * w + (unsigned)src_lane];
    warp_barrier(); /* every lane has read before any slot is reused */
    return got;
}

} // namespace simt
