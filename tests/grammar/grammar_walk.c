/* grammar_walk: a helper that test_schema_walks_validate.py (and a person timing the mask) drives.
 * Records on stdin and stdout are "LENGTH\n" followed by that many bytes and "\n".
 *   grammar_walk walk SCHEMA N SEED   N random outputs: each grows by random accepted bytes or
 *                                     pieces, stops when complete (more likely as it grows), and
 *                                     prefers closing over opening once it is long.
 *   grammar_walk check SCHEMA         for each record in, prints "1" (accepted and complete) or "0".
 *   grammar_walk compile SCHEMA       prints "ok", or the error and exits 1.
 *   grammar_walk bench SCHEMA VOCAB   times grammar_state_mask and grammar_state_accepts with the
 *                                     token texts in VOCAB (records) along a random walk.
 * SCHEMA is a file holding the JSON Schema. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/json.h"
#include "grammar/grammar.h"
#include "platform/platform.h"

static uint64_t rng;
static uint32_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *p = realloc(data, cap *= 2);
            if (!p) {
                free(data);
                data = NULL;
            }
            data = p;
        }
    }
    fclose(f);
    *len = n;
    return data;
}

/* Reads one record; NULL at the end. */
static char *read_record(FILE *f, size_t *len) {
    unsigned long long n;
    if (fscanf(f, "%llu", &n) != 1 || fgetc(f) != '\n')
        return NULL;
    char *p = malloc(n ? n : 1);
    if (!p || fread(p, 1, n, f) != n) {
        free(p);
        return NULL;
    }
    fgetc(f);
    *len = n;
    return p;
}

static grammar *load(const char *path) {
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "grammar_walk: cannot read %s\n", path);
        exit(1);
    }
    json_doc *doc = NULL;
    brasa_error err;
    grammar *g = NULL;
    if (json_parse(text, len, &doc, &err) == BRASA_OK)
        grammar_from_schema(json_root(doc), &g, &err);
    json_free(doc);
    free(text);
    if (!g) {
        printf("%s\n", err.message);
        exit(1);
    }
    return g;
}

static const char *const pieces[] = { "\":\"", "\":", "\",\"", "true", "false", "null", "\xc3\xa9", "\xe6\x97\xa5",
                                      "\xf0\x9f\x98\x80", "\\u00e9", "\\uD83D\\uDE00", "\\n", "ab", "12", "-0.5e3",
                                      ", ", "\n  " };

static double byte_weight(unsigned b, size_t len, size_t budget) {
    const bool long_enough = len > budget;
    if (b == '}' || b == ']' || b == '"')
        return long_enough ? 400.0 : 3.0;
    if (b == '{' || b == '[' || b == ',')
        return long_enough ? 0.01 : 3.0;
    if (b == ' ' || b == '\n' || b == '\t')
        return long_enough ? 0.01 : 1.0;
    if (b < 0x80)
        return 1.0;
    return 0.3;
}

/* One random output into out (cap bytes); returns its length, or -1 when it did not finish. */
static long walk_one(grammar_state *s, char *out, size_t cap) {
    grammar_state_reset(s);
    size_t len = 0, budget = 20 + next_random() % 200;
    double weights[256 + sizeof pieces / sizeof pieces[0]];
    const size_t n_pieces = sizeof pieces / sizeof pieces[0];
    while (len < cap - 16) {
        if (grammar_state_finished(s))
            return (long)len;
        if (grammar_state_complete(s) && (len > budget || next_random() % 8 == 0))
            return (long)len;
        double total = 0;
        for (unsigned b = 0; b < 256; b++) {
            char c = (char)b;
            weights[b] = grammar_state_accepts(s, &c, 1) ? byte_weight(b, len, budget) : 0;
            total += weights[b];
        }
        for (size_t i = 0; i < n_pieces; i++) {
            weights[256 + i] = len < budget && grammar_state_accepts(s, pieces[i], strlen(pieces[i])) ? 2.0 : 0;
            total += weights[256 + i];
        }
        if (total <= 0)
            return -1; /* a dead end: the grammar let the walk into a state with no way on */
        double r = (double)next_random() / 4294967296.0 * total;
        size_t pick = 0;
        while (pick + 1 < 256 + n_pieces && (r -= weights[pick]) >= 0)
            pick++;
        while (weights[pick] == 0)
            pick--;
        const char *bytes;
        char c = (char)pick;
        size_t n = 1;
        if (pick < 256) {
            bytes = &c;
        } else {
            bytes = pieces[pick - 256];
            n = strlen(bytes);
        }
        if (!grammar_state_advance(s, bytes, n))
            return -1;
        memcpy(out + len, bytes, n);
        len += n;
    }
    return -1;
}

static double now(void) {
    return plat_time_seconds();
}

static int bench(grammar *g, const char *vocab_path) {
    FILE *f = fopen(vocab_path, "rb");
    if (!f) {
        fprintf(stderr, "grammar_walk: cannot read %s\n", vocab_path);
        return 1;
    }
    size_t cap = 1024, n = 0, len;
    char **texts = malloc(cap * sizeof *texts);
    size_t *lengths = malloc(cap * sizeof *lengths);
    char *t;
    while ((t = read_record(f, &len)) != NULL) {
        if (n == cap) {
            cap *= 2;
            texts = realloc(texts, cap * sizeof *texts);
            lengths = realloc(lengths, cap * sizeof *lengths);
        }
        texts[n] = t;
        lengths[n++] = len;
    }
    fclose(f);
    brasa_error err;
    grammar_vocab *v = NULL;
    double t0 = now();
    if (grammar_vocab_create((const char *const *)texts, lengths, n, &v, &err) != BRASA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    double t_index = now() - t0;
    grammar_state *s = NULL;
    grammar_state_create(g, &s, &err);
    uint8_t *mask = malloc(n);
    /* walk one output, timing at every step: the mask over the vocabulary, and accepts over all
     * tokens (the per-candidate cost) */
    char out[1 << 16];
    long out_len = -1;
    for (int tries = 0; tries < 20 && out_len < 40; tries++)
        out_len = walk_one(s, out, sizeof out);
    grammar_state_reset(s);
    double mask_total = 0, mask_max = 0, acc_total = 0;
    size_t steps = 0, acc_calls = 0, allowed_total = 0;
    for (long i = 0; i <= out_len; i++) {
        double a = now();
        grammar_state_mask(s, v, mask);
        double b = now() - a;
        mask_total += b;
        mask_max = b > mask_max ? b : mask_max;
        for (size_t k = 0; k < n; k++)
            allowed_total += mask[k];
        a = now();
        size_t ok = 0;
        for (size_t k = 0; k < n; k++)
            ok += lengths[k] && grammar_state_accepts(s, texts[k], lengths[k]);
        acc_total += now() - a;
        acc_calls += n;
        (void)ok;
        steps++;
        if (i < out_len)
            grammar_state_advance(s, out + i, 1);
    }
    printf("{\"tokens\": %zu, \"index_ms\": %.2f, \"steps\": %zu, \"mask_mean_ms\": %.3f, \"mask_max_ms\": %.3f, "
           "\"accepts_mean_ns\": %.1f, \"allowed_mean\": %.1f}\n",
           n, t_index * 1e3, steps, mask_total / (double)steps * 1e3, mask_max * 1e3,
           acc_total / (double)acc_calls * 1e9, (double)allowed_total / (double)steps);
    free(mask);
    grammar_state_free(s);
    grammar_vocab_free(v);
    for (size_t k = 0; k < n; k++)
        free(texts[k]);
    free(texts);
    free(lengths);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: grammar_walk walk|check|compile|bench SCHEMA [N SEED | VOCAB]\n");
        return 2;
    }
    grammar *g = load(argv[2]);
    brasa_error err;
    grammar_state *s = NULL;
    if (grammar_state_create(g, &s, &err) != BRASA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int rc = 0;
    if (!strcmp(argv[1], "compile")) {
        printf("ok\n");
    } else if (!strcmp(argv[1], "walk") && argc == 5) {
        long n = atol(argv[3]);
        rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)atoll(argv[4]) * 0x2545F4914F6CDD1Dull;
        static char out[1 << 20];
        for (long i = 0; i < n; i++) {
            long len = walk_one(s, out, sizeof out);
            if (len < 0) {
                printf("-1\n\n"); /* did not finish: the test reports it */
                continue;
            }
            printf("%ld\n", len);
            fwrite(out, 1, (size_t)len, stdout);
            printf("\n");
        }
    } else if (!strcmp(argv[1], "check")) {
        char *doc;
        size_t len;
        while ((doc = read_record(stdin, &len)) != NULL) {
            grammar_state_reset(s);
            printf("%d\n", grammar_state_advance(s, doc, len) && grammar_state_complete(s));
            free(doc);
        }
    } else if (!strcmp(argv[1], "bench") && argc == 4) {
        rng = 42;
        rc = bench(g, argv[3]);
    } else {
        fprintf(stderr, "usage: grammar_walk walk|check|compile|bench SCHEMA [N SEED | VOCAB]\n");
        rc = 2;
    }
    grammar_state_free(s);
    grammar_free(g);
    return rc;
}
