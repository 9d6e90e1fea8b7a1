/* utf8.h: decoding UTF-8 by the Unicode standard's table of well-formed byte sequences (Table 3-7),
 * so that overlong forms, surrogates and values above U+10FFFF are rejected, and ill-formed input is
 * measured in "maximal subparts" (each replaced by one U+FFFD, as Python and browsers do). */
#ifndef BRASA_CORE_UTF8_H
#define BRASA_CORE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the sequence at p (n >= 1 bytes available). Returns its length 1..4 and sets *cp, or, when
 * the bytes are ill-formed, returns -k where k >= 1 is the length of the maximal ill-formed subpart. */
static inline int utf8_decode(const unsigned char *p, size_t n, uint32_t *cp) {
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else {
        return -1;
    }
    uint32_t v = c & (len == 2 ? 0x1fu : len == 3 ? 0x0fu : 0x07u);
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return -i;
        unsigned b = p[i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf))
            return -i;
        v = (v << 6) | (b & 0x3f);
    }
    *cp = v;
    return len;
}

/* Writes cp as UTF-8 into out (room for 4); returns the length. */
static inline int utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Whether all n bytes are well-formed UTF-8. */
static inline int utf8_is_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    uint32_t cp;
    while (i < n) {
        int k = utf8_decode(p + i, n - i, &cp);
        if (k < 0)
            return 0;
        i += (size_t)k;
    }
    return 1;
}

#endif
