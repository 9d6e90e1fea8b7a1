/* fuzz_chat: brasa_chat_tokenize_with on hostile conversations, rendered with every format brasa
 * knows and with the one detected for the model ($BRASA_FUZZ_MODEL). Input: the first byte's bit 0
 * is add_generation_prompt, bit 1 turns thinking off; the rest is messages separated by 0x1E, each
 * "role 0x1F content" (a message without 0x1F has no content). Besides memory safety this checks
 * the formats' promise that markers, and only markers, become control tokens: the same
 * conversation with every content replaced by "x" must give the same status and the same number
 * of control tokens. (qwen3 renders a history turn's reasoning block from its content, so its
 * <think> markers could differ; the fuzzed vocabularies have no such token.) */
#include <string.h>

#include "fuzz.h"

#define MAX_MESSAGES 256
#define MAX_FORMATS 16

static brasa_model *model;
static char format_names[256];
static const char *formats[MAX_FORMATS]; /* NULL (detect) first, then every name */
static size_t n_formats;

/* brasa_chat_format_names() is "a, b, c": split once so that a new format is fuzzed as well. */
static void list_formats(void) {
    snprintf(format_names, sizeof format_names, "%s", brasa_chat_format_names());
    formats[n_formats++] = NULL;
    for (char *p = strtok(format_names, ", "); p && n_formats < MAX_FORMATS; p = strtok(NULL, ", "))
        formats[n_formats++] = p;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    model = fuzz_open_model("fuzz_chat");
    list_formats();
    return 0;
}

static char *copy_text(const uint8_t *p, size_t n) {
    char *s = malloc(n + 1);
    FUZZ_CHECK(s != NULL);
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* Splits the input into messages; role and content are owned copies (content may be NULL). */
static size_t split_messages(const uint8_t *data, size_t size, brasa_chat_message *msgs) {
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= size && n < MAX_MESSAGES; i++) {
        if (i < size && data[i] != 0x1E)
            continue;
        const uint8_t *rec = data + start, *sep = memchr(rec, 0x1F, i - start);
        size_t role_len = sep ? (size_t)(sep - rec) : i - start;
        msgs[n].role = copy_text(rec, role_len);
        msgs[n].content = sep ? copy_text(sep + 1, i - start - role_len - 1) : NULL;
        n++;
        start = i + 1;
    }
    return n;
}

typedef struct rendering {
    brasa_status status;
    size_t n_control;
} rendering;

/* Renders with the two-call size convention, checking that every id is in the vocabulary. */
static rendering render(const char *format, const brasa_chat_message *msgs, size_t n, bool gen, bool think) {
    brasa_error err;
    rendering r = { BRASA_OK, 0 };
    size_t need = 0;
    brasa_chat_params cp = brasa_chat_default_params();
    cp.format = format;
    cp.add_generation_prompt = gen;
    cp.enable_thinking = think;
    r.status = brasa_chat_tokenize_with(model, msgs, n, &cp, NULL, 0, &need, &err);
    if (r.status != BRASA_ERR_BUFFER_TOO_SMALL) {
        FUZZ_CHECK(r.status != BRASA_OK || need == 0);
        return r;
    }
    brasa_token *ids = malloc(need * sizeof *ids);
    FUZZ_CHECK(ids != NULL);
    size_t got = 0;
    r.status = brasa_chat_tokenize_with(model, msgs, n, &cp, ids, need, &got, &err);
    FUZZ_CHECK(r.status == BRASA_OK && got == need);
    for (size_t i = 0; i < got; i++) {
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < brasa_vocab_size(model));
        r.n_control += brasa_token_is_control(model, ids[i]);
    }
    free(ids);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    const bool gen = data[0] & 1, think = !(data[0] & 2);
    brasa_chat_message msgs[MAX_MESSAGES], plain[MAX_MESSAGES];
    const size_t n = split_messages(data + 1, size - 1, msgs);
    for (size_t i = 0; i < n; i++) {
        plain[i].role = msgs[i].role;
        plain[i].content = msgs[i].content ? "x" : NULL;
    }
    for (size_t f = 0; f < n_formats; f++) {
        rendering real = render(formats[f], msgs, n, gen, think);
        rendering placeholder = render(formats[f], plain, n, gen, think);
        FUZZ_CHECK(real.status == placeholder.status);
        FUZZ_CHECK(real.n_control == placeholder.n_control);
    }
    for (size_t i = 0; i < n; i++) {
        free((char *)msgs[i].role);
        free((char *)msgs[i].content);
    }
    return 0;
}
