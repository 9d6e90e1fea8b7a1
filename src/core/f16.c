/* f16.c: half-precision conversions by bit manipulation (no reliance on compiler _Float16 support). */
#include "core/f16.h"

float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) /* infinity or NaN: keep the payload, as NumPy does */
        return f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0)
            return f32_from_bits(sign); /* signed zero */
        /* subnormal: normalize the mantissa; every half subnormal is exact in float */
        int e = -1;
        do {
            mant <<= 1;
            e++;
        } while ((mant & 0x400u) == 0);
        mant &= 0x3ffu;
        return f32_from_bits(sign | ((uint32_t)(127 - 15 - e) << 23) | (mant << 13));
    }
    return f32_from_bits(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

uint16_t f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) /* inf or NaN (keep NaN quiet and non-zero) */
        return (uint16_t)(sign | 0x7c00u | (mant ? (0x200u | (mant >> 13)) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
        half++; /* may carry into the exponent, which rounds up to infinity correctly */
    return (uint16_t)(sign | half);
}
