/* kernels_neon_dotprod.c: the NEON path again, compiled for cores with the ARMv8.2 dot-product
 * extension (kernels_neon.c, BRASA_NEON_DOTPROD): its integer products use sdot. Only called after
 * cpu_kernels_select has seen the feature, so the rest of the build still runs on any ARMv8-A. */
#define BRASA_NEON_DOTPROD 1
#include "kernels_neon.c"
