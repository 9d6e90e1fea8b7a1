/* quant.c: the table of type traits and the dispatch of the reference kernels. Sizes for types
 * without kernels are still known, so `brasa info` can describe any valid file. */
#include "quant/quant.h"

#include "core/checked.h"

static const quant_traits traits[QUANT_TYPE_COUNT] = {
    [QUANT_F32] = { "f32", 1, 4, quant_dequantize_f32 },
    [QUANT_F16] = { "f16", 1, 2, quant_dequantize_f16 },
    [QUANT_Q4_0] = { "q4_0", QK4_0, 18, quant_dequantize_q4_0 },
    [QUANT_Q4_1] = { "q4_1", QK4_1, 20, quant_dequantize_q4_1 },
    [QUANT_Q5_0] = { "q5_0", QK5_0, 22, quant_dequantize_q5_0 },
    [QUANT_Q5_1] = { "q5_1", QK5_1, 24, quant_dequantize_q5_1 },
    [QUANT_Q8_0] = { "q8_0", QK8_0, 34, quant_dequantize_q8_0 },
    [QUANT_Q8_1] = { "q8_1", 32, 36, NULL },
    [QUANT_Q2_K] = { "q2_K", QK_K, 84, NULL },
    [QUANT_Q3_K] = { "q3_K", QK_K, 110, NULL },
    [QUANT_Q4_K] = { "q4_K", QK_K, 144, quant_dequantize_q4_K },
    [QUANT_Q5_K] = { "q5_K", QK_K, 176, quant_dequantize_q5_K },
    [QUANT_Q6_K] = { "q6_K", QK_K, 210, quant_dequantize_q6_K },
    [QUANT_Q8_K] = { "q8_K", QK_K, 292, NULL },
    [QUANT_IQ2_XXS] = { "iq2_xxs", QK_K, 66, NULL },
    [QUANT_IQ2_XS] = { "iq2_xs", QK_K, 74, NULL },
    [QUANT_IQ3_XXS] = { "iq3_xxs", QK_K, 98, NULL },
    [QUANT_IQ1_S] = { "iq1_s", QK_K, 50, NULL },
    [QUANT_IQ4_NL] = { "iq4_nl", 32, 18, NULL },
    [QUANT_IQ3_S] = { "iq3_s", QK_K, 110, NULL },
    [QUANT_IQ2_S] = { "iq2_s", QK_K, 82, NULL },
    [QUANT_IQ4_XS] = { "iq4_xs", QK_K, 136, NULL },
    [QUANT_I8] = { "i8", 1, 1, NULL },
    [QUANT_I16] = { "i16", 1, 2, NULL },
    [QUANT_I32] = { "i32", 1, 4, NULL },
    [QUANT_I64] = { "i64", 1, 8, NULL },
    [QUANT_F64] = { "f64", 1, 8, NULL },
    [QUANT_IQ1_M] = { "iq1_m", QK_K, 56, NULL },
    [QUANT_BF16] = { "bf16", 1, 2, quant_dequantize_bf16 },
    [QUANT_TQ1_0] = { "tq1_0", QK_K, 54, NULL },
    [QUANT_TQ2_0] = { "tq2_0", QK_K, 66, NULL },
    [QUANT_MXFP4] = { "mxfp4", QK_MXFP4, 17, quant_dequantize_mxfp4 },
};

const quant_traits *quant_get(uint32_t type) {
    if (type >= QUANT_TYPE_COUNT || !traits[type].name)
        return NULL;
    return &traits[type];
}

const char *quant_name(uint32_t type) {
    const quant_traits *t = quant_get(type);
    return t ? t->name : NULL;
}

bool quant_row_bytes(uint32_t type, int64_t n, uint64_t *bytes) {
    const quant_traits *t = quant_get(type);
    if (!t || n < 0 || n % t->block_size != 0)
        return false;
    return ck_mul_u64((uint64_t)(n / t->block_size), (uint64_t)t->type_size, bytes);
}

bool quant_dequantize(uint32_t type, const void *data, float *out, int64_t n) {
    const quant_traits *t = quant_get(type);
    if (!t || !t->dequantize || n % t->block_size != 0)
        return false;
    t->dequantize(data, out, n);
    return true;
}

bool quant_dot(uint32_t type, const void *row, const float *x, int64_t n, double *result) {
    const quant_traits *t = quant_get(type);
    if (!t || !t->dequantize || n % t->block_size != 0)
        return false;
    /* One block (at most QK_K values) at a time keeps the reference free of allocation. */
    float tmp[QK_K];
    int64_t step = t->block_size == 1 ? QK_K : t->block_size;
    const uint8_t *p = row;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i += step) {
        int64_t m = n - i < step ? n - i : step;
        t->dequantize(p, tmp, m);
        for (int64_t j = 0; j < m; j++)
            sum += (double)tmp[j] * (double)x[i + j];
        p += (size_t)(m / t->block_size) * (size_t)t->type_size;
    }
    *result = sum;
    return true;
}
