/* probe.c: GPU discovery through the CUDA driver API and the HIP runtime, both loaded at run time,
 * and the Linux KFD topology (see probe.h). Only the few entry points every version of each
 * runtime has are used, declared here with their documented C signatures. */
#include "tools/probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

/* A symbol as a function pointer: the object-to-function conversion goes through memcpy, which
 * is how ISO C lets dlsym's result become callable. */
#define LOAD(lib, var, name)                                                                       \
    do {                                                                                           \
        void *sym_ = plat_lib_symbol(lib, name);                                                   \
        memcpy(&(var), &sym_, sizeof(var));                                                        \
    } while (0)

static void note(probe_report *r, const char *problem, const char *fix) {
    if (r->n_notes >= PROBE_MAX_NOTES)
        return;
    probe_note *n = &r->notes[r->n_notes++];
    snprintf(n->problem, sizeof n->problem, "%s", problem);
    snprintf(n->fix, sizeof n->fix, "%s", fix);
}

static probe_gpu *new_gpu(probe_report *r) {
    if (r->n_gpus >= PROBE_MAX_GPUS)
        return NULL;
    probe_gpu *g = &r->gpus[r->n_gpus++];
    memset(g, 0, sizeof *g);
    return g;
}

static bool is_linux(void) {
    char os[64];
    plat_os_name(os, sizeof os);
    return strncmp(os, "Linux", 5) == 0;
}

/* Joins a root override (environment variable) and a path. */
static void rooted(const char *env, const char *path, char *out, size_t size) {
    const char *root = getenv(env);
    snprintf(out, size, "%s%s", root ? root : "", path);
}

/* Tries the candidates (or the override) in turn; records what was tried in rt->library. */
static plat_lib *open_runtime(probe_runtime *rt, const char *env, const char *const *names, size_t n) {
    const char *override = getenv(env);
    char why[256] = "";
    rt->library[0] = '\0';
    if (override && *override) {
        plat_lib *lib = plat_lib_open(override, why, sizeof why);
        snprintf(rt->library, sizeof rt->library, "%s", override);
        if (!lib)
            snprintf(rt->problem, sizeof rt->problem, "%s does not load: %s", override, why);
        return lib;
    }
    for (size_t i = 0; i < n; i++) {
        plat_lib *lib = plat_lib_open(names[i], why, sizeof why);
        if (lib) {
            snprintf(rt->library, sizeof rt->library, "%s", names[i]);
            return lib;
        }
        size_t k = strlen(rt->library);
        snprintf(rt->library + k, sizeof rt->library - k, "%s%s", k ? ", " : "", names[i]);
    }
    snprintf(rt->problem, sizeof rt->problem, "not installed (none of %s loads)", rt->library);
    return NULL;
}

/* ---- NVIDIA: the CUDA driver API (libcuda / nvcuda.dll, installed with the driver) ---- */

enum {
    CU_ATTR_INTEGRATED = 18,
    CU_ATTR_MEMORY_CLOCK_KHZ = 36,
    CU_ATTR_BUS_WIDTH_BITS = 37,
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76,
    CU_ERROR_INSUFFICIENT_DRIVER = 35,
    CU_ERROR_NO_DEVICE = 100,
};

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_int_fn)(int *);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_total_fn)(size_t *, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cu_ctx_retain_fn)(void **, int);
typedef int (*cu_ctx_push_fn)(void *);
typedef int (*cu_ctx_pop_fn)(void **);
typedef int (*cu_ctx_release_fn)(int);
typedef int (*cu_mem_info_fn)(size_t *, size_t *);

static void probe_cuda(probe_report *r) {
    probe_runtime *rt = &r->cuda;
    snprintf(rt->name, sizeof rt->name, "CUDA driver");
    static const char *const names[] = { "libcuda.so.1", "libcuda.so", "nvcuda.dll" };
    const bool have_nvidia_dev = plat_path_access("/dev/nvidiactl") != PLAT_ACCESS_MISSING;
    plat_lib *lib = open_runtime(rt, "BRASA_CUDA_LIBRARY", names, sizeof names / sizeof names[0]);
    if (!lib) {
        snprintf(rt->fix, sizeof rt->fix, "%s", have_nvidia_dev ? "the NVIDIA driver's user-space library is missing: reinstall the driver (it ships libcuda)"
                                                                 : "only needed for NVIDIA GPUs: install the NVIDIA driver if this machine has one");
        return;
    }
    cu_init_fn init;
    cu_int_fn version, count;
    cu_device_get_fn device_get;
    cu_name_fn get_name;
    cu_total_fn total_mem;
    cu_attr_fn attr;
    cu_ctx_retain_fn retain;
    cu_ctx_push_fn push;
    cu_ctx_pop_fn pop;
    cu_ctx_release_fn release;
    cu_mem_info_fn mem_info;
    LOAD(lib, init, "cuInit");
    LOAD(lib, version, "cuDriverGetVersion");
    LOAD(lib, count, "cuDeviceGetCount");
    LOAD(lib, device_get, "cuDeviceGet");
    LOAD(lib, get_name, "cuDeviceGetName");
    LOAD(lib, total_mem, "cuDeviceTotalMem_v2");
    LOAD(lib, attr, "cuDeviceGetAttribute");
    LOAD(lib, retain, "cuDevicePrimaryCtxRetain");
    LOAD(lib, push, "cuCtxPushCurrent_v2");
    LOAD(lib, pop, "cuCtxPopCurrent_v2");
    LOAD(lib, release, "cuDevicePrimaryCtxRelease_v2");
    LOAD(lib, mem_info, "cuMemGetInfo_v2");
    if (!init || !version || !count || !device_get || !get_name || !total_mem || !attr) {
        snprintf(rt->problem, sizeof rt->problem, "%s lacks the CUDA driver API's basic functions", rt->library);
        snprintf(rt->fix, sizeof rt->fix, "reinstall the NVIDIA driver");
        plat_lib_close(lib);
        return;
    }
    rt->loaded = true;
    int v = 0;
    if (version(&v) == 0)
        snprintf(rt->version, sizeof rt->version, "%d.%d", v / 1000, (v % 1000) / 10);
    int rc = init(0);
    if (rc != 0) {
        if (rc == CU_ERROR_NO_DEVICE) {
            snprintf(rt->problem, sizeof rt->problem, "the driver sees no NVIDIA GPU");
            snprintf(rt->fix, sizeof rt->fix, "check that the card is seated and powered, and that nvidia-smi lists it");
        } else if (rc == CU_ERROR_INSUFFICIENT_DRIVER) {
            snprintf(rt->problem, sizeof rt->problem, "the kernel driver is older than its CUDA library");
            snprintf(rt->fix, sizeof rt->fix, "update the NVIDIA driver (the kernel module and libcuda must match)");
        } else {
            snprintf(rt->problem, sizeof rt->problem, "cuInit failed with CUDA error %d", rc);
            snprintf(rt->fix, sizeof rt->fix, "%s", plat_path_access("/dev/nvidiactl") == PLAT_ACCESS_DENIED
                                                        ? "this user may not open /dev/nvidia*: add it to the group that owns them"
                                                        : "run nvidia-smi to see what the driver says");
        }
        plat_lib_close(lib);
        return;
    }
    int n = 0;
    count(&n);
    for (int i = 0; i < n; i++) {
        int dev;
        if (device_get(&dev, i) != 0)
            continue;
        probe_gpu *g = new_gpu(r);
        if (!g)
            break;
        snprintf(g->vendor, sizeof g->vendor, "NVIDIA");
        snprintf(g->source, sizeof g->source, "CUDA driver");
        if (get_name(g->name, (int)sizeof g->name, dev) != 0)
            snprintf(g->name, sizeof g->name, "NVIDIA GPU %d", i);
        g->name[sizeof g->name - 1] = '\0';
        size_t total = 0;
        if (total_mem(&total, dev) == 0)
            g->memory_total = total;
        int major = 0, minor = 0, integrated = 0, clock_khz = 0, bus_bits = 0;
        attr(&major, CU_ATTR_CC_MAJOR, dev);
        attr(&minor, CU_ATTR_CC_MINOR, dev);
        attr(&integrated, CU_ATTR_INTEGRATED, dev);
        if (major > 0)
            snprintf(g->arch, sizeof g->arch, "sm_%d%d", major, minor);
        g->unified = integrated != 0;
        /* double data rate: two transfers per clock over the whole bus */
        if (attr(&clock_khz, CU_ATTR_MEMORY_CLOCK_KHZ, dev) == 0 && attr(&bus_bits, CU_ATTR_BUS_WIDTH_BITS, dev) == 0 &&
            clock_khz > 0 && bus_bits > 0)
            g->bandwidth_gbs = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
        void *ctx = NULL;
        if (retain && push && pop && release && mem_info && retain(&ctx, dev) == 0) {
            size_t free_b = 0, total_b = 0;
            if (push(ctx) == 0) {
                if (mem_info(&free_b, &total_b) == 0)
                    g->memory_free = free_b;
                pop(&ctx);
            }
            release(dev);
        }
    }
    plat_lib_close(lib);
}

/* ---- AMD: the HIP runtime (ROCm on Linux, the HIP SDK on Windows) ---- */

typedef int (*hip_int_fn)(int *);
typedef int (*hip_name_fn)(char *, int, int);
typedef int (*hip_total_fn)(size_t *, int);
typedef int (*hip_set_fn)(int);
typedef int (*hip_mem_info_fn)(size_t *, size_t *);
typedef int (*hip_props_fn)(void *, int);

/* hipDeviceProp_t's layout changes between ROCm releases, but it always holds the gfx target name
 * as a NUL-terminated string ("gfx1030:sramecc-:xnack-"): the properties go into a generous buffer
 * and the name is found by its prefix, so no one release's layout is assumed. */
static void arch_from_props(hip_props_fn props, int dev, char *out, size_t size) {
    enum { PROPS_BYTES = 16384 };
    unsigned char *buf = calloc(1, PROPS_BYTES);
    if (!buf)
        return;
    if (props(buf, dev) == 0)
        for (size_t i = 0; i + 4 < PROPS_BYTES; i++)
            if (memcmp(buf + i, "gfx", 3) == 0 && buf[i + 3] >= '0' && buf[i + 3] <= '9' && (i == 0 || buf[i - 1] == 0)) {
                size_t k = 0;
                while (k + 1 < size && i + k < PROPS_BYTES && buf[i + k] && buf[i + k] != ':')
                    k++;
                memcpy(out, buf + i, k);
                out[k] = '\0';
                break;
            }
    free(buf);
}

static void probe_hip(probe_report *r) {
    probe_runtime *rt = &r->hip;
    snprintf(rt->name, sizeof rt->name, "HIP runtime");
    static const char *const names[] = { "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5",
                                         "/opt/rocm/lib/libamdhip64.so", "amdhip64_6.dll", "amdhip64.dll" };
    plat_lib *lib = open_runtime(rt, "BRASA_HIP_LIBRARY", names, sizeof names / sizeof names[0]);
    if (!lib) {
        snprintf(rt->fix, sizeof rt->fix, "%s", is_linux() ? "only needed for AMD GPUs: install ROCm (Debian/Ubuntu: apt install rocm, or AMD's amdgpu-install)"
                                                            : "only needed for AMD GPUs: install AMD's HIP SDK for Windows");
        return;
    }
    hip_int_fn runtime_version, count;
    hip_name_fn get_name;
    hip_total_fn total_mem;
    hip_set_fn set_device;
    hip_mem_info_fn mem_info;
    hip_props_fn props;
    LOAD(lib, runtime_version, "hipRuntimeGetVersion");
    LOAD(lib, count, "hipGetDeviceCount");
    LOAD(lib, get_name, "hipDeviceGetName");
    LOAD(lib, total_mem, "hipDeviceTotalMem");
    LOAD(lib, set_device, "hipSetDevice");
    LOAD(lib, mem_info, "hipMemGetInfo");
    LOAD(lib, props, "hipGetDevicePropertiesR0600");
    if (!props)
        LOAD(lib, props, "hipGetDeviceProperties");
    if (!count || !get_name || !total_mem) {
        snprintf(rt->problem, sizeof rt->problem, "%s lacks the HIP runtime's basic functions", rt->library);
        snprintf(rt->fix, sizeof rt->fix, "reinstall ROCm / the HIP SDK");
        plat_lib_close(lib);
        return;
    }
    rt->loaded = true;
    int v = 0;
    if (runtime_version && runtime_version(&v) == 0 && v > 0) /* major * 10000000 + minor * 100000 + patch */
        snprintf(rt->version, sizeof rt->version, "%d.%d", v / 10000000, (v / 100000) % 100);
    int n = 0, rc = count(&n);
    if (rc != 0 || n == 0) {
        snprintf(rt->problem, sizeof rt->problem, "the HIP runtime sees no GPU (hipGetDeviceCount: error %d, %d devices)", rc, n);
        snprintf(rt->fix, sizeof rt->fix, "%s", is_linux() ? "check that /dev/kfd exists and this user may open it (groups render and video)"
                                                            : "update the Adrenalin driver; the HIP SDK needs a supported Radeon");
        plat_lib_close(lib);
        return;
    }
    for (int i = 0; i < n; i++) {
        probe_gpu *g = new_gpu(r);
        if (!g)
            break;
        snprintf(g->vendor, sizeof g->vendor, "AMD");
        snprintf(g->source, sizeof g->source, "HIP runtime");
        if (get_name(g->name, (int)sizeof g->name, i) != 0)
            snprintf(g->name, sizeof g->name, "AMD GPU %d", i);
        g->name[sizeof g->name - 1] = '\0';
        size_t total = 0, free_b = 0, total_b = 0;
        if (total_mem(&total, i) == 0)
            g->memory_total = total;
        if (set_device && mem_info && set_device(i) == 0 && mem_info(&free_b, &total_b) == 0)
            g->memory_free = free_b;
        if (props)
            arch_from_props(props, i, g->arch, sizeof g->arch);
    }
    plat_lib_close(lib);
}

/* ---- AMD on Linux without (or beside) ROCm: the kernel's KFD topology ---- */

static bool read_file(const char *path, char *out, size_t size) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
    return true;
}

static uint64_t property(const char *text, const char *key) {
    size_t k = strlen(key);
    for (const char *p = text; (p = strstr(p, key)) != NULL; p += k)
        if ((p == text || p[-1] == '\n') && p[k] == ' ')
            return strtoull(p + k + 1, NULL, 10);
    return 0;
}

/* gfx_target_version is major * 10000 + minor * 100 + stepping, the stepping written in hex in
 * the target's name (90010 is gfx90a). */
static void gfx_name(uint64_t v, char *out, size_t size) {
    snprintf(out, size, "gfx%u%u%x", (unsigned)(v / 10000), (unsigned)(v / 100 % 100), (unsigned)(v % 100));
}

static void probe_kfd(probe_report *r, bool have_hip_gpus) {
    char path[512], text[4096];
    int found = 0;
    for (int node = 0; node < 64; node++) {
        char rel[128];
        snprintf(rel, sizeof rel, "/sys/class/kfd/kfd/topology/nodes/%d/properties", node);
        rooted("BRASA_SYSFS_ROOT", rel, path, sizeof path);
        if (!read_file(path, text, sizeof text))
            break;
        const uint64_t target = property(text, "gfx_target_version");
        if (target == 0)
            continue; /* a CPU node */
        found++;
        char arch[32];
        gfx_name(target, arch, sizeof arch);
        const char *override = probe_gfx_override(arch), *set = getenv("HSA_OVERRIDE_GFX_VERSION");
        if (override && !(set && *set)) {
            char problem[256], fix[256];
            snprintf(problem, sizeof problem, "%s has no ROCm kernels of its own; it runs those of its family", arch);
            snprintf(fix, sizeof fix, "export HSA_OVERRIDE_GFX_VERSION=%s before starting brasa", override);
            note(r, problem, fix);
        }
        if (have_hip_gpus)
            continue; /* the runtime already described it, with free memory */
        probe_gpu *g = new_gpu(r);
        if (!g)
            break;
        snprintf(g->vendor, sizeof g->vendor, "AMD");
        snprintf(g->source, sizeof g->source, "KFD topology");
        snprintf(g->arch, sizeof g->arch, "%s", arch);
        char name_text[64] = "";
        snprintf(rel, sizeof rel, "/sys/class/kfd/kfd/topology/nodes/%d/name", node);
        rooted("BRASA_SYSFS_ROOT", rel, path, sizeof path);
        if (read_file(path, name_text, sizeof name_text))
            name_text[strcspn(name_text, "\r\n")] = '\0';
        snprintf(g->name, sizeof g->name, "AMD %s%s%s", arch, name_text[0] ? " " : "", name_text);
        snprintf(rel, sizeof rel, "/sys/class/kfd/kfd/topology/nodes/%d/mem_banks/0/properties", node);
        rooted("BRASA_SYSFS_ROOT", rel, path, sizeof path);
        if (read_file(path, text, sizeof text))
            g->memory_total = property(text, "size_in_bytes");
        /* the integrated GPUs of AMD's APUs share system memory */
        static const char *const apus[] = { "gfx1035", "gfx1036", "gfx1103", "gfx1150", "gfx1151", "gfx1152" };
        for (size_t i = 0; i < sizeof apus / sizeof apus[0]; i++)
            g->unified |= strcmp(arch, apus[i]) == 0;
    }
    if (found) {
        char dev[512];
        rooted("BRASA_DEV_ROOT", "/dev/kfd", dev, sizeof dev);
        plat_access a = plat_path_access(dev);
        if (a == PLAT_ACCESS_DENIED)
            note(r, "this user may not open /dev/kfd (the AMD GPU compute device)",
                 "sudo usermod -aG render,video $USER, then log in again");
        else if (a == PLAT_ACCESS_MISSING)
            note(r, "/dev/kfd is missing: the amdgpu kernel driver is not loaded",
                 "load it (sudo modprobe amdgpu) or install a kernel with amdgpu");
    }
}

const char *probe_gfx_override(const char *arch) {
    /* RDNA2 parts beside Navi 21, and RDNA3's Phoenix APU, run the kernels of gfx1030 / gfx1100 */
    static const char *const rdna2[] = { "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036" };
    for (size_t i = 0; i < sizeof rdna2 / sizeof rdna2[0]; i++)
        if (strcmp(arch, rdna2[i]) == 0)
            return "10.3.0";
    if (strcmp(arch, "gfx1103") == 0)
        return "11.0.0";
    return NULL;
}

void probe_gpus(probe_report *r) {
    memset(r, 0, sizeof *r);
    probe_cuda(r);
    probe_hip(r);
    if (is_linux() || getenv("BRASA_SYSFS_ROOT"))
        probe_kfd(r, r->hip.loaded && r->n_gpus > 0 && strcmp(r->gpus[r->n_gpus - 1].vendor, "AMD") == 0);
    /* the kernel driver, where Linux says */
    char text[256];
    if (read_file("/proc/driver/nvidia/version", text, sizeof text)) {
        const char *k = strstr(text, "Kernel Module");
        unsigned a = 0, b = 0, c = 0;
        if (k && sscanf(k, "Kernel Module %u.%u.%u", &a, &b, &c) >= 2)
            snprintf(r->kernel_driver, sizeof r->kernel_driver, "nvidia %u.%u.%u", a, b, c);
    }
    char path[512];
    rooted("BRASA_SYSFS_ROOT", "/sys/module/amdgpu", path, sizeof path);
    if (!r->kernel_driver[0] && plat_path_access(path) != PLAT_ACCESS_MISSING) {
        char os[64];
        plat_os_name(os, sizeof os);
        snprintf(r->kernel_driver, sizeof r->kernel_driver, "amdgpu (in %s)", os);
    }
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (visible && !*visible)
        note(r, "CUDA_VISIBLE_DEVICES is set but empty: it hides every NVIDIA GPU", "unset CUDA_VISIBLE_DEVICES");
    visible = getenv("HIP_VISIBLE_DEVICES");
    if (visible && !*visible)
        note(r, "HIP_VISIBLE_DEVICES is set but empty: it hides every AMD GPU", "unset HIP_VISIBLE_DEVICES");
}
