/* tok_batch: tokenizes many strings in one process, for the tokenizer reference test.
 *
 * Usage: tok_batch MODEL INFILE [--special] [--time]
 * INFILE holds records: a uint32 little-endian byte length, then the bytes. For each record one line
 * goes to stdout with four tab-separated fields: the token ids (space-separated), the hex of the full
 * decode of those ids, the hex of the concatenated streaming decode (token by token), and how many
 * streamed chunks were not complete, well-formed UTF-8. With --time the line is instead the token
 * count and the best of three tokenizing times in microseconds (processor time: tokenizing runs on
 * one thread), for the speed tests. Uses only the public API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brasa.h"

static void put_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        printf("%02x", (unsigned char)s[i]);
}

/* Well-formedness by the same rules the library uses, re-derived here so the test is independent. */
static int utf8_ok(const unsigned char *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
        if (!len || i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xc0) != 0x80)
                return 0;
        if ((c == 0xe0 && p[i + 1] < 0xa0) || (c == 0xed && p[i + 1] > 0x9f) || (c == 0xf0 && p[i + 1] < 0x90) ||
            (c == 0xf4 && p[i + 1] > 0x8f))
            return 0;
        i += len;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: tok_batch MODEL INFILE [--special] [--time]\n");
        return 2;
    }
    unsigned flags = 0;
    int timing = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--special") == 0)
            flags |= BRASA_TOKENIZE_PARSE_SPECIAL;
        else if (strcmp(argv[i], "--time") == 0)
            timing = 1;
        else {
            fprintf(stderr, "tok_batch: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    brasa_error err;
    brasa_model *m = NULL;
    brasa_model_params mp = brasa_model_default_params();
    if (brasa_model_open(argv[1], &mp, &m, &err) != BRASA_OK) {
        fprintf(stderr, "tok_batch: %s\n", err.message);
        return 1;
    }
    FILE *in = fopen(argv[2], "rb");
    if (!in) {
        fprintf(stderr, "tok_batch: cannot open %s\n", argv[2]);
        return 1;
    }
    int rc = 0;
    unsigned char lenbuf[4];
    while (rc == 0 && fread(lenbuf, 1, 4, in) == 4) {
        size_t len = (size_t)lenbuf[0] | (size_t)lenbuf[1] << 8 | (size_t)lenbuf[2] << 16 | (size_t)lenbuf[3] << 24;
        char *text = malloc(len + 1);
        if (!text || fread(text, 1, len, in) != len) {
            fprintf(stderr, "tok_batch: truncated input\n");
            free(text);
            rc = 1;
            break;
        }
        size_t n = 0;
        brasa_token *ids = malloc((len + 8) * 2 * sizeof *ids);
        double best = -1;
        brasa_status st = BRASA_OK;
        for (int run = 0; run < (timing ? 3 : 1) && st == BRASA_OK; run++) {
            clock_t t0 = clock();
            st = brasa_tokenize(m, text, len, flags, ids, (len + 8) * 2, &n, &err);
            double us = (double)(clock() - t0) * 1e6 / CLOCKS_PER_SEC;
            if (best < 0 || us < best)
                best = us;
        }
        if (st == BRASA_OK && timing) {
            printf("%zu\t%.0f\n", n, best);
        } else if (st != BRASA_OK) {
            fprintf(stderr, "tok_batch: tokenize: %s\n", err.message);
            rc = 1;
        } else {
            for (size_t i = 0; i < n; i++)
                printf("%s%d", i ? " " : "", ids[i]);
            printf("\t");
            size_t bytes = 0;
            char *out = malloc(len * 4 + 64 * n + 16);
            st = brasa_detokenize(m, ids, n, BRASA_DETOKENIZE_SPECIAL, out, len * 4 + 64 * n + 16, &bytes, &err);
            if (st != BRASA_OK) {
                fprintf(stderr, "tok_batch: detokenize: %s\n", err.message);
                rc = 1;
            }
            put_hex(out, bytes);
            printf("\t");
            free(out);
            brasa_decoder *dec = NULL;
            int bad_chunks = 0;
            if (brasa_decoder_create(m, BRASA_DETOKENIZE_SPECIAL, &dec, &err) != BRASA_OK) {
                fprintf(stderr, "tok_batch: decoder: %s\n", err.message);
                rc = 1;
            }
            for (size_t i = 0; dec && i < n; i++) {
                const char *chunk;
                size_t clen;
                if (brasa_decoder_push(dec, ids[i], &chunk, &clen, &err) != BRASA_OK) {
                    fprintf(stderr, "tok_batch: decoder: %s\n", err.message);
                    rc = 1;
                    break;
                }
                bad_chunks += !utf8_ok((const unsigned char *)chunk, clen);
                put_hex(chunk, clen);
            }
            if (dec) {
                const char *chunk;
                size_t clen;
                brasa_decoder_flush(dec, &chunk, &clen);
                bad_chunks += !utf8_ok((const unsigned char *)chunk, clen);
                put_hex(chunk, clen);
            }
            brasa_decoder_free(dec);
            printf("\t%d\n", bad_chunks);
        }
        free(ids);
        free(text);
    }
    fclose(in);
    brasa_model_free(m);
    return rc;
}
