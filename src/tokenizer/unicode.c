/* unicode.c: class bits of a code point, ASCII from a table built on first use, the rest by binary
 * search of the generated ranges. */
#include "tokenizer/unicode.h"

static uint16_t search(uint32_t cp) {
    size_t lo = 0, hi = uni_ranges_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < uni_ranges[mid].first)
            hi = mid;
        else if (cp > uni_ranges[mid].last)
            lo = mid + 1;
        else
            return uni_ranges[mid].bits;
    }
    return 0;
}

/* ASCII's bits, written out so that the common case is one load (checked against the ranges by
 * the tokenizer's tests through uni_bits on every code point below 128). */
static const uint16_t ascii_bits[128] = {
    ['\t'] = UNI_WS, ['\n'] = UNI_WS, ['\v'] = UNI_WS, ['\f'] = UNI_WS, ['\r'] = UNI_WS, [' '] = UNI_WS,
    ['!'] = UNI_PO, ['"'] = UNI_PO, ['#'] = UNI_PO, ['$'] = UNI_S, ['%'] = UNI_PO, ['&'] = UNI_PO,
    ['\''] = UNI_PO, ['('] = UNI_PO, [')'] = UNI_PO, ['*'] = UNI_PO, ['+'] = UNI_S, [','] = UNI_PO,
    ['-'] = UNI_PO, ['.'] = UNI_PO, ['/'] = UNI_PO, [':'] = UNI_PO, [';'] = UNI_PO, ['<'] = UNI_S,
    ['='] = UNI_S, ['>'] = UNI_S, ['?'] = UNI_PO, ['@'] = UNI_PO, ['['] = UNI_PO, ['\\'] = UNI_PO,
    [']'] = UNI_PO, ['^'] = UNI_S, ['_'] = UNI_PC, ['`'] = UNI_S, ['{'] = UNI_PO, ['|'] = UNI_S,
    ['}'] = UNI_PO, ['~'] = UNI_S,
    ['0'] = UNI_ND, ['1'] = UNI_ND, ['2'] = UNI_ND, ['3'] = UNI_ND, ['4'] = UNI_ND, ['5'] = UNI_ND,
    ['6'] = UNI_ND, ['7'] = UNI_ND, ['8'] = UNI_ND, ['9'] = UNI_ND,
    ['A'] = UNI_LU, ['B'] = UNI_LU, ['C'] = UNI_LU, ['D'] = UNI_LU, ['E'] = UNI_LU, ['F'] = UNI_LU,
    ['G'] = UNI_LU, ['H'] = UNI_LU, ['I'] = UNI_LU, ['J'] = UNI_LU, ['K'] = UNI_LU, ['L'] = UNI_LU,
    ['M'] = UNI_LU, ['N'] = UNI_LU, ['O'] = UNI_LU, ['P'] = UNI_LU, ['Q'] = UNI_LU, ['R'] = UNI_LU,
    ['S'] = UNI_LU, ['T'] = UNI_LU, ['U'] = UNI_LU, ['V'] = UNI_LU, ['W'] = UNI_LU, ['X'] = UNI_LU,
    ['Y'] = UNI_LU, ['Z'] = UNI_LU,
    ['a'] = UNI_LL, ['b'] = UNI_LL, ['c'] = UNI_LL, ['d'] = UNI_LL, ['e'] = UNI_LL, ['f'] = UNI_LL,
    ['g'] = UNI_LL, ['h'] = UNI_LL, ['i'] = UNI_LL, ['j'] = UNI_LL, ['k'] = UNI_LL, ['l'] = UNI_LL,
    ['m'] = UNI_LL, ['n'] = UNI_LL, ['o'] = UNI_LL, ['p'] = UNI_LL, ['q'] = UNI_LL, ['r'] = UNI_LL,
    ['s'] = UNI_LL, ['t'] = UNI_LL, ['u'] = UNI_LL, ['v'] = UNI_LL, ['w'] = UNI_LL, ['x'] = UNI_LL,
    ['y'] = UNI_LL, ['z'] = UNI_LL,
};

uint16_t uni_bits(uint32_t cp) {
    return cp < 128 ? ascii_bits[cp] : search(cp);
}
