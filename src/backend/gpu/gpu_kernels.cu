/* gpu_kernels.cu: every operation the models need, in the one dialect of gpu_port.h, for NVIDIA,
 * AMD and the tests' CPU executor alike.
 *
 * Weights are read in pieces of eight values: each block format says how to dequantize piece p
 * of a row (gk_load8), and the products are written once over that. Decode is one warp per output
 * row, its lanes striding over the row's pieces; prefill is a 64x64 tile per block of 256 threads
 * through shared memory. Attention is one warp per (token, head), keys a warp at a time with a
 * running maximum and sum (flash-attention style: scores never stored). Reductions are warp
 * shuffles over warpSize lanes, whatever the width.
 */
#include "gpu_port.h"

#include <math.h>

#include "backend/gpu/gpu_kernels.h"
extern "C" {
#include "quant/quant.h" /* the type numbers and block sizes only: its functions are host code */
}

/* ---- block formats: piece p (values 8p .. 8p+7) of a row ---- */

static __device__ __forceinline__ float gk_half(const uint8_t *p) { return gp_half_to_float(*(const uint16_t *)p); }

/* the j-th 6-bit scale and minimum of a Q4_K/Q5_K block (the layout quant.h describes) */
static __device__ __forceinline__ void gk_k_scale_min(int j, const uint8_t *s, float *scale, float *min) {
    if (j < 4) {
        *scale = (float)(s[j] & 63);
        *min = (float)(s[j + 4] & 63);
    } else {
        *scale = (float)((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        *min = (float)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

template <int T> __device__ void gk_load8(const uint8_t *row, int64_t p, int64_t n_in, float v[8]);

template <> __device__ __forceinline__ void gk_load8<QUANT_F32>(const uint8_t *row, int64_t p, int64_t n_in, float v[8]) {
    const float *r = (const float *)row;
    for (int i = 0; i < 8; i++)
        v[i] = p * 8 + i < n_in ? r[p * 8 + i] : 0.0f;
}

template <> __device__ __forceinline__ void gk_load8<QUANT_F16>(const uint8_t *row, int64_t p, int64_t n_in, float v[8]) {
    const uint16_t *r = (const uint16_t *)row;
    for (int i = 0; i < 8; i++)
        v[i] = p * 8 + i < n_in ? gp_half_to_float(r[p * 8 + i]) : 0.0f;
}

template <> __device__ __forceinline__ void gk_load8<QUANT_BF16>(const uint8_t *row, int64_t p, int64_t n_in, float v[8]) {
    const uint16_t *r = (const uint16_t *)row;
    for (int i = 0; i < 8; i++)
        v[i] = p * 8 + i < n_in ? gp_bits_to_float((uint32_t)r[p * 8 + i] << 16) : 0.0f;
}

/* The quantized formats as integer codes: value i of piece p is s * q[i] + m, q[i] a small signed
 * integer (at most 8 bits), s and m shared by the piece. The float products dequantize through this
 * (gk_load8 below); the int8 products multiply the codes as integers. */
template <int T> __device__ void gk_load8q(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m);

/* Legacy formats: one 32-value block per four pieces; values 0..15 are low nibbles, 16..31 high. */
template <> __device__ __forceinline__ void gk_load8q<QUANT_Q4_0>(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m) {
    const uint8_t *b = row + (p >> 2) * 18, *qs = b + 2;
    const int j0 = (int)(p & 3) * 8, shift = j0 < 16 ? 0 : 4, base = j0 & 15;
    *s = gk_half(b);
    *m = 0.0f;
    for (int i = 0; i < 8; i++)
        q[i] = (int8_t)(((qs[base + i] >> shift) & 15) - 8);
}

template <> __device__ __forceinline__ void gk_load8q<QUANT_Q4_1>(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m) {
    const uint8_t *b = row + (p >> 2) * 20, *qs = b + 4;
    const int j0 = (int)(p & 3) * 8, shift = j0 < 16 ? 0 : 4, base = j0 & 15;
    *s = gk_half(b);
    *m = gk_half(b + 2);
    for (int i = 0; i < 8; i++)
        q[i] = (int8_t)((qs[base + i] >> shift) & 15);
}

static __device__ __forceinline__ uint32_t gk_u32(const uint8_t *q) {
    return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
}

/* Q5: value j's fifth bit is bit j of the 32-bit qh */
template <> __device__ __forceinline__ void gk_load8q<QUANT_Q5_0>(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m) {
    const uint8_t *b = row + (p >> 2) * 22, *qs = b + 6;
    const uint32_t qh = gk_u32(b + 2);
    const int j0 = (int)(p & 3) * 8, shift = j0 < 16 ? 0 : 4, base = j0 & 15;
    *s = gk_half(b);
    *m = 0.0f;
    for (int i = 0; i < 8; i++)
        q[i] = (int8_t)((int)(((qs[base + i] >> shift) & 15) | ((qh >> (j0 + i)) & 1) << 4) - 16);
}

template <> __device__ __forceinline__ void gk_load8q<QUANT_Q5_1>(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m) {
    const uint8_t *b = row + (p >> 2) * 24, *qs = b + 8;
    const uint32_t qh = gk_u32(b + 4);
    const int j0 = (int)(p & 3) * 8, shift = j0 < 16 ? 0 : 4, base = j0 & 15;
    *s = gk_half(b);
    *m = gk_half(b + 2);
    for (int i = 0; i < 8; i++)
        q[i] = (int8_t)(((qs[base + i] >> shift) & 15) | ((qh >> (j0 + i)) & 1) << 4);
}

template <> __device__ __forceinline__ void gk_load8q<QUANT_Q8_0>(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m) {
    const uint8_t *b = row + (p >> 2) * 34;
    const int8_t *qs = (const int8_t *)(b + 2) + (p & 3) * 8;
    *s = gk_half(b);
    *m = 0.0f;
    for (int i = 0; i < 8; i++)
        q[i] = qs[i];
}

/* MXFP4: 17-byte blocks, the E8M0 exponent and 16 bytes of E2M1 codes (low nibbles 0..15, high
 * 16..31), each code's value doubled to an integer (quant.h's quant_mxfp4_values) and the scale
 * 2^(e - 128) to undo it: a subnormal for e < 2. */
static __device__ __forceinline__ float gk_e8m0_half(uint8_t e) {
    return gp_bits_to_float(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

template <> __device__ __forceinline__ void gk_load8q<QUANT_MXFP4>(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m) {
    const int8_t values[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };
    const uint8_t *b = row + (p >> 2) * 17, *qs = b + 1;
    const int j0 = (int)(p & 3) * 8, shift = j0 < 16 ? 0 : 4, base = j0 & 15;
    *s = gk_e8m0_half(b[0]);
    *m = 0.0f;
    for (int i = 0; i < 8; i++)
        q[i] = values[(qs[base + i] >> shift) & 15];
}

/* K-quants: 256-value super-blocks of eight 32-value sub-blocks; piece p lies in sub-block
 * (p / 4) mod 8. Q4_K/Q5_K: sub-blocks 2k and 2k+1 share 32 bytes of codes, low then high nibbles;
 * each sub-block's value is d * scale * q - dmin * min. */
template <> __device__ __forceinline__ void gk_load8q<QUANT_Q4_K>(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m) {
    const uint8_t *b = row + (p >> 5) * 144;
    const int sub = (int)(p >> 2) & 7, l0 = (int)(p & 3) * 8, shift = (sub & 1) * 4;
    float sc, mn;
    gk_k_scale_min(sub, b + 4, &sc, &mn);
    *s = gk_half(b) * sc;
    *m = -(gk_half(b + 2) * mn);
    const uint8_t *qs = b + 16 + 32 * (sub >> 1) + l0;
    for (int i = 0; i < 8; i++)
        q[i] = (int8_t)((qs[i] >> shift) & 15);
}

template <> __device__ __forceinline__ void gk_load8q<QUANT_Q5_K>(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m) {
    const uint8_t *b = row + (p >> 5) * 176;
    const int sub = (int)(p >> 2) & 7, l0 = (int)(p & 3) * 8, shift = (sub & 1) * 4;
    float sc, mn;
    gk_k_scale_min(sub, b + 4, &sc, &mn);
    *s = gk_half(b) * sc;
    *m = -(gk_half(b + 2) * mn);
    const uint8_t *qh = b + 16 + l0, *qs = b + 48 + 32 * (sub >> 1) + l0;
    for (int i = 0; i < 8; i++)
        q[i] = (int8_t)(((qs[i] >> shift) & 15) | ((qh[i] >> sub) & 1) << 4);
}

/* Q6_K: two halves of 128 values; in a half, 32-value group k takes its low nibbles from ql
 * (bytes 0..31 for k = 0, 2; 32..63 for k = 1, 3; low nibble for k < 2) and its two high bits
 * from bits 2k of qh; a scale per 16 values (a piece lies within one). */
template <> __device__ __forceinline__ void gk_load8q<QUANT_Q6_K>(const uint8_t *row, int64_t p, int8_t q[8], float *s, float *m) {
    const uint8_t *b = row + (p >> 5) * 210;
    const int sub = (int)(p >> 2) & 7, half = sub >> 2, k = sub & 3, l0 = (int)(p & 3) * 8;
    const uint8_t *ql = b + 64 * half + 32 * (k & 1) + l0, *qh = b + 128 + 32 * half + l0;
    const int8_t *sc = (const int8_t *)(b + 192) + 8 * half;
    const int scale_index = (l0 >> 4) + 2 * k;
    const int shift = (k >> 1) * 4;
    *s = gk_half(b + 208) * (float)sc[scale_index];
    *m = 0.0f;
    for (int i = 0; i < 8; i++)
        q[i] = (int8_t)((int)(((ql[i] >> shift) & 15) | ((qh[i] >> (2 * k)) & 3) << 4) - 32);
}

/* A quantized piece as floats: s * q + m. */
#define GK_LOAD8_FROM_CODES(T)                                                                                   \
    template <> __device__ __forceinline__ void gk_load8<T>(const uint8_t *row, int64_t p, int64_t n_in, float v[8]) { \
        (void)n_in;                                                                                               \
        int8_t q[8];                                                                                              \
        float s, m;                                                                                               \
        gk_load8q<T>(row, p, q, &s, &m);                                                                          \
        for (int i = 0; i < 8; i++)                                                                               \
            v[i] = s * (float)q[i] + m;                                                                           \
    }
GK_LOAD8_FROM_CODES(QUANT_Q4_0)
GK_LOAD8_FROM_CODES(QUANT_Q4_1)
GK_LOAD8_FROM_CODES(QUANT_Q5_0)
GK_LOAD8_FROM_CODES(QUANT_Q5_1)
GK_LOAD8_FROM_CODES(QUANT_Q8_0)
GK_LOAD8_FROM_CODES(QUANT_Q4_K)
GK_LOAD8_FROM_CODES(QUANT_Q5_K)
GK_LOAD8_FROM_CODES(QUANT_Q6_K)
GK_LOAD8_FROM_CODES(QUANT_MXFP4)
#undef GK_LOAD8_FROM_CODES

/* ---- products ---- */

/* One lane's share of the products of a weight row with n inputs xs[t] (n <= GK_MATVEC_TOKENS_MAX):
 * the lane takes pieces lane, lane + width, ... and adds each piece's eight products, in order,
 * to acc[t]. Every input's sum runs in the same order whatever the others are, which is what makes
 * a token's result (and an expert slot's) the same bits in any batch. */
template <int T>
static __device__ __forceinline__ void gk_row_partials(const uint8_t *row, int64_t n_in, int lane, int width, bool row_ok,
                                                       const float *const *xs, int n, float acc[GK_MATVEC_TOKENS_MAX]) {
    const int64_t n_pieces = (n_in + 7) / 8;
    for (int t = 0; t < GK_MATVEC_TOKENS_MAX; t++)
        acc[t] = 0.0f;
    for (int64_t p = lane; row_ok && p < n_pieces; p += width) {
        float v[8];
        gk_load8<T>(row, p, n_in, v);
        const int m = p * 8 + 8 <= n_in ? 8 : (int)(n_in - p * 8);
        for (int t = 0; t < GK_MATVEC_TOKENS_MAX; t++) {
            if (t >= n)
                break;
            const float *xt = xs[t] + p * 8;
            float s = 0.0f;
            for (int i = 0; i < m; i++)
                s += v[i] * xt[i];
            acc[t] += s;
        }
    }
}

/* ROWS output rows per warp (lanes warpSize / ROWS each, so short rows keep every lane busy), for
 * up to GK_MATVEC_TOKENS_MAX tokens: the row is read once for all of them. */
template <int T, int ROWS>
__global__ void gk_matvec_kernel(const uint8_t *w, size_t w_row_bytes, int64_t n_out, int64_t n_in, const float *x,
                                 int64_t x_stride, int n_tok, const float *bias, float *y, int64_t y_stride) {
    const int width = warpSize / ROWS, lane = (int)(threadIdx.x % width), warps = (int)(blockDim.x / warpSize);
    const int64_t r = ((int64_t)blockIdx.x * warps + threadIdx.x / warpSize) * ROWS + (threadIdx.x % warpSize) / width;
    if (r - (threadIdx.x % warpSize) / width >= n_out)
        return; /* the whole warp leaves together: its first row is past the end */
    const bool row_ok = r < n_out; /* lanes of a row past the end still take part in the shuffles */
    const uint8_t *row = w + (size_t)(row_ok ? r : 0) * w_row_bytes;
    const float *xs[GK_MATVEC_TOKENS_MAX];
    for (int t = 0; t < GK_MATVEC_TOKENS_MAX; t++)
        xs[t] = x + (t < n_tok ? t : 0) * x_stride;
    float acc[GK_MATVEC_TOKENS_MAX];
    gk_row_partials<T>(row, n_in, lane, width, row_ok, xs, n_tok, acc);
    for (int t = 0; t < n_tok; t++) {
        const float s = gp_group_sum(acc[t], width);
        if (lane == 0 && row_ok)
            y[t * y_stride + r] = s + (bias ? bias[r] : 0.0f);
    }
}

/* The matrix-vector kernel over routed experts (gk_matmul_id): block b takes rows of expert
 * active[b / row_blocks] as gk_matvec_kernel takes rows, and passes over the expert's slots (perm,
 * from gk_moe_group) GK_MATVEC_TOKENS_MAX at a time. Blocks past the chosen experts leave at once:
 * the grid is sized for the most there can be, the host never learning how many were chosen. */
template <int T, int ROWS>
__global__ void gk_matvec_id_kernel(const uint8_t *w, size_t w_row_bytes, size_t w_expert_bytes, int64_t n_out, int64_t n_in,
                                    const float *x, int64_t x_stride, int x_per_slot, int k, const int32_t *groups, int n_expert,
                                    int64_t row_blocks, float *y, int64_t y_stride) {
    const int64_t a = (int64_t)blockIdx.x / row_blocks, rb = (int64_t)blockIdx.x % row_blocks;
    if (a >= groups[0])
        return;
    const int32_t *offsets = groups + 1, *active = offsets + n_expert + 1, *perm = active + n_expert;
    const int e = active[a];
    const int32_t begin = offsets[e], end = offsets[e + 1];
    const int width = warpSize / ROWS, lane = (int)(threadIdx.x % width), warps = (int)(blockDim.x / warpSize);
    const int64_t r = (rb * warps + threadIdx.x / warpSize) * ROWS + (threadIdx.x % warpSize) / width;
    if (r - (threadIdx.x % warpSize) / width >= n_out)
        return; /* as gk_matvec_kernel: whole warps leave */
    const bool row_ok = r < n_out;
    const uint8_t *row = w + (size_t)e * w_expert_bytes + (size_t)(row_ok ? r : 0) * w_row_bytes;
    for (int32_t g0 = begin; g0 < end; g0 += GK_MATVEC_TOKENS_MAX) {
        const int n = end - g0 < GK_MATVEC_TOKENS_MAX ? (int)(end - g0) : GK_MATVEC_TOKENS_MAX;
        const float *xs[GK_MATVEC_TOKENS_MAX];
        for (int t = 0; t < GK_MATVEC_TOKENS_MAX; t++) {
            const int64_t s = perm[g0 + (t < n ? t : 0)];
            xs[t] = x + (x_per_slot ? s : s / k) * x_stride;
        }
        float acc[GK_MATVEC_TOKENS_MAX];
        gk_row_partials<T>(row, n_in, lane, width, row_ok, xs, n, acc);
        for (int t = 0; t < n; t++) {
            const float s = gp_group_sum(acc[t], width);
            if (lane == 0 && row_ok)
                y[(int64_t)perm[g0 + t] * y_stride + r] = s;
        }
    }
}

#define GK_TILE_K 32 /* values of the inner dimension per step: four pieces */

/* A TILE x TILE tile of y per block of TILE * TILE / 16 threads: each step dequantizes TILE rows x
 * 32 values of w and loads TILE tokens x 32 values of x into shared memory, then each thread adds
 * to its 4 x 4 outputs (rows tx + TILE/4 i, tokens ty + TILE/4 j: neighbouring threads write
 * neighbouring rows). */
template <int T, int TILE>
__global__ void gk_matmul_tile_kernel(const uint8_t *w, size_t w_row_bytes, int64_t n_out, int64_t n_in, const float *x,
                                      int64_t x_stride, int64_t n_tok, const float *bias, float *y, int64_t y_stride) {
    __shared__ float ws[GK_TILE_K][TILE + 1];
    __shared__ float xs[GK_TILE_K][TILE + 1];
    const int64_t row_tiles = (n_out + TILE - 1) / TILE;
    const int64_t row0 = (int64_t)(blockIdx.x % row_tiles) * TILE, tok0 = (int64_t)(blockIdx.x / row_tiles) * TILE;
    const int tid = (int)threadIdx.x, step = TILE / 4, tx = tid % step, ty = tid / step, threads = TILE * TILE / 16;
    const int64_t n_pieces = (n_in + 7) / 8;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    for (int64_t k0 = 0; k0 < n_in; k0 += GK_TILE_K) {
        for (int e = tid; e < TILE * 4; e += threads) { /* TILE rows (and tokens) x 4 pieces */
            const int load_row = e / 4, load_part = e % 4;
            float v[8];
            const int64_t r = row0 + load_row, p = k0 / 8 + load_part;
            if (r < n_out && p < n_pieces)
                gk_load8<T>(w + (size_t)r * w_row_bytes, p, n_in, v);
            else
                for (int i = 0; i < 8; i++)
                    v[i] = 0.0f;
            const int64_t t = tok0 + load_row;
            for (int i = 0; i < 8; i++) {
                const int64_t k = k0 + load_part * 8 + i;
                ws[load_part * 8 + i][load_row] = v[i];
                xs[load_part * 8 + i][load_row] = t < n_tok && k < n_in ? x[t * x_stride + k] : 0.0f;
            }
        }
        __syncthreads();
        for (int k = 0; k < GK_TILE_K; k++) {
            float a[4], b[4];
            for (int i = 0; i < 4; i++) {
                a[i] = ws[k][tx + step * i];
                b[i] = xs[k][ty + step * i];
            }
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const int64_t r = row0 + tx + step * i, t = tok0 + ty + step * j;
            if (r < n_out && t < n_tok)
                y[t * y_stride + r] = acc[i][j] + (bias ? bias[r] : 0.0f);
        }
}

/* Whether a format has integer codes (gk_load8q): every quantized one, not the float ones. */
template <int T> struct gk_codes { static const bool value = true; };
template <> struct gk_codes<QUANT_F32> { static const bool value = false; };
template <> struct gk_codes<QUANT_F16> { static const bool value = false; };
template <> struct gk_codes<QUANT_BF16> { static const bool value = false; };

/* Four signed bytes as one word, the first lowest (gp_dot4's operands). */
static __device__ __forceinline__ int gk_pack4(const int8_t *q) {
    return (int)((uint32_t)(uint8_t)q[0] | (uint32_t)(uint8_t)q[1] << 8 | (uint32_t)(uint8_t)q[2] << 16 | (uint32_t)(uint8_t)q[3] << 24);
}

/* The int8 prefill tile: 64 x 64 outputs per block of 256 threads as gk_matmul_tile_kernel, but
 * with weights as integer codes (a scale and a minimum per piece of eight) and each token's 32
 * values of a step quantized to 8 bits with one scale (round to nearest, as the CPU's 8-bit
 * activations), so that a piece's product is two four-byte integer dot products (gp_dot4):
 * sum w x = xd * (s * sum q xq + m * sum xq). Rows are whole 32-value blocks (every quantized
 * format's), so a step never runs past a row. */
template <int T>
__global__ void gk_matmul_q8_tile_kernel(const uint8_t *w, size_t w_row_bytes, int64_t n_out, int64_t n_in, const float *x,
                                         int64_t x_stride, int64_t n_tok, const float *bias, float *y, int64_t y_stride) {
    __shared__ int wq[64][GK_TILE_K / 4 + 1]; /* a row's 32 codes of the step as 8 words (+1 against bank conflicts) */
    __shared__ float ws[64][4], wm[64][4];  /* scale and minimum of each piece */
    __shared__ int xq[64][GK_TILE_K / 4 + 1];
    __shared__ int xsum[64][4];             /* sum of each piece's 8 codes */
    __shared__ float xd[64];                /* each token's scale for the step */
    const int64_t row_tiles = (n_out + 63) / 64;
    const int64_t row0 = (int64_t)(blockIdx.x % row_tiles) * 64, tok0 = (int64_t)(blockIdx.x / row_tiles) * 64;
    const int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int load_row = tid / 4, load_part = tid % 4; /* 256 threads: 64 rows (or tokens) x 4 pieces */
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    for (int64_t k0 = 0; k0 < n_in; k0 += GK_TILE_K) {
        int8_t q[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
        float s = 0.0f, m = 0.0f;
        const int64_t r = row0 + load_row, t = tok0 + load_row;
        if (r < n_out)
            gk_load8q<T>(w + (size_t)r * w_row_bytes, k0 / 8 + load_part, q, &s, &m);
        ws[load_row][load_part] = s;
        wm[load_row][load_part] = m;
        float xv[8], amax = 0.0f;
        for (int i = 0; i < 8; i++) {
            xv[i] = t < n_tok ? x[t * x_stride + k0 + load_part * 8 + i] : 0.0f;
            amax = fabsf(xv[i]) > amax ? fabsf(xv[i]) : amax;
        }
        /* the token's four pieces are lanes tid ^ 1, tid ^ 2 of one warp */
        float other = gp_shfl_xor(amax, 1);
        amax = other > amax ? other : amax;
        other = gp_shfl_xor(amax, 2);
        amax = other > amax ? other : amax;
        const float d = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        int8_t xc[8];
        int sum = 0;
        for (int i = 0; i < 8; i++) {
            xc[i] = (int8_t)rintf(xv[i] * inv);
            sum += xc[i];
        }
        for (int h = 0; h < 2; h++) {
            wq[load_row][load_part * 2 + h] = gk_pack4(q + 4 * h);
            xq[load_row][load_part * 2 + h] = gk_pack4(xc + 4 * h);
        }
        xsum[load_row][load_part] = sum;
        if (load_part == 0)
            xd[load_row] = d;
        __syncthreads();
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 4; i++) {
                const int rr = tx + 16 * i, w0 = wq[rr][2 * k], w1 = wq[rr][2 * k + 1];
                const float sr = ws[rr][k], mr = wm[rr][k];
                for (int j = 0; j < 4; j++) {
                    const int tt = ty + 16 * j;
                    const int dot = gp_dot4(w1, xq[tt][2 * k + 1], gp_dot4(w0, xq[tt][2 * k], 0));
                    acc[i][j] += xd[tt] * (sr * (float)dot + mr * (float)xsum[tt][k]);
                }
            }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const int64_t rr = row0 + tx + 16 * i, tt = tok0 + ty + 16 * j;
            if (rr < n_out && tt < n_tok)
                y[tt * y_stride + rr] = acc[i][j] + (bias ? bias[rr] : 0.0f);
        }
}

/* Launches the int8 tile where the format has codes; -1 for the float formats. */
template <int T, bool CODES = gk_codes<T>::value> struct gk_int8_tiles {
    static int launch(gp_stream, const uint8_t *, size_t, int64_t, int64_t, const float *, int64_t, int64_t, const float *, float *,
                      int64_t) {
        return -1;
    }
};
template <int T> struct gk_int8_tiles<T, true> {
    static int launch(gp_stream s, const uint8_t *w, size_t w_row_bytes, int64_t n_out, int64_t n_in, const float *x,
                      int64_t x_stride, int64_t n_tok, const float *bias, float *y, int64_t y_stride) {
        const int64_t tiles = ((n_out + 63) / 64) * ((n_tok + 63) / 64);
        GP_LAUNCH(gk_matmul_q8_tile_kernel<T>, dim3((unsigned)tiles), dim3(256), 0, s, w, w_row_bytes, n_out, n_in, x, x_stride,
                  n_tok, bias, y, y_stride);
        return 0;
    }
};

/* One block per looked-up row. */
template <int T>
__global__ void gk_get_rows_kernel(const uint8_t *table, size_t row_bytes, int64_t ne0, const int32_t *ids, float *y,
                                   int64_t y_stride) {
    const uint8_t *row = table + (size_t)ids[blockIdx.x] * row_bytes;
    float *out = y + (int64_t)blockIdx.x * y_stride;
    for (int64_t p = threadIdx.x; p < (ne0 + 7) / 8; p += blockDim.x) {
        float v[8];
        gk_load8<T>(row, p, ne0, v);
        for (int i = 0; i < 8 && p * 8 + i < ne0; i++)
            out[p * 8 + i] = v[i];
    }
}

#define GK_WARPS_PER_BLOCK 4
#define GK_BLOCK_THREADS 256 /* threads per block of the row-wise and elementwise kernels */

/* The variants: decode as (rows per warp, warps per block), prefill as the tile size. */
static const int gk_decode_rows[] = { 1, 1, 1, 2, 2, 2, 4, 4, 4 };
static const int gk_decode_warps[] = { 2, 4, 8, 2, 4, 8, 2, 4, 8 };
static const int gk_prefill_tile[] = { 64, 32, 64 };
static const bool gk_prefill_int8[] = { false, false, true };
#define GK_DECODE_VARIANTS ((int)(sizeof gk_decode_rows / sizeof gk_decode_rows[0]))
#define GK_PREFILL_VARIANTS ((int)(sizeof gk_prefill_tile / sizeof gk_prefill_tile[0]))

extern "C" int gk_variants(gk_kind kind) { return kind == GK_DECODE ? GK_DECODE_VARIANTS : GK_PREFILL_VARIANTS; }

extern "C" const char *gk_variant_name(gk_kind kind, int v) {
    static const char *decode[] = { "1 row/warp, 2 warps/block", "1 row/warp, 4 warps/block", "1 row/warp, 8 warps/block",
                                    "2 rows/warp, 2 warps/block", "2 rows/warp, 4 warps/block", "2 rows/warp, 8 warps/block",
                                    "4 rows/warp, 2 warps/block", "4 rows/warp, 4 warps/block", "4 rows/warp, 8 warps/block" };
    static const char *prefill[] = { "64x64 tiles", "32x32 tiles", "64x64 int8 tiles" };
    if (v < 0 || v >= gk_variants(kind))
        return "?";
    return kind == GK_DECODE ? decode[v] : prefill[v];
}

extern "C" gk_kind gk_kind_of(int64_t n_tok) { return n_tok <= GK_DECODE_TOKENS_MAX ? GK_DECODE : GK_PREFILL; }

/* The rule: a row per warp while the row gives every lane two pieces of eight values or more, else
 * rows share a warp so that lanes do not idle; four warps a block. Tiles of 64 once the rows fill
 * one, else 32 (fewer idle threads at the edge). */
extern "C" int gk_default_variant(gk_kind kind, int64_t n_out, int64_t n_in, int warp) {
    if (kind == GK_PREFILL)
        return n_out >= 64 ? 0 : 1;
    const int64_t pieces = (n_in + 7) / 8;
    const int rows = pieces >= 2 * warp ? 1 : pieces >= warp ? 2 : 4;
    return (rows == 1 ? 0 : rows == 2 ? 3 : 6) + 1; /* 4 warps/block */
}

template <int T, int ROWS> static void gk_matvec_launch(const gk_exec *ex, int warps, const uint8_t *w, size_t w_row_bytes,
                                                        int64_t n_out, int64_t n_in, const float *x, int64_t x_stride,
                                                        int64_t n_tok, const float *bias, float *y, int64_t y_stride) {
    const int64_t rows_per_block = (int64_t)warps * ROWS;
    const dim3 grid((unsigned)((n_out + rows_per_block - 1) / rows_per_block)), block((unsigned)(warps * ex->warp));
    /* passes of at most GK_MATVEC_TOKENS_MAX tokens: each token's sums are the same in any pass */
    for (int64_t t0 = 0; t0 < n_tok; t0 += GK_MATVEC_TOKENS_MAX) {
        const int n = (int)(n_tok - t0 < GK_MATVEC_TOKENS_MAX ? n_tok - t0 : GK_MATVEC_TOKENS_MAX);
        GP_LAUNCH((gk_matvec_kernel<T, ROWS>), grid, block, 0, (gp_stream)ex->stream, w, w_row_bytes, n_out, n_in,
                  x + t0 * x_stride, x_stride, n, bias, y + t0 * y_stride, y_stride);
    }
}

template <int T> static int gk_matmul_typed(const gk_exec *ex, int variant, const void *w, size_t w_row_bytes, int64_t n_out,
                                            int64_t n_in, const float *x, int64_t x_stride, int64_t n_tok, const float *bias,
                                            float *y, int64_t y_stride) {
    const gp_stream s = (gp_stream)ex->stream;
    const uint8_t *wb = (const uint8_t *)w;
    const gk_kind kind = gk_kind_of(n_tok);
    const int v = variant == GK_VARIANT_DEFAULT ? gk_default_variant(kind, n_out, n_in, ex->warp) : variant;
    if (v < 0 || v >= gk_variants(kind))
        return -1;
    if (kind == GK_DECODE) {
        const int rows = gk_decode_rows[v], warps = gk_decode_warps[v];
        if (rows == 1)
            gk_matvec_launch<T, 1>(ex, warps, wb, w_row_bytes, n_out, n_in, x, x_stride, n_tok, bias, y, y_stride);
        else if (rows == 2)
            gk_matvec_launch<T, 2>(ex, warps, wb, w_row_bytes, n_out, n_in, x, x_stride, n_tok, bias, y, y_stride);
        else
            gk_matvec_launch<T, 4>(ex, warps, wb, w_row_bytes, n_out, n_in, x, x_stride, n_tok, bias, y, y_stride);
    } else if (gk_prefill_int8[v]) {
        return gk_int8_tiles<T>::launch(s, wb, w_row_bytes, n_out, n_in, x, x_stride, n_tok, bias, y, y_stride);
    } else if (gk_prefill_tile[v] == 64) {
        const int64_t tiles = ((n_out + 63) / 64) * ((n_tok + 63) / 64);
        GP_LAUNCH((gk_matmul_tile_kernel<T, 64>), dim3((unsigned)tiles), dim3(64 * 64 / 16), 0, s, wb, w_row_bytes, n_out, n_in,
                  x, x_stride, n_tok, bias, y, y_stride);
    } else {
        const int64_t tiles = ((n_out + 31) / 32) * ((n_tok + 31) / 32);
        GP_LAUNCH((gk_matmul_tile_kernel<T, 32>), dim3((unsigned)tiles), dim3(32 * 32 / 16), 0, s, wb, w_row_bytes, n_out, n_in,
                  x, x_stride, n_tok, bias, y, y_stride);
    }
    return 0;
}

template <int T> static int gk_get_rows_typed(const gk_exec *ex, const void *table, size_t row_bytes, int64_t ne0,
                                              const int32_t *ids, int64_t n, float *y, int64_t y_stride) {
    GP_LAUNCH(gk_get_rows_kernel<T>, dim3((unsigned)n), dim3(GK_BLOCK_THREADS), 0, (gp_stream)ex->stream,
              (const uint8_t *)table, row_bytes, ne0, ids, y, y_stride);
    return 0;
}

template <int T, int ROWS> static int gk_matvec_id_launch(const gk_exec *ex, int warps, const uint8_t *w, size_t w_row_bytes,
                                                           size_t w_expert_bytes, int64_t n_out, int64_t n_in, const float *x,
                                                           int64_t x_stride, int x_per_slot, const int32_t *groups, int n_expert,
                                                           int64_t n_tok, int k, float *y, int64_t y_stride) {
    const int64_t rows_per_block = (int64_t)warps * ROWS, row_blocks = (n_out + rows_per_block - 1) / rows_per_block;
    const int64_t most_active = n_tok * k < n_expert ? n_tok * k : n_expert;
    if (most_active * row_blocks > INT32_MAX)
        return -1; /* a grid too long for one launch */
    GP_LAUNCH((gk_matvec_id_kernel<T, ROWS>), dim3((unsigned)(most_active * row_blocks)), dim3((unsigned)(warps * ex->warp)), 0,
              (gp_stream)ex->stream, w, w_row_bytes, w_expert_bytes, n_out, n_in, x, x_stride, x_per_slot, k, groups, n_expert,
              row_blocks, y, y_stride);
    return 0;
}

/* Decode variants only: the slots of one expert are few (a batch's tokens times k over the
 * experts), and a slot's bits must not depend on how many share its expert. */
template <int T> static int gk_matmul_id_typed(const gk_exec *ex, int variant, const void *w, size_t w_row_bytes,
                                               size_t w_expert_bytes, int64_t n_out, int64_t n_in, const float *x, int64_t x_stride,
                                               int x_per_slot, const int32_t *groups, int n_expert, int64_t n_tok, int k, float *y,
                                               int64_t y_stride) {
    const int v = variant == GK_VARIANT_DEFAULT ? gk_default_variant(GK_DECODE, n_out, n_in, ex->warp) : variant;
    if (v < 0 || v >= gk_variants(GK_DECODE))
        return -1;
    const int rows = gk_decode_rows[v], warps = gk_decode_warps[v];
    const uint8_t *wb = (const uint8_t *)w;
    if (rows == 1)
        return gk_matvec_id_launch<T, 1>(ex, warps, wb, w_row_bytes, w_expert_bytes, n_out, n_in, x, x_stride, x_per_slot, groups,
                                         n_expert, n_tok, k, y, y_stride);
    if (rows == 2)
        return gk_matvec_id_launch<T, 2>(ex, warps, wb, w_row_bytes, w_expert_bytes, n_out, n_in, x, x_stride, x_per_slot, groups,
                                         n_expert, n_tok, k, y, y_stride);
    return gk_matvec_id_launch<T, 4>(ex, warps, wb, w_row_bytes, w_expert_bytes, n_out, n_in, x, x_stride, x_per_slot, groups,
                                     n_expert, n_tok, k, y, y_stride);
}

/* One switch over the block formats, shared by every launcher that reads weights. */
#define GK_FOR_TYPE(type, call)                                                                                          \
    switch (type) {                                                                                                      \
    case QUANT_F32: return call(QUANT_F32);                                                                              \
    case QUANT_F16: return call(QUANT_F16);                                                                              \
    case QUANT_BF16: return call(QUANT_BF16);                                                                            \
    case QUANT_Q4_0: return call(QUANT_Q4_0);                                                                            \
    case QUANT_Q4_1: return call(QUANT_Q4_1);                                                                            \
    case QUANT_Q5_0: return call(QUANT_Q5_0);                                                                            \
    case QUANT_Q5_1: return call(QUANT_Q5_1);                                                                            \
    case QUANT_Q8_0: return call(QUANT_Q8_0);                                                                            \
    case QUANT_Q4_K: return call(QUANT_Q4_K);                                                                            \
    case QUANT_Q5_K: return call(QUANT_Q5_K);                                                                            \
    case QUANT_Q6_K: return call(QUANT_Q6_K);                                                                            \
    case QUANT_MXFP4: return call(QUANT_MXFP4);                                                                          \
    default: return -1;                                                                                                  \
    }

/* the formats' block sizes: a quantized row is a whole number of blocks */
static int64_t gk_block_values(uint32_t type) {
    switch (type) {
    case QUANT_F32: case QUANT_F16: case QUANT_BF16: return 1;
    case QUANT_Q4_0: case QUANT_Q4_1: case QUANT_Q5_0: case QUANT_Q5_1: case QUANT_Q8_0: case QUANT_MXFP4: return 32;
    case QUANT_Q4_K: case QUANT_Q5_K: case QUANT_Q6_K: return 256;
    default: return 0;
    }
}

extern "C" int gk_supports(uint32_t type) { return gk_block_values(type) > 0; }

/* Whether a format has integer codes for the int8 tiles: gk_codes, as their launcher reads it. */
static int gk_has_codes(uint32_t type) {
#define GK_HAS_CODES(T) (int)gk_codes<T>::value
    GK_FOR_TYPE(type, GK_HAS_CODES)
#undef GK_HAS_CODES
}

extern "C" int gk_variant_supports(gk_kind kind, int variant, uint32_t type) {
    if (variant < 0 || variant >= gk_variants(kind) || !gk_supports(type))
        return 0;
    return !(kind == GK_PREFILL && gk_prefill_int8[variant] && !gk_has_codes(type));
}

extern "C" int gk_matmul(const gk_exec *ex, int variant, uint32_t type, const void *w, size_t w_row_bytes, int64_t n_out,
                         int64_t n_in, const float *x, int64_t x_stride, int64_t n_tok, const float *bias, float *y,
                         int64_t y_stride) {
    const int64_t bv = gk_block_values(type);
    if (bv == 0 || n_in <= 0 || n_in % bv != 0 || n_out <= 0 || n_tok <= 0)
        return -1;
#define GK_MATMUL_CALL(T) gk_matmul_typed<T>(ex, variant, w, w_row_bytes, n_out, n_in, x, x_stride, n_tok, bias, y, y_stride)
    GK_FOR_TYPE(type, GK_MATMUL_CALL)
#undef GK_MATMUL_CALL
}

extern "C" int gk_get_rows(const gk_exec *ex, uint32_t type, const void *table, size_t row_bytes, int64_t ne0, const int32_t *ids,
                           int64_t n, float *y, int64_t y_stride) {
    const int64_t bv = gk_block_values(type);
    if (bv == 0 || ne0 <= 0 || ne0 % bv != 0 || n < 0)
        return -1;
    if (n == 0)
        return 0;
#define GK_GET_ROWS_CALL(T) gk_get_rows_typed<T>(ex, table, row_bytes, ne0, ids, n, y, y_stride)
    GK_FOR_TYPE(type, GK_GET_ROWS_CALL)
#undef GK_GET_ROWS_CALL
}

extern "C" int gk_matmul_id(const gk_exec *ex, int variant, uint32_t type, const void *w, size_t w_row_bytes, size_t w_expert_bytes,
                            int64_t n_out, int64_t n_in, const float *x, int64_t x_stride, int x_per_slot, const int32_t *groups,
                            int n_expert, int64_t n_tok, int k, float *y, int64_t y_stride) {
    const int64_t bv = gk_block_values(type);
    if (bv == 0 || n_in <= 0 || n_in % bv != 0 || n_out <= 0 || n_tok < 0 || k <= 0 || k > GK_EXPERTS_USED_MAX || n_expert < k ||
        n_expert > GK_EXPERTS_MAX)
        return -1;
    if (n_tok == 0)
        return 0;
#define GK_MATMUL_ID_CALL(T)                                                                                                   \
    gk_matmul_id_typed<T>(ex, variant, w, w_row_bytes, w_expert_bytes, n_out, n_in, x, x_stride, x_per_slot, groups, n_expert, \
                          n_tok, k, y, y_stride)
    GK_FOR_TYPE(type, GK_MATMUL_ID_CALL)
#undef GK_MATMUL_ID_CALL
}

/* ---- norms and elementwise operations ---- */

/* One warp per group of `group` values (a whole row, or one head of it). */
__global__ void gk_rms_norm_kernel(const float *x, int64_t x_stride, int64_t n_groups, int64_t groups_per_row, const float *w,
                                   int64_t group, float eps, float *y, int64_t y_stride) {
    const int lane = (int)(threadIdx.x % warpSize);
    const int64_t g = (int64_t)blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize;
    if (g >= n_groups)
        return;
    const int64_t t = g / groups_per_row, off = (g % groups_per_row) * group;
    const float *xr = x + t * x_stride + off;
    float *yr = y + t * y_stride + off;
    float ss = 0.0f;
    for (int64_t i = lane; i < group; i += warpSize)
        ss += xr[i] * xr[i];
    ss = gp_warp_sum(ss);
    const float scale = 1.0f / sqrtf(ss / (float)group + eps);
    for (int64_t i = lane; i < group; i += warpSize)
        yr[i] = w ? xr[i] * scale * w[i] : xr[i] * scale;
}

enum gk_elementwise { GK_ADD, GK_SCALE, GK_SOFTCAP, GK_SILU_MUL, GK_GELU_MUL, GK_SWIGLU_OAI };

/* gpt-oss's clamped SwiGLU (OpenAI's reference swiglu, alpha 1.702, limit 7; the CPU's
 * cpu_glu_scalar): a NaN clamps to the limit there, so the comparisons are written the same way */
static __device__ __forceinline__ float gk_swiglu_oai(float g, float u) {
    const float v = g < 7.0f ? g : 7.0f;
    float w = u < 7.0f ? u : 7.0f;
    w = w > -7.0f ? w : -7.0f;
    return v / (1.0f + expf(-1.702f * v)) * (w + 1.0f);
}

/* One thread per value of n_rows x ne0: y = op(a, b) (b unused by scale and softcap). */
template <int OP>
__global__ void gk_elementwise_kernel(const float *a, int64_t a_stride, const float *b, int64_t b_stride, float *y,
                                      int64_t y_stride, int64_t n_rows, int64_t ne0, float c) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_rows * ne0)
        return;
    const int64_t t = e / ne0, i = e % ne0;
    const float v = a[t * a_stride + i];
    float r;
    if (OP == GK_ADD) {
        r = v + b[t * b_stride + i];
    } else if (OP == GK_SCALE) {
        r = v * c;
    } else if (OP == GK_SOFTCAP) {
        r = c * tanhf(v / c);
    } else if (OP == GK_SILU_MUL) {
        r = v / (1.0f + expf(-v)) * b[t * b_stride + i];
    } else if (OP == GK_SWIGLU_OAI) {
        r = gk_swiglu_oai(v, b[t * b_stride + i]);
    } else {
        r = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))) * b[t * b_stride + i];
    }
    y[t * y_stride + i] = r;
}

template <int OP> static int gk_elementwise(const gk_exec *ex, const float *a, int64_t as, const float *b, int64_t bs, float *y,
                                            int64_t ys, int64_t n_rows, int64_t ne0, float c) {
    if (n_rows < 0 || ne0 < 0)
        return -1;
    const int64_t n = n_rows * ne0;
    if (n == 0)
        return 0;
    GP_LAUNCH(gk_elementwise_kernel<OP>, dim3((unsigned)((n + GK_BLOCK_THREADS - 1) / GK_BLOCK_THREADS)), dim3(GK_BLOCK_THREADS), 0,
              (gp_stream)ex->stream, a, as, b, bs, y, ys, n_rows, ne0, c);
    return 0;
}

extern "C" int gk_rms_norm(const gk_exec *ex, const float *x, int64_t x_stride, int64_t n_rows, int64_t ne0, const float *w,
                           int64_t group, float eps, float *y, int64_t y_stride) {
    if (group <= 0 || ne0 % group != 0 || n_rows < 0)
        return -1;
    const int64_t n_groups = n_rows * (ne0 / group);
    if (n_groups == 0)
        return 0;
    GP_LAUNCH(gk_rms_norm_kernel, dim3((unsigned)((n_groups + GK_WARPS_PER_BLOCK - 1) / GK_WARPS_PER_BLOCK)),
              dim3(GK_WARPS_PER_BLOCK * ex->warp), 0, (gp_stream)ex->stream, x, x_stride, n_groups, ne0 / group, w, group, eps,
              y, y_stride);
    return 0;
}

extern "C" int gk_add(const gk_exec *ex, const float *a, int64_t a_stride, const float *b, int64_t b_stride, float *y,
                      int64_t y_stride, int64_t n_rows, int64_t ne0) {
    return gk_elementwise<GK_ADD>(ex, a, a_stride, b, b_stride, y, y_stride, n_rows, ne0, 0.0f);
}

extern "C" int gk_scale(const gk_exec *ex, float *x, int64_t x_stride, int64_t n_rows, int64_t ne0, float s) {
    return gk_elementwise<GK_SCALE>(ex, x, x_stride, x, x_stride, x, x_stride, n_rows, ne0, s);
}

extern "C" int gk_softcap(const gk_exec *ex, float *x, int64_t x_stride, int64_t n_rows, int64_t ne0, float cap) {
    if (!(cap > 0.0f))
        return -1;
    return gk_elementwise<GK_SOFTCAP>(ex, x, x_stride, x, x_stride, x, x_stride, n_rows, ne0, cap);
}

extern "C" int gk_glu(const gk_exec *ex, const float *gate, int64_t gate_stride, const float *up, int64_t up_stride, float *y,
                      int64_t y_stride, int64_t n_rows, int64_t ne0, int act) {
    if (act == 0)
        return gk_elementwise<GK_SILU_MUL>(ex, gate, gate_stride, up, up_stride, y, y_stride, n_rows, ne0, 0.0f);
    if (act == 1)
        return gk_elementwise<GK_GELU_MUL>(ex, gate, gate_stride, up, up_stride, y, y_stride, n_rows, ne0, 0.0f);
    if (act == 2)
        return gk_elementwise<GK_SWIGLU_OAI>(ex, gate, gate_stride, up, up_stride, y, y_stride, n_rows, ne0, 0.0f);
    return -1;
}

/* ---- rotary embedding ---- */

/* One thread per (token, pair index i): the angle in double, as the CPU reference takes it (at
 * long positions float loses the low bits of pos * freq), with the same operations in the same
 * order (cpu.c's rope_angle), then every head of the token. */
__global__ void gk_rope_kernel(float *x, int64_t x_stride, int64_t n_tok, const int32_t *pos, gk_rope_params p) {
    const int half = p.rope_dim / 2;
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_tok * half)
        return;
    const int64_t t = e / half;
    const int i = (int)(e % half);
    double extrap = (double)pos[t] * pow((double)p.base, -2.0 * i / p.rope_dim);
    if (p.freq_factors)
        extrap /= (double)p.freq_factors[i];
    const double interp = (double)p.freq_scale * extrap;
    double theta = interp;
    if (p.ext_factor != 0.0f) { /* YaRN: low pairs (long wavelengths) interpolate, high ones extrapolate */
        const double span = (double)p.corr_high - (double)p.corr_low;
        double ramp = ((double)i - (double)p.corr_low) / (span > 0.001 ? span : 0.001);
        ramp = ramp < 0.0 ? 0.0 : ramp > 1.0 ? 1.0 : ramp;
        const double mix = (1.0 - ramp) * (double)p.ext_factor;
        theta = interp * (1.0 - mix) + extrap * mix;
    }
    const float c = (float)(cos(theta) * (double)p.mscale), s = (float)(sin(theta) * (double)p.mscale);
    const int a = p.neox ? i : 2 * i, b = p.neox ? i + half : 2 * i + 1;
    for (int h = 0; h < p.n_head; h++) {
        float *v = x + t * x_stride + (int64_t)h * p.head_dim;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
    }
}

extern "C" int gk_rope(const gk_exec *ex, float *x, int64_t x_stride, int64_t n_tok, const int32_t *pos, const gk_rope_params *p) {
    if (p->rope_dim <= 0 || p->rope_dim > p->head_dim || p->rope_dim % 2 != 0 || p->n_head <= 0 || n_tok < 0)
        return -1;
    const int64_t n = n_tok * (p->rope_dim / 2);
    if (n == 0)
        return 0;
    GP_LAUNCH(gk_rope_kernel, dim3((unsigned)((n + GK_BLOCK_THREADS - 1) / GK_BLOCK_THREADS)), dim3(GK_BLOCK_THREADS), 0,
              (gp_stream)ex->stream, x, x_stride, n_tok, pos, *p);
    return 0;
}

/* ---- KV cache ---- */

__global__ void gk_f32_to_f16_kernel(const float *src, int64_t src_stride, uint16_t *dst, int64_t dst_stride, int64_t n_rows,
                                     int64_t ne0) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_rows * ne0)
        return;
    const int64_t t = e / ne0, i = e % ne0;
    dst[t * dst_stride + i] = gp_float_to_half(src[t * src_stride + i]);
}

extern "C" int gk_f32_to_f16_rows(const gk_exec *ex, const float *src, int64_t src_stride, uint16_t *dst, int64_t dst_stride,
                                  int64_t n_rows, int64_t ne0) {
    if (n_rows < 0 || ne0 < 0)
        return -1;
    const int64_t n = n_rows * ne0;
    if (n == 0)
        return 0;
    GP_LAUNCH(gk_f32_to_f16_kernel, dim3((unsigned)((n + GK_BLOCK_THREADS - 1) / GK_BLOCK_THREADS)), dim3(GK_BLOCK_THREADS), 0,
              (gp_stream)ex->stream, src, src_stride, dst, dst_stride, n_rows, ne0);
    return 0;
}

/* ---- attention ---- */

#define GK_DIMS_PER_LANE (GK_HEAD_DIM_MAX / GP_WARP_MIN)

template <bool F16> static __device__ __forceinline__ float gk_kv(const void *base, int64_t i) {
    return F16 ? gp_half_to_float(((const uint16_t *)base)[i]) : ((const float *)base)[i];
}

/* One warp per (token, query head). Keys come a warp at a time, one per lane: each lane scores
 * its key against the whole query, the warp agrees on the new running maximum, and each lane then
 * adds the tile's values (weights shuffled from their lanes) to the output dimensions it holds. */
template <bool F16>
__global__ void gk_attention_kernel(const float *q, int64_t q_stride, const void *k, const void *v, int64_t kv_stride,
                                    int64_t kv_rows, const int32_t *pos, int64_t n_tok, int n_head, int n_head_kv, int head_dim,
                                    float scale, float softcap, int window, const float *sinks, float *out, int64_t out_stride) {
    const int lane = (int)(threadIdx.x % warpSize), width = warpSize;
    const int64_t item = (int64_t)blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize;
    if (item >= n_tok * n_head)
        return;
    const int64_t t = item / n_head;
    const int h = (int)(item % n_head), hk = h / (n_head / n_head_kv);
    const float *qh = q + t * q_stride + (int64_t)h * head_dim;
    const int64_t p = pos[t], first = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
    float m = -INFINITY, l = 0.0f, acc[GK_DIMS_PER_LANE];
    for (int i = 0; i < GK_DIMS_PER_LANE; i++)
        acc[i] = 0.0f;
    for (int64_t s0 = first; s0 <= p; s0 += width) {
        const int64_t j = s0 + lane;
        float s = -INFINITY;
        if (j <= p) {
            const int64_t kr = (j % kv_rows) * kv_stride + (int64_t)hk * head_dim;
            float dot = 0.0f;
            for (int d = 0; d < head_dim; d++)
                dot += qh[d] * gk_kv<F16>(k, kr + d);
            s = dot * scale;
            if (softcap > 0.0f)
                s = softcap * tanhf(s / softcap);
        }
        const float tile_max = gp_warp_max(s), m_new = tile_max > m ? tile_max : m;
        const float e = j <= p ? expf(s - m_new) : 0.0f, keep = expf(m - m_new); /* exp(-inf) = 0 on the first tile */
        l = l * keep + gp_warp_sum(e);
        m = m_new;
        for (int i = 0; i < GK_DIMS_PER_LANE; i++)
            acc[i] *= keep;
        const int n = p + 1 - s0 < width ? (int)(p + 1 - s0) : width;
        for (int kk = 0; kk < n; kk++) {
            const float w = gp_shfl(e, kk);
            const int64_t vr = ((s0 + kk) % kv_rows) * kv_stride + (int64_t)hk * head_dim;
            for (int i = 0; i < GK_DIMS_PER_LANE; i++) {
                const int d = lane + i * width;
                if (d < head_dim)
                    acc[i] += w * gk_kv<F16>(v, vr + d);
            }
        }
    }
    if (sinks) /* the head's sink joins the denominator only (bk_attention_params) */
        l += expf(sinks[h] - m);
    float *o = out + t * out_stride + (int64_t)h * head_dim;
    for (int i = 0; i < GK_DIMS_PER_LANE; i++) {
        const int d = lane + i * width;
        if (d < head_dim)
            o[d] = acc[i] / l;
    }
}

extern "C" int gk_attention(const gk_exec *ex, const float *q, int64_t q_stride, const void *k, const void *v, int kv_f16,
                            int64_t kv_stride, int64_t kv_rows, const int32_t *pos, int64_t n_tok, int n_head, int n_head_kv,
                            int head_dim, float scale, float softcap, int window, const float *sinks, float *out,
                            int64_t out_stride) {
    if (n_head_kv <= 0 || n_head % n_head_kv != 0 || head_dim <= 0 || head_dim > GK_HEAD_DIM_MAX || kv_rows <= 0 || n_tok < 0)
        return -1;
    const int64_t items = n_tok * n_head;
    if (items == 0)
        return 0;
    const dim3 grid((unsigned)((items + GK_WARPS_PER_BLOCK - 1) / GK_WARPS_PER_BLOCK)), block(GK_WARPS_PER_BLOCK * ex->warp);
    const gp_stream s = (gp_stream)ex->stream;
    if (kv_f16)
        GP_LAUNCH(gk_attention_kernel<true>, grid, block, 0, s, q, q_stride, k, v, kv_stride, kv_rows, pos, n_tok, n_head,
                  n_head_kv, head_dim, scale, softcap, window, sinks, out, out_stride);
    else
        GP_LAUNCH(gk_attention_kernel<false>, grid, block, 0, s, q, q_stride, k, v, kv_stride, kv_rows, pos, n_tok, n_head,
                  n_head_kv, head_dim, scale, softcap, window, sinks, out, out_stride);
    return 0;
}

/* ---- routed experts ---- */

#define GK_ROUTE_PER_LANE (GK_EXPERTS_MAX / GP_WARP_MIN)

/* One warp per token: each lane holds logits lane, lane + warpSize, ...; the softmax's maximum and
 * sum are warp reductions, and each of the k rounds takes the largest logit not yet chosen (ties:
 * the lower index) by a warp-wide arg-max, its owner marking it chosen. */
__global__ void gk_moe_route_kernel(const float *logits, int64_t logits_stride, int64_t n_tok, int n_expert, int k, int renorm,
                                    int32_t *ids, int64_t ids_stride, float *weights, int64_t weights_stride) {
    const int lane = (int)(threadIdx.x % warpSize);
    const int64_t t = (int64_t)blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize;
    if (t >= n_tok)
        return;
    const float *l = logits + t * logits_stride;
    float v[GK_ROUTE_PER_LANE];
    float m = -INFINITY;
    for (int i = 0; i < GK_ROUTE_PER_LANE; i++) {
        const int e = lane + i * warpSize;
        v[i] = e < n_expert ? l[e] : -INFINITY;
        m = v[i] > m ? v[i] : m;
    }
    m = gp_warp_max(m);
    float sum = 0.0f;
    for (int i = 0; i < GK_ROUTE_PER_LANE; i++)
        if (lane + i * warpSize < n_expert)
            sum += expf(v[i] - m);
    sum = gp_warp_sum(sum);
    uint32_t chosen = 0; /* bit i: this lane's logit i is taken */
    float chosen_sum = 0.0f; /* of the chosen exponentials: the renormalized softmax's denominator */
    for (int j = 0; j < k; j++) {
        float best = -INFINITY;
        int best_e = n_expert; /* none yet */
        for (int i = 0; i < GK_ROUTE_PER_LANE; i++) {
            const int e = lane + i * warpSize;
            if (e < n_expert && !(chosen >> i & 1u) && (best_e == n_expert || v[i] > best)) {
                best = v[i];
                best_e = e;
            }
        }
        for (int mask = warpSize / 2; mask > 0; mask >>= 1) {
            const float o = gp_shfl_xor(best, mask);
            const int oe = gp_shfl_xor(best_e, mask);
            if (oe != n_expert && (best_e == n_expert || o > best || (o == best && oe < best_e))) {
                best = o;
                best_e = oe;
            }
        }
        if (best_e % warpSize == lane)
            chosen |= 1u << (best_e / warpSize);
        if (lane == 0) {
            const float p = expf(best - m);
            ids[t * ids_stride + j] = best_e;
            weights[t * weights_stride + j] = p; /* divided below, once the denominator is known */
            chosen_sum += p;
        }
    }
    if (lane == 0)
        for (int j = 0; j < k; j++)
            weights[t * weights_stride + j] /= renorm ? chosen_sum : sum;
}

extern "C" int gk_moe_route(const gk_exec *ex, const float *logits, int64_t logits_stride, int64_t n_tok, int n_expert, int k,
                            int renorm, int32_t *ids, int64_t ids_stride, float *weights, int64_t weights_stride) {
    if (n_expert <= 0 || n_expert > GK_EXPERTS_MAX || k <= 0 || k > n_expert || k > GK_EXPERTS_USED_MAX || n_tok < 0)
        return -1;
    if (n_tok == 0)
        return 0;
    GP_LAUNCH(gk_moe_route_kernel, dim3((unsigned)((n_tok + GK_WARPS_PER_BLOCK - 1) / GK_WARPS_PER_BLOCK)),
              dim3(GK_WARPS_PER_BLOCK * ex->warp), 0, (gp_stream)ex->stream, logits, logits_stride, n_tok, n_expert, k, renorm, ids,
              ids_stride, weights, weights_stride);
    return 0;
}

/* One block sorts the slots by expert without atomics (so the order is fixed: each expert's slots
 * in increasing order). Two passes over the slots, a block's worth at a time: each thread's rank
 * among the slots of the chunk with its expert is the count of those before it, and the chunk's
 * last slot of an expert moves that expert's count on. The first pass counts; a scan over the
 * experts then gives their offsets and the list of chosen ones; the second pass places each slot
 * at its expert's running offset plus its rank. */
__global__ void gk_moe_group_kernel(const int32_t *ids, int64_t ids_stride, int64_t n_tok, int k, int n_expert, int32_t *groups) {
    __shared__ int32_t count[GK_EXPERTS_MAX];      /* per expert: slots so far, then its running offset */
    __shared__ int32_t chunk[GK_BLOCK_THREADS];    /* the chunk's experts, -1 for none */
    __shared__ int32_t part[GK_BLOCK_THREADS][2];  /* the scan: slots and chosen experts up to each thread's share */
    int32_t *offsets = groups + 1, *active = offsets + n_expert + 1, *perm = active + n_expert;
    /* launched with GK_BLOCK_THREADS threads, the size of the shared arrays */
    const int tid = (int)threadIdx.x, threads = GK_BLOCK_THREADS;
    const int64_t n_slots = n_tok * k;
    for (int e = tid; e < n_expert; e += threads)
        count[e] = 0;
    __syncthreads();
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t s0 = 0; s0 < n_slots; s0 += threads) {
            const int64_t s = s0 + tid;
            int e = -1;
            if (s < n_slots) {
                e = ids[(s / k) * ids_stride + s % k];
                e = e >= 0 && e < n_expert ? e : -1;
            }
            chunk[tid] = e;
            __syncthreads();
            const int n = n_slots - s0 < threads ? (int)(n_slots - s0) : threads;
            int before = 0;
            bool last = e >= 0;
            for (int i = 0; i < n; i++)
                if (chunk[i] == e) {
                    before += i < tid;
                    last = last && i <= tid;
                }
            if (pass == 1 && e >= 0)
                perm[count[e] + before] = (int32_t)s;
            __syncthreads(); /* every thread has read its expert's count before it moves */
            if (last)
                count[e] += before + 1;
            __syncthreads();
        }
        if (pass == 1)
            break;
        /* each thread's share of the experts, then an inclusive scan of the shares' sums */
        const int per = (n_expert + threads - 1) / threads, e0 = tid * per, e1 = e0 + per < n_expert ? e0 + per : n_expert;
        int32_t slots = 0, used = 0;
        for (int e = e0; e < e1; e++) {
            slots += count[e];
            used += count[e] > 0;
        }
        part[tid][0] = slots;
        part[tid][1] = used;
        __syncthreads();
        for (int step = 1; step < threads; step <<= 1) {
            const int32_t add_slots = tid >= step ? part[tid - step][0] : 0, add_used = tid >= step ? part[tid - step][1] : 0;
            __syncthreads();
            part[tid][0] += add_slots;
            part[tid][1] += add_used;
            __syncthreads();
        }
        int32_t at = part[tid][0] - slots, a = part[tid][1] - used;
        for (int e = e0; e < e1; e++) {
            const int32_t c = count[e];
            offsets[e] = at;
            count[e] = at;
            if (c > 0)
                active[a++] = e;
            at += c;
        }
        if (tid == threads - 1) {
            offsets[n_expert] = part[tid][0];
            groups[0] = part[tid][1];
        }
        __syncthreads();
    }
}

extern "C" size_t gk_moe_groups_bytes(int n_expert, int64_t n_slots) {
    return (size_t)(2 + 2 * (int64_t)n_expert + n_slots) * sizeof(int32_t);
}

extern "C" int gk_moe_group(const gk_exec *ex, const int32_t *ids, int64_t ids_stride, int64_t n_tok, int k, int n_expert,
                            int32_t *groups) {
    if (n_expert <= 0 || n_expert > GK_EXPERTS_MAX || k <= 0 || k > GK_EXPERTS_USED_MAX || n_tok < 0 || n_tok * k > INT32_MAX)
        return -1;
    GP_LAUNCH(gk_moe_group_kernel, dim3(1), dim3(GK_BLOCK_THREADS), 0, (gp_stream)ex->stream, ids, ids_stride, n_tok, k, n_expert,
              groups);
    return 0;
}

/* One thread per value of a slot's output: the bias row of the slot's expert added. */
__global__ void gk_moe_bias_kernel(float *y, int64_t y_stride, const int32_t *ids, int64_t ids_stride, int64_t n_tok, int k,
                                   const float *bias, int64_t bias_stride, int64_t n_out) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_tok * k * n_out)
        return;
    const int64_t s = e / n_out, o = e % n_out;
    y[s * y_stride + o] += bias[(int64_t)ids[(s / k) * ids_stride + s % k] * bias_stride + o];
}

extern "C" int gk_moe_bias(const gk_exec *ex, float *y, int64_t y_stride, const int32_t *ids, int64_t ids_stride, int64_t n_tok,
                           int k, const float *bias, int64_t bias_stride, int64_t n_out) {
    if (n_tok < 0 || k <= 0 || n_out < 0)
        return -1;
    const int64_t n = n_tok * k * n_out;
    if (n == 0)
        return 0;
    GP_LAUNCH(gk_moe_bias_kernel, dim3((unsigned)((n + GK_BLOCK_THREADS - 1) / GK_BLOCK_THREADS)), dim3(GK_BLOCK_THREADS), 0,
              (gp_stream)ex->stream, y, y_stride, ids, ids_stride, n_tok, k, bias, bias_stride, n_out);
    return 0;
}

/* One thread per output value: its token's k slots weighted, in order. */
__global__ void gk_moe_sum_kernel(const float *y, int64_t y_stride, const float *weights, int64_t weights_stride, int64_t n_tok,
                                  int k, int64_t ne0, float *out, int64_t out_stride) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_tok * ne0)
        return;
    const int64_t t = e / ne0, i = e % ne0;
    float acc = 0.0f;
    for (int j = 0; j < k; j++)
        acc += weights[t * weights_stride + j] * y[(t * k + j) * y_stride + i];
    out[t * out_stride + i] = acc;
}

extern "C" int gk_moe_sum(const gk_exec *ex, const float *y, int64_t y_stride, const float *weights, int64_t weights_stride,
                          int64_t n_tok, int k, int64_t ne0, float *out, int64_t out_stride) {
    if (n_tok < 0 || k <= 0 || ne0 < 0)
        return -1;
    const int64_t n = n_tok * ne0;
    if (n == 0)
        return 0;
    GP_LAUNCH(gk_moe_sum_kernel, dim3((unsigned)((n + GK_BLOCK_THREADS - 1) / GK_BLOCK_THREADS)), dim3(GK_BLOCK_THREADS), 0,
              (gp_stream)ex->stream, y, y_stride, weights, weights_stride, n_tok, k, ne0, out, out_stride);
    return 0;
}
