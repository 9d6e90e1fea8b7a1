/* fake_hip: a stand-in for ROCm's libamdhip64 with one pretend Radeon RX 6700 XT (gfx1031, an
 * RDNA2 part that needs HSA_OVERRIDE_GFX_VERSION), for the doctor tests (BRASA_HIP_LIBRARY).
 * The device properties are written as a real runtime's struct would hold them: the name first,
 * the gfx target name somewhere further in. */
#include <string.h>

#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

EXPORT int hipRuntimeGetVersion(int *v) { *v = 60241134; return 0; } /* 6.2 */
EXPORT int hipGetDeviceCount(int *n) { *n = 1; return 0; }
EXPORT int hipDeviceGetName(char *name, int len, int dev) {
    (void)dev;
    const char *n = "AMD Radeon RX 6700 XT";
    if (len < (int)strlen(n) + 1)
        return 1;
    memcpy(name, n, strlen(n) + 1);
    return 0;
}
EXPORT int hipDeviceTotalMem(size_t *bytes, int dev) { (void)dev; *bytes = (size_t)12 << 30; return 0; }
EXPORT int hipSetDevice(int dev) { return dev == 0 ? 0 : 101; }
EXPORT int hipMemGetInfo(size_t *free_bytes, size_t *total) {
    *free_bytes = (size_t)11 << 30;
    *total = (size_t)12 << 30;
    return 0;
}
EXPORT int hipGetDevicePropertiesR0600(void *props, int dev) {
    (void)dev;
    char *p = props;
    strcpy(p, "AMD Radeon RX 6700 XT");
    strcpy(p + 1160, "gfx1031:sramecc-:xnack-"); /* where ROCm 6.2 keeps gcnArchName, roughly */
    return 0;
}
