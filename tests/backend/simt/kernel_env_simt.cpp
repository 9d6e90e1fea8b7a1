/* kernel_env_simt.cpp: the kernel test's environment on the fiber executor: host memory is device
 * memory, launches finish before they return, and both warp widths can be chosen. */
#include <cstdlib>

#include "kernel_env.h"
#include "simt.h"

extern "C" {

int ke_open(char *, size_t) { return 0; }

int ke_warps(int widths[2]) {
    widths[0] = 32;
    widths[1] = 64;
    return 2;
}

void ke_use_warp(int width) { simt::set_warp_size(width); }
const char *ke_name(void) { return "fiber executor"; }
void *ke_alloc(size_t bytes) { return std::malloc(bytes ? bytes : 1); }
void ke_free(void *p) { std::free(p); }
int ke_sync(void) { return 0; }
void *ke_stream(void) { return nullptr; }

} // extern "C"
