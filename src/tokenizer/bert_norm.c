/* bert_norm.c: BertNormalizer, one code point at a time (see bert_norm.h), by binary search of the
 * generated tables. Per code point is exact here: the canonical reordering that NFD does over a
 * run of marks only moves nonspacing marks, which stripping drops anyway (the few spacing marks
 * with a combining class, musical symbols, are the exception). */
#include "tokenizer/bert_norm.h"

#include "tokenizer/unicode.h"

/* Hangul syllables decompose by rule (the Unicode standard, section 3.12) into two or three jamo. */
enum {
    HANGUL_S_BASE = 0xAC00, HANGUL_L_BASE = 0x1100, HANGUL_V_BASE = 0x1161, HANGUL_T_BASE = 0x11A7,
    HANGUL_V_COUNT = 21, HANGUL_T_COUNT = 28, HANGUL_N_COUNT = HANGUL_V_COUNT * HANGUL_T_COUNT,
    HANGUL_S_COUNT = 19 * HANGUL_N_COUNT
};

static uint8_t class_of(uint32_t cp) {
    size_t lo = 0, hi = bnorm_classes_count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (cp < bnorm_classes[mid].first)
            hi = mid;
        else if (cp > bnorm_classes[mid].last)
            lo = mid + 1;
        else
            return bnorm_classes[mid].bits;
    }
    return 0;
}

static const bnorm_multi *find_multi(const bnorm_multi *t, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (t[mid].from == cp)
            return &t[mid];
        if (t[mid].from < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* cp without its accents: its canonical decomposition less the nonspacing marks (1 to 3 code points). */
static int strip(uint32_t cp, uint32_t out[3]) {
    if (cp >= HANGUL_S_BASE && cp < HANGUL_S_BASE + HANGUL_S_COUNT) {
        const uint32_t s = cp - HANGUL_S_BASE, t = s % HANGUL_T_COUNT;
        out[0] = HANGUL_L_BASE + s / HANGUL_N_COUNT;
        out[1] = HANGUL_V_BASE + (s % HANGUL_N_COUNT) / HANGUL_T_COUNT;
        if (t == 0)
            return 2;
        out[2] = HANGUL_T_BASE + t;
        return 3;
    }
    size_t lo = 0, hi = bnorm_strip_one_count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (bnorm_strip_one[mid].from == cp) {
            out[0] = bnorm_strip_one[mid].to;
            return 1;
        }
        if (bnorm_strip_one[mid].from < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    const bnorm_multi *m = find_multi(bnorm_strip_multi, bnorm_strip_multi_count, cp);
    if (m) {
        for (int i = 0; i < m->n; i++)
            out[i] = m->to[i];
        return m->n;
    }
    out[0] = cp;
    return 1;
}

/* cp lowercased (1 to 3 code points). */
static int lower(uint32_t cp, uint32_t out[3]) {
    const bnorm_multi *m = find_multi(bnorm_lower_multi, bnorm_lower_multi_count, cp);
    if (m) {
        for (int i = 0; i < m->n; i++)
            out[i] = m->to[i];
        return m->n;
    }
    out[0] = cp;
    size_t lo = 0, hi = bnorm_lower_count; /* the last range that starts at or before cp */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (bnorm_lower[mid].first <= cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0) {
        const bnorm_case_range *r = &bnorm_lower[lo - 1];
        if (cp <= r->last && (cp - r->first) % r->stride == 0)
            out[0] = (uint32_t)((int64_t)cp + r->delta);
    }
    return 1;
}

int bnorm_char(const bnorm_opts *o, uint32_t cp, uint32_t out[BNORM_MAX_OUT]) {
    /* clean_text: tab, line feed and carriage return are whitespace, other control and format
     * characters go, as do NUL and the replacement character */
    if (cp == '\t' || cp == '\n' || cp == '\r') {
        out[0] = ' ';
        return 1;
    }
    const uint8_t cls = class_of(cp);
    if (cp == 0 || cp == 0xFFFD || (cls & BNORM_OTHER))
        return 0;
    if (uni_bits(cp) & UNI_WS) {
        out[0] = ' ';
        return 1;
    }
    uint32_t parts[3] = { cp };
    int n = 1;
    if (o->strip_accents) {
        if (cls & BNORM_MN)
            return 0;
        n = strip(cp, parts);
    }
    if (!o->lowercase) {
        for (int i = 0; i < n; i++)
            out[i] = parts[i];
        return n;
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        k += lower(parts[i], out + k);
    return k;
}

bool bnorm_is_cjk(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool bnorm_is_punct(uint32_t cp) {
    if (cp < 0x80)
        return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
    return (uni_bits(cp) & UNI_P) != 0;
}
