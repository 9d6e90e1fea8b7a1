/* vocab.c: loading tokenizer.ggml.* metadata into a tok_vocab.
 *
 * Malformed metadata (wrong types, mismatched lengths, ids out of range) is a format error; a valid
 * tokenizer that brasa does not implement (another model kind or pre-tokenizer) is "unsupported",
 * which leaves the rest of the model usable. */
#include "tokenizer/vocab.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "core/utf8.h"

/* The byte-level map and its inverse. */
static void build_byte_map(tok_vocab *v) {
    pretok_byte_map(v->byte_cp);
    for (int i = 0; i < 324; i++)
        v->cp_byte[i] = -1;
    for (int b = 0; b < 256; b++)
        v->cp_byte[v->byte_cp[b]] = (int16_t)b;
}

static bool str_is(const gguf_str *s, const char *lit) {
    return s->len == strlen(lit) && memcmp(s->data, lit, s->len) == 0;
}

static brasa_status get_array(const gguf_file *f, const char *key, gguf_type elem, int32_t n, bool required,
                              const gguf_kv **out, brasa_error *err) {
    *out = gguf_find(f, key);
    if (!*out)
        return required ? err_set(err, BRASA_ERR_FORMAT, "%s is missing", key) : BRASA_OK;
    const gguf_kv *kv = *out;
    if (kv->type != GGUF_TYPE_ARRAY || kv->elem_type != elem)
        return err_set(err, BRASA_ERR_FORMAT, "%s must be an array of %s", key, gguf_type_name(elem));
    if (n >= 0 && kv->count != (uint64_t)n)
        return err_set(err, BRASA_ERR_FORMAT, "%s has %llu entries for %d tokens", key,
                       (unsigned long long)kv->count, n);
    return BRASA_OK;
}

static brasa_status get_special(const tok_vocab *v, const gguf_file *f, const char *key, brasa_token *out,
                                brasa_error *err) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv)
        return BRASA_OK;
    if (kv->type == GGUF_TYPE_ARRAY || !gguf_type_is_integer(kv->type) || kv->type == GGUF_TYPE_BOOL)
        return err_set(err, BRASA_ERR_FORMAT, "%s must be an integer", key);
    int64_t id = gguf_kv_int_at(kv, 0);
    if (id < 0 || id >= v->n_tokens)
        return err_set(err, BRASA_ERR_FORMAT, "%s %lld is outside the %d-token vocabulary", key, (long long)id,
                       v->n_tokens);
    *out = (brasa_token)id;
    return BRASA_OK;
}

static brasa_status get_flag(const gguf_file *f, const char *key, bool *out, brasa_error *err) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv)
        return BRASA_OK;
    if (kv->type != GGUF_TYPE_BOOL)
        return err_set(err, BRASA_ERR_FORMAT, "%s must be a bool", key);
    *out = kv->value[0] != 0;
    return BRASA_OK;
}

static brasa_status load_texts(tok_vocab *v, const gguf_kv *tokens, brasa_error *err) {
    gguf_iter it;
    gguf_str s;
    size_t total = 0;
    gguf_iter_init(&it, tokens);
    while (gguf_iter_next_str(&it, &s)) {
        if (s.len > UINT32_MAX - 1)
            return err_set(err, BRASA_ERR_FORMAT, "token %llu is too long", (unsigned long long)(it.index - 1));
        total += (size_t)s.len + 1; /* bounded by the file size */
    }
    v->arena = malloc(total ? total : 1);
    v->text = malloc((size_t)v->n_tokens * sizeof *v->text);
    v->len = malloc((size_t)v->n_tokens * sizeof *v->len);
    v->attr = malloc((size_t)v->n_tokens);
    v->scores = calloc((size_t)v->n_tokens, sizeof *v->scores);
    if (!v->arena || !v->text || !v->len || !v->attr || !v->scores || !smap_init(&v->by_text, (size_t)v->n_tokens))
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory loading the vocabulary");
    char *p = v->arena;
    gguf_iter_init(&it, tokens);
    for (int32_t i = 0; gguf_iter_next_str(&it, &s); i++) {
        memcpy(p, s.data, (size_t)s.len);
        p[s.len] = '\0';
        v->text[i] = p;
        v->len[i] = (uint32_t)s.len;
        v->attr[i] = TOK_ATTR_NORMAL;
        /* a repeated text keeps its first id, as the reference tokenizers do */
        smap_put(&v->by_text, p, (uint32_t)s.len, i);
        p += s.len + 1;
    }
    return BRASA_OK;
}

/* Merges are "left right" strings, ranked by position; both sides and their join must be tokens. */
static brasa_status load_merges(tok_vocab *v, const gguf_kv *merges, brasa_error *err) {
    if (!u64map_init(&v->merges, merges ? (size_t)merges->count : 0))
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory loading merges");
    if (!merges)
        return BRASA_OK;
    buf joined = { 0 };
    gguf_iter it;
    gguf_str s;
    gguf_iter_init(&it, merges);
    while (gguf_iter_next_str(&it, &s)) {
        uint64_t rank = it.index - 1;
        const char *space = s.len > 1 ? memchr(s.data + 1, ' ', (size_t)s.len - 1) : NULL;
        if (!space) {
            buf_free(&joined);
            return err_set(err, BRASA_ERR_FORMAT, "tokenizer.ggml.merges[%llu] is not two tokens separated by a space",
                           (unsigned long long)rank);
        }
        size_t left_len = (size_t)(space - s.data), right_len = (size_t)s.len - left_len - 1;
        int32_t left = smap_get(&v->by_text, s.data, left_len);
        int32_t right = smap_get(&v->by_text, space + 1, right_len);
        joined.len = 0;
        if (!buf_append(&joined, s.data, left_len) || !buf_append(&joined, space + 1, right_len)) {
            buf_free(&joined);
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory loading merges");
        }
        int32_t merged = smap_get(&v->by_text, joined.data, joined.len);
        if (left < 0 || right < 0 || merged < 0)
            continue; /* a merge into nothing can never apply */
        u64map_put(&v->merges, (uint64_t)(uint32_t)left << 32 | (uint32_t)right, rank << 32 | (uint32_t)merged);
    }
    buf_free(&joined);
    return BRASA_OK;
}

static bool is_special(const tok_vocab *v, int32_t id) {
    return (v->attr[id] == TOK_ATTR_CONTROL || v->attr[id] == TOK_ATTR_USER_DEFINED) && v->len[id] > 0;
}

/* (first byte, length) of a special token, sorted by byte, then longest first, for the lengths index. */
typedef struct special_len {
    unsigned char first;
    uint32_t len;
} special_len;

static int cmp_special_len(const void *a, const void *b) {
    const special_len *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->len > y->len ? -1 : x->len < y->len; /* longest first: leftmost-longest matching */
}

/* The distinct lengths of the specials that begin with each byte (see tok_vocab). */
static bool index_special_lengths(tok_vocab *v, int32_t n_special) {
    special_len *keys = malloc((size_t)(n_special ? n_special : 1) * sizeof *keys);
    v->special_lens = malloc((size_t)(n_special ? n_special : 1) * sizeof *v->special_lens);
    if (!keys || !v->special_lens) {
        free(keys);
        return false;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (is_special(v, i))
            keys[n++] = (special_len){ (unsigned char)v->text[i][0], v->len[i] };
    qsort(keys, (size_t)n, sizeof *keys, cmp_special_len);
    int32_t n_lens = 0, k = 0;
    for (int b = 0; b < 256; b++) {
        v->special_len_start[b] = n_lens;
        for (; k < n && keys[k].first == b; k++)
            if (n_lens == v->special_len_start[b] || v->special_lens[n_lens - 1] != keys[k].len)
                v->special_lens[n_lens++] = keys[k].len;
    }
    v->special_len_start[256] = n_lens;
    free(keys);
    return true;
}

static brasa_status index_specials(tok_vocab *v, brasa_error *err) {
    int32_t n = 0;
    for (int32_t i = 0; i < v->n_tokens; i++)
        n += is_special(v, i);
    /* chain_end[head]: the last id so far in the chain of head's text, so that a file with the same
     * special text repeated a million times still loads in linear time */
    int32_t *chain_end = malloc((size_t)v->n_tokens * sizeof *chain_end);
    v->special_next = malloc((size_t)v->n_tokens * sizeof *v->special_next);
    if (!chain_end || !v->special_next || !smap_init(&v->special_by_text, (size_t)n) ||
        !index_special_lengths(v, n)) {
        free(chain_end);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory indexing special tokens");
    }
    for (int32_t i = 0; i < v->n_tokens; i++) {
        v->special_next[i] = -1;
        chain_end[i] = i;
        if (!is_special(v, i) || smap_put(&v->special_by_text, v->text[i], v->len[i], i))
            continue;
        /* a text that an earlier special already has: chain this id after the others, in id order */
        int32_t head = smap_get(&v->special_by_text, v->text[i], v->len[i]);
        v->special_next[chain_end[head]] = i;
        chain_end[head] = i;
    }
    free(chain_end);
    return BRASA_OK;
}

/* The special (control or user-defined) token with this text, or BRASA_TOKEN_NONE. */
static brasa_token find_special(const tok_vocab *v, const char *text) {
    int32_t id = smap_get(&v->by_text, text, strlen(text));
    return id >= 0 && (v->attr[id] == TOK_ATTR_CONTROL || v->attr[id] == TOK_ATTR_USER_DEFINED) ? id
                                                                                                : BRASA_TOKEN_NONE;
}

/* The end-of-turn token when the file does not name one: the chat formats' markers. */
static brasa_token guess_eot(const tok_vocab *v) {
    static const char *markers[] = { "<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|end|>", "<|endoftext|>" };
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        brasa_token id = find_special(v, markers[i]);
        if (id != BRASA_TOKEN_NONE)
            return id;
    }
    return v->eos;
}

static void add_eog(tok_vocab *v, brasa_token t) {
    if (!tok_vocab_has(v, t) || tok_vocab_is_eog(v, t) || v->n_eog == TOK_MAX_EOG)
        return;
    v->eog[v->n_eog++] = t;
}

static bool token_text_is(const tok_vocab *v, brasa_token t, const char *text) {
    return tok_vocab_has(v, t) && v->len[t] == strlen(text) && memcmp(v->text[t], text, v->len[t]) == 0;
}

/* The end-of-generation set (see tok_vocab.eog), once eos and eot are known. */
static void choose_eog(tok_vocab *v) {
    const brasa_token ret = find_special(v, "<|return|>"), call = find_special(v, "<|call|>");
    if (ret == BRASA_TOKEN_NONE || call == BRASA_TOKEN_NONE) {
        add_eog(v, v->eot);
        add_eog(v, v->eos);
        return;
    }
    add_eog(v, ret);
    add_eog(v, call);
    if (!token_text_is(v, v->eot, "<|end|>"))
        add_eog(v, v->eot);
    if (!token_text_is(v, v->eos, "<|end|>"))
        add_eog(v, v->eos);
}

/* The tokenizer model and pre-tokenizer, and the defaults the GGUF keys may leave unset, as
 * llama.cpp (the reference for what GGUF tokenizer metadata means) sets them for each model:
 * - llama (SentencePiece): add_space_prefix true (Llama 2, Mistral and Phi-3 files often omit the
 *   key and were trained with the leading "\u2581"; Gemma's files say false), BOS added, EOS not;
 *   unknown, BOS and EOS are ids 0, 1 and 2 unless the file names others; pieces missing from the
 *   vocabulary fall back to <0xXX> byte tokens when the vocabulary has them.
 * - gpt2 (byte-level BPE): no leading space; BOS added only for the pre-tokenizers marked
 *   PRETOK_ADD_BOS (Llama 3, tekken), whose files normally say so anyway; no special ids unless the
 *   file names them; no tokenizer.ggml.pre means GPT-2's own split.
 * - gemma4 (BPE over UTF-8 with U+2581 for spaces, as the gpt2 pre-tokenizers marked
 *   PRETOK_RAW_UTF8 are too): its own split, <0xXX> byte fallback, no BOS unless the file asks.
 * - bert (WordPiece, in llama.cpp's U+2581 spelling): the text goes between [CLS] and [SEP] (the
 *   BOS and EOS here) unless the file says otherwise; tokenizer.ggml.normalizer.lowercase (true
 *   when absent, as BERT's uncased vocabularies are the common ones) and .strip_accents (the
 *   lowercase setting when absent) choose the normalizing steps; decoding drops the space a text's
 *   first word starts with.
 * In every model, control and user-defined tokens are the special ones (tokenizer.c). */
static brasa_status choose_model(tok_vocab *v, const gguf_str *model, const gguf_str *pre, bool has_merges,
                                 bool has_scores, brasa_error *err) {
    const pretok_def *def = NULL;
    if (str_is(model, "llama")) {
        v->type = BRASA_VOCAB_SPM;
        v->add_space_prefix = true;
        v->add_bos = true;
        if (!has_scores)
            return err_set(err, BRASA_ERR_FORMAT, "a SentencePiece (llama) tokenizer needs tokenizer.ggml.scores");
        return BRASA_OK;
    }
    if (str_is(model, "bert")) {
        v->type = BRASA_VOCAB_WPM;
        v->add_bos = v->add_eos = true;
        v->add_space_prefix = true;
        return BRASA_OK;
    }
    if (str_is(model, "gpt2")) {
        def = pretok_find(pre->len ? pre->data : "default", pre->len ? (size_t)pre->len : 7);
        if (!def)
            return err_set(err, BRASA_ERR_UNSUPPORTED, "pre-tokenizer '%.*s' is not supported",
                           (int)(pre->len > 64 ? 64 : pre->len), pre->data);
    } else if (str_is(model, "gemma4")) {
        def = pretok_find("gemma4", 6);
    } else {
        return err_set(err, BRASA_ERR_UNSUPPORTED,
                       "tokenizer model '%.*s' is not supported (brasa knows llama, gpt2, gemma4 and bert)",
                       (int)(model->len > 64 ? 64 : model->len), model->data);
    }
    if (!has_merges)
        return err_set(err, BRASA_ERR_FORMAT, "a %.*s tokenizer needs tokenizer.ggml.merges", (int)model->len,
                       model->data);
    v->type = BRASA_VOCAB_BPE;
    v->byte_level = !(def->flags & PRETOK_RAW_UTF8);
    if (v->byte_level)
        build_byte_map(v);
    v->ignore_merges = (def->flags & PRETOK_IGNORE_MERGES) != 0;
    v->add_bos = (def->flags & PRETOK_ADD_BOS) != 0;
    char why[200];
    if (!pretok_init(&v->pre, def, why, sizeof why))
        return err_set(err, BRASA_ERR_NO_MEMORY, "%s", why);
    return BRASA_OK;
}

/* A WordPiece vocabulary's special ids and normalizer. [CLS] opens the text and [SEP] closes it:
 * the older cls/seperator keys (llama.cpp's spelling) win over bos/eos, and without any key the
 * tokens are found by their text. */
static brasa_status wordpiece_setup(tok_vocab *v, const gguf_file *f, brasa_error *err) {
    static const struct {
        const char *text;
        size_t offset;
    } by_text[] = { { "[CLS]", offsetof(tok_vocab, bos) }, { "[SEP]", offsetof(tok_vocab, eos) },
                    { "[UNK]", offsetof(tok_vocab, unk) }, { "[PAD]", offsetof(tok_vocab, pad) } };
    brasa_status st;
    if ((st = get_special(v, f, "tokenizer.ggml.cls_token_id", &v->bos, err)) ||
        (st = get_special(v, f, "tokenizer.ggml.seperator_token_id", &v->eos, err)))
        return st;
    for (size_t i = 0; i < sizeof by_text / sizeof by_text[0]; i++) {
        brasa_token *id = (brasa_token *)((char *)v + by_text[i].offset);
        if (*id == BRASA_TOKEN_NONE)
            *id = smap_get(&v->by_text, by_text[i].text, strlen(by_text[i].text));
    }
    v->norm.lowercase = true;
    if ((st = get_flag(f, "tokenizer.ggml.normalizer.lowercase", &v->norm.lowercase, err)) != BRASA_OK)
        return st;
    v->norm.strip_accents = v->norm.lowercase;
    if ((st = get_flag(f, "tokenizer.ggml.normalizer.strip_accents", &v->norm.strip_accents, err)) != BRASA_OK)
        return st;
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (v->len[i] > v->max_token_len)
            v->max_token_len = v->len[i];
    return BRASA_OK;
}

static brasa_status load(tok_vocab *v, const gguf_file *f, brasa_error *err) {
    gguf_str model, pre = { "", 0 };
    if (!gguf_find(f, "tokenizer.ggml.model"))
        return err_set(err, BRASA_ERR_UNSUPPORTED, "the file has no tokenizer (tokenizer.ggml.model is missing)");
    if (!gguf_get_str(f, "tokenizer.ggml.model", &model))
        return err_set(err, BRASA_ERR_FORMAT, "tokenizer.ggml.model must be a string");
    if (gguf_find(f, "tokenizer.ggml.pre") && !gguf_get_str(f, "tokenizer.ggml.pre", &pre))
        return err_set(err, BRASA_ERR_FORMAT, "tokenizer.ggml.pre must be a string");

    const gguf_kv *tokens, *scores, *types, *merges;
    brasa_status st = get_array(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, -1, true, &tokens, err);
    if (st != BRASA_OK)
        return st;
    if (tokens->count == 0 || tokens->count > INT32_MAX)
        return err_set(err, BRASA_ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries", (unsigned long long)tokens->count);
    v->n_tokens = (int32_t)tokens->count;
    if ((st = get_array(f, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v->n_tokens, false, &scores, err)) ||
        (st = get_array(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v->n_tokens, false, &types, err)) ||
        (st = get_array(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING, -1, false, &merges, err)))
        return st;
    if ((st = load_texts(v, tokens, err)) != BRASA_OK)
        return st;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (scores)
            v->scores[i] = (float)gguf_kv_float_at(scores, (uint64_t)i);
        if (types) {
            int64_t t = gguf_kv_int_at(types, (uint64_t)i);
            if (t < TOK_ATTR_NORMAL || t > TOK_ATTR_BYTE)
                return err_set(err, BRASA_ERR_FORMAT, "tokenizer.ggml.token_type[%d] is %lld (must be 1 to 6)", i,
                               (long long)t);
            v->attr[i] = (uint8_t)t;
        }
    }

    if ((st = choose_model(v, &model, &pre, merges != NULL, scores != NULL, err)) != BRASA_OK)
        return st;
    v->bos = v->eos = v->eot = v->unk = v->pad = BRASA_TOKEN_NONE;
    if (v->type == BRASA_VOCAB_SPM && v->n_tokens > 2) { /* SentencePiece's fixed ids: <unk> <s> </s> */
        v->unk = 0;
        v->bos = 1;
        v->eos = 2;
    }
    if ((st = get_special(v, f, "tokenizer.ggml.bos_token_id", &v->bos, err)) ||
        (st = get_special(v, f, "tokenizer.ggml.eos_token_id", &v->eos, err)) ||
        (st = get_special(v, f, "tokenizer.ggml.eot_token_id", &v->eot, err)) ||
        (st = get_special(v, f, "tokenizer.ggml.unknown_token_id", &v->unk, err)) ||
        (st = get_special(v, f, "tokenizer.ggml.padding_token_id", &v->pad, err)) ||
        (st = get_flag(f, "tokenizer.ggml.add_bos_token", &v->add_bos, err)) ||
        (st = get_flag(f, "tokenizer.ggml.add_eos_token", &v->add_eos, err)) ||
        (st = get_flag(f, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix, err)))
        return st;
    if (v->type == BRASA_VOCAB_WPM && (st = wordpiece_setup(v, f, err)) != BRASA_OK)
        return st;
    if (v->eot == BRASA_TOKEN_NONE)
        v->eot = guess_eot(v);
    choose_eog(v);
    if ((st = index_specials(v, err)) != BRASA_OK)
        return st;
    for (int b = 0; b < 256; b++) {
        char name[8];
        int n;
        if (v->byte_level)
            n = utf8_encode(v->byte_cp[b], name);
        else
            n = snprintf(name, sizeof name, "<0x%02X>", b);
        v->byte_token[b] = smap_get(&v->by_text, name, (size_t)n);
    }
    return load_merges(v, v->type == BRASA_VOCAB_BPE ? merges : NULL, err);
}

brasa_status tok_vocab_load(tok_vocab *v, const gguf_file *f, brasa_error *err) {
    memset(v, 0, sizeof *v);
    brasa_status st = load(v, f, err);
    if (st != BRASA_OK) {
        tok_vocab_free(v);
        v->type = BRASA_VOCAB_NONE;
        v->bos = v->eos = v->eot = v->unk = v->pad = BRASA_TOKEN_NONE;
    }
    return st;
}

void tok_vocab_free(tok_vocab *v) {
    if (!v)
        return;
    free(v->text);
    free(v->len);
    free(v->scores);
    free(v->attr);
    free(v->arena);
    free(v->special_next);
    free(v->special_lens);
    smap_free(&v->special_by_text);
    smap_free(&v->by_text);
    u64map_free(&v->merges);
    pretok_free(&v->pre);
    memset(v, 0, sizeof *v);
}
