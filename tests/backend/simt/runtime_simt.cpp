/* runtime_simt.cpp: gpu_runtime.h for the tests' "simt" backend module: device memory is host
 * memory and kernels run on the fiber executor, so the whole GPU device (module loading, weight
 * copies, staging, every op) runs through the engine on a machine without a GPU. The environment
 * shapes the pretend device: BRASA_SIMT_WARP (32 or 64 lanes), BRASA_SIMT_DEVICES=0 (none
 * present), BRASA_SIMT_MEMORY_MB (a memory size, to provoke out-of-memory), BRASA_SIMT_UNIFIED=1
 * (an integrated GPU sharing the host's memory). */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "simt.h"
extern "C" {
#include "backend/gpu/gpu_runtime.h"
}

namespace {
std::mutex lock;
std::unordered_map<void *, size_t> blocks;
size_t used = 0;

size_t limit() {
    const char *v = std::getenv("BRASA_SIMT_MEMORY_MB");
    return v && *v ? (size_t)std::strtoull(v, nullptr, 10) << 20 : (size_t)64 << 30;
}

/* BRASA_SIMT_UNIFIED=1: an integrated GPU (weights read in place), else a discrete one */
int unified_env() {
    const char *v = std::getenv("BRASA_SIMT_UNIFIED");
    return v && std::strcmp(v, "1") == 0 ? 1 : 0;
}

int warp_env() {
    const char *v = std::getenv("BRASA_SIMT_WARP");
    return v && std::strcmp(v, "64") == 0 ? 64 : 32;
}
} // namespace

extern "C" {

const char *gr_vendor(void) { return "simt"; }

int gr_device_count(char *why, size_t why_size) {
    const char *v = std::getenv("BRASA_SIMT_DEVICES");
    if (v && std::strcmp(v, "0") == 0) {
        std::snprintf(why, why_size, "no device");
        return -1;
    }
    return 1;
}

int gr_device_info(int index, bk_gpu_info *info) {
    if (index != 0)
        return 1;
    std::snprintf(info->name, sizeof info->name, "CPU fiber executor (%d-lane warps)", warp_env());
    std::snprintf(info->arch, sizeof info->arch, "simt%d", warp_env());
    info->warp = warp_env();
    info->unified = unified_env();
    info->total_bytes = limit();
    info->free_bytes = limit() - used;
    return 0;
}

int gr_set_device(int index) {
    simt::set_warp_size(warp_env());
    return index == 0 ? 0 : 1;
}

int gr_stream_create(void **stream) {
    *stream = nullptr;
    return 0;
}

int gr_stream_destroy(void *) { return 0; }

int gr_malloc(void **p, size_t bytes) {
    std::lock_guard<std::mutex> g(lock);
    *p = nullptr;
    if (bytes > limit() - used)
        return 2;
    *p = std::malloc(bytes ? bytes : 1);
    if (!*p)
        return 2;
    blocks[*p] = bytes;
    used += bytes;
    return 0;
}

int gr_free(void *p) {
    if (!p)
        return 0;
    std::lock_guard<std::mutex> g(lock);
    auto it = blocks.find(p);
    if (it == blocks.end())
        return 3;
    used -= it->second;
    blocks.erase(it);
    std::free(p);
    return 0;
}

int gr_memory(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = limit() - used;
    *total_bytes = limit();
    return 0;
}

int gr_copy_to_device(void *dst, const void *src, size_t bytes, void *) {
    std::memcpy(dst, src, bytes);
    return 0;
}

int gr_copy_to_host(void *dst, const void *src, size_t bytes, void *) {
    std::memcpy(dst, src, bytes);
    return 0;
}

int gr_copy_on_device(void *dst, const void *src, size_t bytes, void *) {
    std::memmove(dst, src, bytes);
    return 0;
}

int gr_memset(void *dst, int value, size_t bytes, void *) {
    std::memset(dst, value, bytes);
    return 0;
}

/* The executor's device memory is host memory: a host range is its own device address. */
int gr_host_register(const void *host, size_t, void **dev_ptr) {
    *dev_ptr = const_cast<void *>(host);
    return 0;
}

int gr_host_unregister(const void *) { return 0; }

int gr_sync(void *) { return 0; }
int gr_last_error(void) { return 0; }

const char *gr_error_string(int code) {
    switch (code) {
    case 0: return "no error";
    case 1: return "invalid device";
    case 2: return "out of memory";
    case 3: return "not an allocated pointer";
    default: return "unknown error";
    }
}

} // extern "C"
