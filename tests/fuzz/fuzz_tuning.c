/* fuzz_tuning: the GPU tuning cache file, which brasa reads from the user's cache directory at
 * every context creation on a GPU. The input is a file's text, checked as gtune_parse checks it for
 * a made-up device (the header must name it): it is taken whole, with every choice a variant the
 * device has, or ignored whole with a reason, never half read and never a crash. */
#include <string.h>

#include "backend/gpu_tuning.h"
#include "fuzz.h"

/* A device with 9 decode variants and 3 prefill ones, as the real modules have. */
static int fake_variants(int kind) { return kind == 0 ? 9 : kind == 1 ? 3 : 0; }
static const bk_gpu_module fake_module = { .abi = BK_GPU_MODULE_ABI, .name = "fuzz", .variants = fake_variants };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gtune_device d;
    memset(&d, 0, sizeof d);
    d.module = &fake_module;
    snprintf(d.info.name, sizeof d.info.name, "Fuzz Device 9000");
    snprintf(d.info.arch, sizeof d.info.arch, "gfx1100");
    d.info.driver_version = 60342;
    char note[512];
    const int n = gtune_parse(&d, (const char *)data, size, note, sizeof note);
    FUZZ_CHECK(n >= -1 && n <= 256);
    FUZZ_CHECK((n >= 0) == (note[0] == '\0')); /* ignored exactly when there is a reason */
    FUZZ_CHECK(strlen(note) < sizeof note);
    return 0;
}
