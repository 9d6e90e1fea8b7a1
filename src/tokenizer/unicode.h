/* unicode.h: the Unicode character classes that pre-tokenizers need (\p{L}, \p{N}, \s), looked up
 * by binary search in generated range tables (unicode_tables.c). */
#ifndef BRASA_TOKENIZER_UNICODE_H
#define BRASA_TOKENIZER_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct uni_range {
    uint32_t first, last;
} uni_range;

extern const uni_range uni_letters[], uni_numbers[], uni_white_space[];
extern const size_t uni_letters_count, uni_numbers_count, uni_white_space_count;

bool uni_is_letter(uint32_t cp); /* general category L* */
bool uni_is_number(uint32_t cp); /* general category N* */
bool uni_is_space(uint32_t cp);  /* White_Space property */

#endif
