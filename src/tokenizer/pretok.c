/* pretok.c: the table of pre-tokenizers and the splitter that runs one.
 *
 * The rules are the patterns of each family's tokenizer.json (Hugging Face's pre_tokenizer:
 * Split patterns, ByteLevel's own regex when it splits, Digits and Punctuation as the classes
 * they test), in the dialect of regex.h. Names that share a rule share a row.
 */
#include "tokenizer/pretok.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "tokenizer/unicode.h"

/* GPT-2's ByteLevel regex, which many later byte-level BPE tokenizers keep. */
#define RULE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
/* Digits(individual_digits=true): every digit a piece. */
#define RULE_EACH_DIGIT "\\p{N}"
/* Llama 3's split (cl100k's), with up to `digits` digits per number. */
#define RULE_LLAMA3(digits) \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" digits \
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* o200k (GPT-4o, gpt-oss, Llama 4): words split at case changes, marks kept with letters. */
#define CASED_WORDS(suffix) \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" suffix \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" suffix
#define CONTRACTIONS "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
#define RULE_TAIL_SLASH "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* DeepSeek V3's last split (also Hunyuan dense, JoyAI): an ASCII punctuation mark may lead a word. */
#define RULE_DEEPSEEK3_WORDS \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+" \
    "| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* Not a regex: Tiny Aya's numbers, which its tokenizer.json writes as \d{1,3}(?=(?:\d{3})*\b).
 * Run as written, every match would rescan the rest of the number (quadratic on a long one), so
 * the splitter computes what it means (split_digit_groups). The name cannot be a pattern: the
 * regex dialect refuses (?#. */
#define RULE_DIGIT_GROUPS "(?#digit groups from the right)"
/* BLOOM: runs of anything but white space and these stops: . , ! ? … 。 ， 、 । ۔ ، and ( | ) */
#define RULE_BLOOM " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+"
/* Han (U+4E00..U+9FA5) with the kana, or with U+0800..U+4E00 and Hangul */
#define RULE_CJK_KANA "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+"
#define RULE_CJK_HANGUL "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"

static const pretok_def defs[] = {
    /* no tokenizer.ggml.pre: the byte-level BPE's own (GPT-2) split */
    { { "default", "gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4",
        "roberta-bpe", "gigachat", "a.x-4.0", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "jina-v1-en",
        "jina-v2-code", "mellum", "modern-bert", NULL },
      { RULE_GPT2 }, 0, 0 },
    /* Digits(individual) then ByteLevel: StarCoder 2, Command R, SmolLM, EXAONE 3, Minerva, ... */
    { { "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", "mellum2", NULL },
      { RULE_EACH_DIGIT, RULE_GPT2 }, 0, 0 },
    { { "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano",
        NULL },
      { RULE_LLAMA3("{1,3}") }, PRETOK_IGNORE_MERGES | PRETOK_ADD_BOS, 0 },
    { { "dbrx", "smaug-bpe", "chatglm-bpe", NULL }, { RULE_LLAMA3("{1,3}") }, 0, 0 },
    { { "glm4", "glm5", NULL }, { RULE_LLAMA3("{1,3}") }, PRETOK_IGNORE_MERGES, 0 },
    { { "qwen2", "deepseek-r1-qwen", "stablelm2", "hunyuan", "megrez", "solar-open", "grok-2", "kormo", "f2llmv2",
        NULL },
      { RULE_LLAMA3("") }, 0, 0 },
    /* Qwen 3.5: combining marks stay with their letters */
    { { "qwen35", NULL },
      { "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}"
        "| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, 0, 0 },
    { { "seed-coder", NULL },
      { "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+"
        "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, 0, 0 },
    /* Ling (Bailing) MoE: possessive quantifiers, one line break per piece */
    { { "bailingmoe", "bailingmoe2", "llada-moe", NULL },
      { "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*"
        "|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+" }, 0, 0 },
    { { "gpt-4o", "llama4", "minimax-m2", "kanana2", "talkie", NULL },
      { CASED_WORDS(CONTRACTIONS) "|\\p{N}{1,3}" RULE_TAIL_SLASH }, 0, 0 },
    /* Cohere's Tiny Aya and Command MoE: numbers in threes from the right, then o200k */
    { { "tiny_aya", "cohere2moe", NULL },
      { RULE_DIGIT_GROUPS, CASED_WORDS(CONTRACTIONS) "|\\p{N}{1,3}" RULE_TAIL_SLASH }, 0, 0 },
    /* Mistral's tekken (Nemo, Small 3, Devstral): o200k's words without contractions, single digits */
    { { "tekken", NULL }, { CASED_WORDS("") "|\\p{N}" RULE_TAIL_SLASH }, PRETOK_IGNORE_MERGES | PRETOK_ADD_BOS, 0 },
    /* Kimi K2: Han runs apart, o200k's words over everything else */
    { { "kimi-k2", NULL },
      { "[\\p{Han}]+"
        "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*"
        "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+" CONTRACTIONS
        "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+"
        "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*" CONTRACTIONS
        "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, 0, 0 },
    { { "deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4", NULL },
      { "\\p{N}{1,3}", RULE_CJK_KANA, RULE_DEEPSEEK3_WORDS }, 0, 0 },
    { { "deepseek-coder", NULL },
      { "[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RULE_CJK_HANGUL, "\\p{N}" }, 0, 0 },
    { { "deepseek-llm", NULL },
      { "[\\r\\n]",
        /* the letters of the scripts with case, as DeepSeek's tokenizer.json lists them */
        "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}"
        "\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}"
        "\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"
        "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"
        "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
        "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"
        "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}"
        "\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"
        "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}"
        "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
        "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}"
        "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}"
        "\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
        "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
        "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
        "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
        "\\s+$", RULE_CJK_HANGUL, "\\p{N}+" }, 0, 0 },
    /* Falcon: Punctuation(contiguous) (ASCII punctuation or \p{P}), ByteLevel, Digits, threes */
    { { "falcon", NULL },
      { "[\\p{P}$+<=>^`|~]+", RULE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]" }, 0, 2 },
    /* BLOOM's split, kept by Poro and Viking */
    { { "bloom", "poro-chat", "gpt3-finnish", NULL },
      { RULE_BLOOM }, 0, 0 },
    { { "viking", NULL },
      { RULE_BLOOM, "\\p{N}" }, 0, 0 },
    /* MiniCPM 5: numbers in threes first, then Qwen 2's split with whole numbers */
    { { "minicpm5", NULL },
      { "\\p{N}{1,3}", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+"
        "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, PRETOK_IGNORE_MERGES, 0 },
    /* Qwen 2's split without contractions, so Turkish suffixes after an apostrophe stay on */
    { { "ufakzeka", NULL },
      { "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, 0, 0 },
    /* Laguna: lines apart first, then Qwen 2's split */
    { { "laguna", NULL }, { "[^\\n]+|[\\n]+", RULE_LLAMA3("") }, 0, 0 },
    /* EXAONE MoE: a run of words with single spaces between is one piece */
    { { "exaone-moe", NULL },
      { "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}"
        "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+" }, 0, 0 },
    /* Jais 2: Llama 3's split with runs of spaces cut in powers of two */
    { { "jais-2", NULL },
      { "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
        "|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)"
        "|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}" }, 0, 0 },
    /* Spark 2.5: DeepSeek V3's sequence with one line break per piece and digits apart */
    { { "spark2_5", NULL },
      { "\\p{N}{1,3}", RULE_CJK_KANA,
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
        "| ?[\\p{P}\\p{S}]+|[\\r\\n]|\\s+(?!\\S)|\\s+",
        "\\p{N}" }, 0, 0 },
    /* Youtu: Hangul, CJK punctuation, bopomofo and Han/kana runs first, then tekken-like words */
    { { "youtu", NULL },
      { "[\\x{AC00}-\\x{D7A3}\\x{3131}-\\x{318E}]+"
        "|[\\x{FF01}\\x{2026}\\x{201C}\\x{201D}\\x{2018}\\x{2019}\\x{2014}\\x{FF1A}\\x{FF1B}\\x{FF0C}"
        "\\x{3001}-\\x{303F}\\x{FE30}-\\x{FE4F}]+|[\\x{3105}-\\x{312F}]+"
        "|[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
        CASED_WORDS(CONTRACTIONS) "|\\p{N}" RULE_TAIL_SLASH }, PRETOK_IGNORE_MERGES, 0 },
    /* BPE over raw UTF-8 with spaces as U+2581: only line breaks split. Gemma 4 (its own tokenizer
     * model, where a run of line breaks that is a token is taken whole) and Sarvam MoE. */
    { { "gemma4", NULL }, { "[^\\n]+|[\\n]+" }, PRETOK_RAW_UTF8 | PRETOK_WHOLE_NEWLINES, 0 },
    { { "sarvam-moe", NULL }, { "[^\\n]+|[\\n]+" }, PRETOK_RAW_UTF8, 0 },
};

static bool name_is(const char *lit, const char *name, size_t len) {
    return strlen(lit) == len && memcmp(lit, name, len) == 0;
}

const pretok_def *pretok_find(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        for (const char *const *n = defs[i].names; *n; n++)
            if (name_is(*n, name, len))
                return &defs[i];
    return NULL;
}

void pretok_byte_map(uint32_t cp[256]) {
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
        cp[b] = printable ? (uint32_t)b : next++;
    }
}

const pretok_def *pretok_def_at(size_t i) {
    return i < sizeof defs / sizeof defs[0] ? &defs[i] : NULL;
}

bool pretok_init(pretok *p, const pretok_def *def, char *err, size_t err_len) {
    memset(p, 0, sizeof *p);
    p->def = def;
    for (size_t i = 0; def && i < PRETOK_MAX_RULES && def->rules[i]; i++) {
        char why[160];
        p->n_rules = i + 1;
        if (strcmp(def->rules[i], RULE_DIGIT_GROUPS) == 0)
            continue; /* computed, not matched: rules[i] stays NULL */
        p->rules[i] = rx_compile(def->rules[i], why, sizeof why);
        if (!p->rules[i]) {
            snprintf(err, err_len, "pre-tokenizer '%s', rule %zu: %s", def->names[0], i + 1, why);
            pretok_free(p);
            return false;
        }
    }
    return true;
}

void pretok_free(pretok *p) {
    for (size_t i = 0; i < p->n_rules; i++)
        rx_free(p->rules[i]);
    memset(p, 0, sizeof *p);
}

/* A text as the rules see it: code points, their class bits, and the byte offset of each (and of
 * the end). */
typedef struct view {
    rx_text t;
    const size_t *off;
} view;

typedef struct splitter {
    const pretok *p;
    const char *text;
    view plain, mapped; /* mapped: one code point per byte through GPT-2's map (rules >= mapped_from) */
    rx_scratch scratch;
    rx_memo memo[PRETOK_MAX_RULES]; /* each rule's, for the range it is scanning now */
    pretok_emit emit;
    void *ctx;
} splitter;

static bool split_rule(splitter *sp, size_t k, size_t from, size_t to);

/* RULE_DIGIT_GROUPS over [from, to): \d{1,3}(?=(?:\d{3})*\b) can only end where a run of decimal
 * digits ends at a word boundary (\b inside the run is false), so such a run is cut into threes
 * counted from its end, the first group taking what is left; a run that a word character follows
 * has no match at all. Each group, and each stretch between, goes on to rule k + 1. */
static bool split_digit_groups(splitter *sp, const rx_text *t, size_t k, size_t from, size_t to) {
    size_t gap = from;
    for (size_t i = from; i < to;) {
        if (t->cp[i] == RX_INVALID || !(t->bits[i] & UNI_ND)) {
            i++;
            continue;
        }
        size_t end = i;
        while (end < to && t->cp[end] != RX_INVALID && (t->bits[end] & UNI_ND))
            end++;
        bool boundary = end == to || t->cp[end] == RX_INVALID || !(t->bits[end] & UNI_W);
        if (boundary) {
            if (!split_rule(sp, k + 1, gap, i))
                return false;
            size_t first = (end - i) % 3 ? (end - i) % 3 : 3;
            for (size_t g = i; g < end; g = g == i ? i + first : g + 3)
                if (!split_rule(sp, k + 1, g, g == i ? i + first : g + 3))
                    return false;
            gap = end;
        }
        i = end;
    }
    return split_rule(sp, k + 1, gap, to);
}

/* Rule k over code points [from, to) of the view for k: each match and each stretch between
 * matches goes on to rule k + 1; after the last rule, a piece is emitted. */
static bool split_rule(splitter *sp, size_t k, size_t from, size_t to) {
    if (from == to)
        return true;
    const view *w = sp->p->def->mapped_from && k >= sp->p->def->mapped_from ? &sp->mapped : &sp->plain;
    if (k == sp->p->n_rules)
        return sp->emit(sp->text + w->off[from], w->off[to] - w->off[from], sp->ctx);
    if (w == &sp->mapped && k == sp->p->def->mapped_from) {
        from = sp->plain.off[from]; /* entering the byte view: its positions are byte offsets */
        to = sp->plain.off[to];
    }
    const rx_prog *rule = sp->p->rules[k];
    if (!rule)
        return split_digit_groups(sp, &w->t, k, from, to);
    rx_memo_reset(&sp->memo[k]); /* a new range: what was learned about the last one does not hold */
    size_t gap = from; /* start of the text not yet given on */
    for (size_t i = from; i < to;) {
        size_t end = rx_match_at(rule, &w->t, from, to, i, &sp->scratch, &sp->memo[k]);
        if (sp->scratch.oom)
            return false;
        if (end == RX_NO_MATCH) { /* never empty: rules that can match nothing do not compile */
            i++;
            continue;
        }
        if (!split_rule(sp, k + 1, gap, i) || !split_rule(sp, k + 1, i, end))
            return false;
        gap = i = end;
    }
    return split_rule(sp, k + 1, gap, to);
}

static bool split(const pretok *p, const char *text, size_t n, pretok_emit emit, void *ctx, uint64_t *steps) {
    bool mapped = p->def->mapped_from != 0;
    size_t copies = mapped ? 2 : 1;
    uint32_t *cp = malloc(copies * n * sizeof *cp);
    uint16_t *bits = malloc(copies * n * sizeof *bits);
    size_t *off = malloc(copies * (n + 1) * sizeof *off);
    splitter sp = { p, text, { { cp, bits }, off }, { { cp, bits }, off }, { 0 }, { { 0 } }, emit, ctx };
    bool ok = cp && bits && off;
    for (size_t k = 0; ok && k < p->n_rules; k++)
        ok = !p->rules[k] || rx_memo_init(&sp.memo[k], p->rules[k]);
    if (ok) {
        size_t m = rx_decode(text, n, cp, bits, off);
        if (mapped) {
            uint32_t map[256];
            pretok_byte_map(map);
            for (size_t i = 0; i <= n; i++) {
                if (i < n) {
                    cp[n + i] = map[(unsigned char)text[i]];
                    bits[n + i] = uni_bits(cp[n + i]);
                }
                off[n + 1 + i] = i;
            }
            sp.mapped = (view){ { cp + n, bits + n }, off + n + 1 };
        }
        ok = split_rule(&sp, 0, 0, m);
        *steps = sp.scratch.steps;
    }
    rx_scratch_free(&sp.scratch);
    for (size_t k = 0; k < p->n_rules; k++)
        rx_memo_free(&sp.memo[k]);
    free(cp);
    free(bits);
    free(off);
    return ok;
}

bool pretok_split(const pretok *p, const char *text, size_t n, pretok_emit emit, void *ctx) {
    if (n == 0)
        return true;
    if (p->n_rules == 0)
        return emit(text, n, ctx);
    uint64_t steps;
    return split(p, text, n, emit, ctx, &steps);
}

static bool ignore_piece(const char *piece, size_t len, void *ctx) {
    (void)piece;
    (void)len;
    (void)ctx;
    return true;
}

uint64_t pretok_split_steps(const pretok *p, const char *text, size_t n) {
    uint64_t steps = 0;
    if (n == 0 || p->n_rules == 0 || !split(p, text, n, ignore_piece, NULL, &steps))
        return 0;
    return steps;
}
