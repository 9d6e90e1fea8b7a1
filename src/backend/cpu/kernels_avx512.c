/* kernels_avx512.c: the AVX-512 VNNI path (Ice Lake, Sapphire Rapids, Zen 4 and later): the AVX2
 * kernels compiled once more for a target with AVX-512 (F, BW, VL) and VNNI, where every 8-bit
 * product of the integer kernels becomes a single vpdpbusd on 256-bit registers. The exact integer
 * sums are the same, so this path's results equal the AVX2 path's bit for bit (tested), with one
 * exception: the K-quants' eight-row kernels (Q4_K, Q5_K, Q6_K: the weights of most models, for
 * every token) are this path's own, on 512-bit registers, where one vpdpbusd takes eight codes of
 * eight rows. Zen 4 runs it as two 256-bit halves, so the products cost the same, but the
 * instructions around them halve, and those bound several tokens at once; their float order
 * differs (tested against the scalar products). One source, two targets: only those kernels are
 * written twice. */
#define X86_VNNI 1
#define X86_PATH_NAME "avx512vnni"
#define X86_PATH_TABLE cpu_kernels_avx512_vnni
#if defined(__GNUC__) || defined(__clang__)
#define AVX2 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#else
#define AVX2
#endif
#include "kernels_avx2.c"
