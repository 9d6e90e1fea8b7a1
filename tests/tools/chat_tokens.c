/* chat_tokens: renders one conversation with brasa's chat formats and prints the token ids, for the
 * chat-template test; the detected format and how a reply begins go to stderr.
 * Usage: chat_tokens MODEL FORMAT|auto INFILE [--no-generation-prompt] [--no-think]
 * INFILE holds records (uint32 little-endian length, bytes) alternating role and content. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brasa.h"

static char *read_record(FILE *f) {
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4)
        return NULL;
    size_t n = (size_t)b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
    char *s = malloc(n + 1);
    if (s && fread(s, 1, n, f) != n) {
        free(s);
        return NULL;
    }
    if (s)
        s[n] = '\0';
    return s;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: chat_tokens MODEL FORMAT|auto INFILE [--no-generation-prompt] [--no-think]\n");
        return 2;
    }
    brasa_chat_params cp = brasa_chat_default_params();
    cp.format = strcmp(argv[2], "auto") == 0 ? NULL : argv[2];
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--no-generation-prompt") == 0)
            cp.add_generation_prompt = false;
        else if (strcmp(argv[i], "--no-think") == 0)
            cp.enable_thinking = false;
        else {
            fprintf(stderr, "chat_tokens: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    brasa_error err;
    brasa_model *m = NULL;
    brasa_model_params mp = brasa_model_default_params();
    if (brasa_model_open(argv[1], &mp, &m, &err) != BRASA_OK) {
        fprintf(stderr, "chat_tokens: %s\n", err.message);
        return 1;
    }
    FILE *in = fopen(argv[3], "rb");
    if (!in)
        return 1;
    brasa_chat_message msgs[64];
    size_t n = 0;
    char *role;
    while (n < 64 && (role = read_record(in)) != NULL) {
        msgs[n].role = role;
        msgs[n].content = read_record(in);
        n++;
    }
    fclose(in);
    size_t count = 0;
    brasa_token *tokens = malloc(1 << 20);
    int rc = 0;
    if (brasa_chat_tokenize_with(m, msgs, n, &cp, tokens, (1 << 20) / sizeof *tokens, &count, &err) != BRASA_OK) {
        fprintf(stderr, "chat_tokens: %s\n", err.message);
        rc = 1;
    } else {
        for (size_t i = 0; i < count; i++)
            printf("%s%d", i ? " " : "", tokens[i]);
        printf("\n");
        static const char *starts[] = { "none", "leading", "open" };
        const char *detected = brasa_chat_format_detect(m);
        fprintf(stderr, "format: %s, reasoning: %s\n", detected ? detected : "none",
                starts[brasa_chat_reasoning_start(m, &cp)]);
    }
    for (size_t i = 0; i < n; i++) {
        free((char *)msgs[i].role);
        free((char *)msgs[i].content);
    }
    free(tokens);
    brasa_model_free(m);
    return rc;
}
