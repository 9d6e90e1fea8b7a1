/* unicode.c: character-class lookups over the generated range tables, with an ASCII fast path. */
#include "tokenizer/unicode.h"

static bool in_ranges(const uni_range *r, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].first)
            hi = mid;
        else if (cp > r[mid].last)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

bool uni_is_letter(uint32_t cp) {
    if (cp < 0x80)
        return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    return in_ranges(uni_letters, uni_letters_count, cp);
}

bool uni_is_number(uint32_t cp) {
    if (cp < 0x80)
        return cp >= '0' && cp <= '9';
    return in_ranges(uni_numbers, uni_numbers_count, cp);
}

bool uni_is_space(uint32_t cp) {
    return in_ranges(uni_white_space, uni_white_space_count, cp);
}
