/* fuzz_gguf: the GGUF reader and everything that trusts what it accepted. The input is a whole
 * file, parsed in place (gguf_open_memory). A file that opens must keep gguf.h's promise that no
 * accessor can then step outside it: every value, string and tensor is read to its last byte
 * (the fuzzer's buffer is exactly the input, so AddressSanitizer sees any overrun). Then the
 * model is built from it as brasa_model_open would (vocabulary, description, weights), described,
 * and its tokenizer and chat formats are run on a fixed text. */
#include <string.h>

#include "fuzz.h"
#include "gguf/gguf.h"
#include "model/model.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return 0;
}

/* Reads n bytes so that the sanitizer checks each one; the sum keeps the reads from being dropped. */
static unsigned touch(const void *p, uint64_t n) {
    const volatile unsigned char *b = p;
    unsigned sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += b[i];
    return sum;
}

static unsigned walk_kv(const gguf_file *f, const gguf_kv *kv) {
    unsigned sum = touch(kv->key, strlen(kv->key) + 1);
    FUZZ_CHECK(gguf_find(f, kv->key) == kv); /* keys are unique in a file that opened */
    sum += touch(kv->value, kv->value_bytes);
    const gguf_type t = kv->type == GGUF_TYPE_ARRAY ? kv->elem_type : kv->type;
    if (t == GGUF_TYPE_STRING) {
        gguf_iter it;
        gguf_str s;
        gguf_iter_init(&it, kv);
        while (gguf_iter_next_str(&it, &s))
            sum += touch(s.data, s.len);
        FUZZ_CHECK(it.index == kv->count);
        if (kv->count > 0)
            FUZZ_CHECK(gguf_kv_str_at(kv, kv->count - 1, &s));
    } else if (gguf_type_is_numeric(t)) {
        for (uint64_t i = 0; i < kv->count; i++)
            sum += (unsigned)gguf_kv_int_at(kv, i) + (unsigned)(gguf_kv_float_at(kv, i) != 0.0);
    }
    int64_t i64;
    float f32;
    bool b;
    gguf_str s;
    sum += gguf_get_i64(f, kv->key, &i64) + gguf_get_f32(f, kv->key, &f32) + gguf_get_bool(f, kv->key, &b) +
           gguf_get_str(f, kv->key, &s);
    return sum;
}

static unsigned walk_tensors(const gguf_file *f, size_t size) {
    unsigned sum = 0;
    for (size_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        FUZZ_CHECK(gguf_find_tensor(f, t->name) == t);
        FUZZ_CHECK(t->bytes > 0 && t->file_offset <= size && t->bytes <= size - t->file_offset);
        /* the first and last byte are enough to prove the extent; all of it would be slow */
        sum += touch(t->data, 1) + touch((const unsigned char *)t->data + t->bytes - 1, 1);
    }
    return sum;
}

/* What a program does with a model it opened: describe it, list its metadata and tensors. */
static void describe_model(const brasa_model *m) {
    brasa_model_desc d;
    brasa_model_describe(m, &d);
    touch(d.architecture, strlen(d.architecture));
    char value[128];
    for (size_t i = 0; i < brasa_model_meta_count(m); i++) {
        FUZZ_CHECK(brasa_model_meta_key(m, i) != NULL && brasa_model_meta_type(m, i) != NULL);
        /* like snprintf: the full length back, the text cut and terminated (strings may hold NULs) */
        size_t len = brasa_model_meta_value(m, i, value, sizeof value);
        FUZZ_CHECK(value[len < sizeof value ? len : sizeof value - 1] == '\0');
    }
    brasa_tensor_desc t;
    for (size_t i = 0; i < brasa_model_tensor_count(m); i++)
        FUZZ_CHECK(brasa_model_tensor(m, i, &t) == BRASA_OK && t.type_name != NULL);
}

/* The tokenizer and chat formats, driven by whatever vocabulary the file holds. */
static void use_tokenizer(const brasa_model *m) {
    static const char text[] = "\xc2\xbfQu\xc3\xa9 tal?  <|im_start|>user\n<bos>12345 \xf0\x9f\x98\x80 \xff\xfe it's\r\n\n";
    brasa_token ids[512];
    size_t n = 0;
    brasa_error err;
    if (brasa_tokenize(m, text, sizeof text - 1, BRASA_TOKENIZE_ADD_BOS | BRASA_TOKENIZE_PARSE_SPECIAL, ids,
                       sizeof ids / sizeof ids[0], &n, &err) != BRASA_OK)
        return;
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < brasa_vocab_size(m));
    char out[4096];
    size_t n_out = 0;
    brasa_detokenize(m, ids, n, BRASA_DETOKENIZE_SPECIAL, out, sizeof out, &n_out, &err);
    /* every token of a small vocabulary decodes (a large one: the first 4096) */
    const int32_t n_vocab = brasa_vocab_size(m);
    for (brasa_token t = 0; t < n_vocab && t < 4096; t++)
        brasa_detokenize(m, &t, 1, BRASA_DETOKENIZE_SPECIAL, out, sizeof out, &n_out, &err);
    const brasa_chat_message chat[] = { { "system", " Be brief. " }, { "user", "Hola <|im_end|>" },
                                        { "assistant", "<think>r</think>\n\xc2\xa1Hola!" }, { "user", "\xe2\x96\x81 ok" } };
    const char *formats[] = { NULL, "chatml", "gemma", "llama3", "qwen3" };
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        if (brasa_chat_tokenize(m, formats[f], chat, 4, true, ids, sizeof ids / sizeof ids[0], &n, &err) == BRASA_OK)
            for (size_t i = 0; i < n; i++)
                FUZZ_CHECK(ids[i] >= 0 && ids[i] < n_vocab);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file *f = NULL;
    brasa_error err;
    if (gguf_open_memory(data, size, &f, &err) != BRASA_OK) {
        FUZZ_CHECK(f == NULL && err.message[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(gguf_file_size(f) == size);
    for (size_t i = 0; i < gguf_kv_count(f); i++)
        walk_kv(f, gguf_kv_at(f, i));
    walk_tensors(f, size);
    brasa_model *m = NULL;
    if (model_open_gguf(f, NULL, &m, &err) != BRASA_OK) /* closes f */
        return 0;
    describe_model(m);
    use_tokenizer(m);
    brasa_model_free(m);
    return 0;
}
