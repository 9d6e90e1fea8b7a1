/* unicode.h: the Unicode classes that pre-tokenizer patterns name, as bits of one lookup per code
 * point: a 128-entry table for ASCII, a binary search of the generated ranges (unicode_tables.c)
 * for the rest. A pattern's class is then a mask test, whatever categories it combines. */
#ifndef BRASA_TOKENIZER_UNICODE_H
#define BRASA_TOKENIZER_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    UNI_LU = 1 << 0, /* letter, uppercase */
    UNI_LL = 1 << 1, /* letter, lowercase */
    UNI_LT = 1 << 2, /* letter, titlecase */
    UNI_LM = 1 << 3, /* letter, modifier */
    UNI_LO = 1 << 4, /* letter, other */
    UNI_M = 1 << 5,  /* mark (Mn, Mc, Me) */
    UNI_ND = 1 << 6, /* number, decimal digit */
    UNI_NO = 1 << 7, /* number, letter or other (Nl, No) */
    UNI_PC = 1 << 8, /* punctuation, connector */
    UNI_PO = 1 << 9, /* the other punctuation (Pd, Ps, Pe, Pi, Pf, Po) */
    UNI_S = 1 << 10, /* symbol (Sm, Sc, Sk, So) */
    UNI_WS = 1 << 11, /* the White_Space property: \s */
    UNI_HAN = 1 << 12, /* Script=Han */
    UNI_L = UNI_LU | UNI_LL | UNI_LT | UNI_LM | UNI_LO,
    UNI_N = UNI_ND | UNI_NO,
    UNI_P = UNI_PC | UNI_PO,
    UNI_W = UNI_L | UNI_M | UNI_N | UNI_PC /* \w, as Oniguruma defines it for Unicode (checked with HF) */
};

typedef struct uni_range {
    uint32_t first, last;
    uint16_t bits;
} uni_range;

extern const uni_range uni_ranges[];
extern const size_t uni_ranges_count;
extern const char uni_version[]; /* of the tables, e.g. "18.0.0" */

/* The UNI_* bits of cp; 0 for unassigned, control, format and private-use code points. */
uint16_t uni_bits(uint32_t cp);

#endif
