/* gpu_runtime.h: the few GPU runtime calls the device needs, one implementation per vendor
 * (gpu_runtime_cuda.c, gpu_runtime_hip.c; the tests' executor has its own), so that gpu_device.c
 * is plain C with no vendor header. Every call returns 0 or the vendor's error code, which
 * gr_error_string names. Copies are ordered on the device's one stream. */
#ifndef BRASA_GPU_RUNTIME_H
#define BRASA_GPU_RUNTIME_H

#include <stddef.h>

#include "backend/gpu/gpu_module.h"

const char *gr_vendor(void); /* "cuda", "hip" */
/* Devices present, or -1 with the reason in why. */
int gr_device_count(char *why, size_t why_size);
int gr_device_info(int index, bk_gpu_info *info);
int gr_set_device(int index);
int gr_stream_create(void **stream);
int gr_stream_destroy(void *stream);
int gr_malloc(void **p, size_t bytes);
int gr_free(void *p);
int gr_memory(size_t *free_bytes, size_t *total_bytes);
int gr_copy_to_device(void *dst, const void *src, size_t bytes, void *stream);
int gr_copy_to_host(void *dst, const void *src, size_t bytes, void *stream); /* returns when the bytes are there */
int gr_copy_on_device(void *dst, const void *src, size_t bytes, void *stream);
int gr_memset(void *dst, int value, size_t bytes, void *stream);
/* Maps host memory (read-only allowed: a mapped file) into the device's address space, for an
 * integrated GPU to read in place; *dev_ptr is its device address. */
int gr_host_register(const void *host, size_t bytes, void **dev_ptr);
int gr_host_unregister(const void *host);
int gr_sync(void *stream);
int gr_last_error(void); /* a failed kernel launch, reported once */
const char *gr_error_string(int code);

#endif
