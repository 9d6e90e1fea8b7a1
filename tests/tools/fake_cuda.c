/* fake_cuda: a stand-in for the NVIDIA driver's libcuda with one pretend GPU, so `brasa doctor`
 * and `brasa fit --device auto` can be tested finding a GPU on machines without one
 * (BRASA_CUDA_LIBRARY points at it). The entry points have the CUDA driver API's signatures;
 * FAKE_CUDA_INIT_ERROR makes cuInit fail with that code. */
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

static int ctx_token;

EXPORT int cuInit(unsigned flags) {
    (void)flags;
    const char *e = getenv("FAKE_CUDA_INIT_ERROR");
    return e ? atoi(e) : 0;
}
EXPORT int cuDriverGetVersion(int *v) { *v = 12040; return 0; }
EXPORT int cuDeviceGetCount(int *n) { *n = 1; return 0; }
EXPORT int cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return ordinal == 0 ? 0 : 101; }
EXPORT int cuDeviceGetName(char *name, int len, int dev) {
    (void)dev;
    const char *n = "NVIDIA GeForce RTX 4090";
    if (len < (int)strlen(n) + 1)
        return 1;
    memcpy(name, n, strlen(n) + 1);
    return 0;
}
EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int dev) { (void)dev; *bytes = (size_t)24 << 30; return 0; }
EXPORT int cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    switch (attr) {
    case 75: *v = 8; return 0;         /* compute capability 8.9 */
    case 76: *v = 9; return 0;
    case 18: *v = 0; return 0;         /* discrete */
    case 36: *v = 10501000; return 0;  /* memory clock, kHz */
    case 37: *v = 384; return 0;       /* bus width, bits */
    default: return 1;
    }
}
EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; *ctx = &ctx_token; return 0; }
EXPORT int cuCtxPushCurrent_v2(void *ctx) { return ctx == &ctx_token ? 0 : 1; }
EXPORT int cuCtxPopCurrent_v2(void **ctx) { *ctx = &ctx_token; return 0; }
EXPORT int cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return 0; }
EXPORT int cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    *free_bytes = (size_t)23 << 30;
    *total = (size_t)24 << 30;
    return 0;
}
