/* cmd_embed.c: `brasa embed`: the embedding vector of each text, from an embedding model (bert, or
 * a model whose file sets a pooling type), for scripts and for checking what a server would return. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "platform/platform.h"

static const char usage[] =
    "Usage: brasa embed -m MODEL [--json] [--special] [--threads N] [--ctx N] [--time] TEXT...\n"
    "       brasa embed -m MODEL [...] -        (read one text from standard input)\n"
    "\n"
    "Prints the embedding of each TEXT, one line of space-separated numbers per text: the model's\n"
    "final hidden states pooled as its file says (mean, first token, last token) and scaled to\n"
    "unit length, so that the dot product of two lines is their cosine similarity.\n"
    "\n"
    "  -m, --model FILE  an embedding model (e.g. all-MiniLM-L6-v2 converted to GGUF)\n"
    "  --json            {\"dim\": D, \"pooling\": \"mean\", \"tokens\": [N, ...], \"embeddings\": [[...], ...]}\n"
    "  --special         recognize control tokens written in the text ([SEP], <|im_end|>, ...)\n"
    "  --threads N       compute threads (default: one per physical core)\n"
    "  --ctx N           the longest input in tokens (default: the model's trained length)\n"
    "  --time            also print to standard error how long the embeddings took\n";

/* The tokens of one text, with the model's BOS/EOS ([CLS] ... [SEP]); NULL after printing why. */
static brasa_token *tokenize(const brasa_model *m, const char *model_path, const char *text, size_t len, unsigned flags,
                             size_t *n) {
    brasa_error err;
    brasa_token *tokens = NULL;
    brasa_status st = brasa_tokenize(m, text, len, flags, NULL, 0, n, &err);
    if (st == BRASA_ERR_BUFFER_TOO_SMALL) {
        tokens = malloc(*n * sizeof *tokens);
        st = tokens ? brasa_tokenize(m, text, len, flags, tokens, *n, n, &err) : BRASA_ERR_NO_MEMORY;
    } else if (st == BRASA_OK) {
        tokens = malloc(sizeof *tokens); /* no tokens: brasa_embed says what is wrong with that */
        if (!tokens)
            st = BRASA_ERR_NO_MEMORY;
    }
    if (st != BRASA_OK) {
        cli_fail("%s: %s", model_path, st == BRASA_ERR_NO_MEMORY ? "out of memory" : err.message);
        free(tokens);
        return NULL;
    }
    return tokens;
}

static void print_vectors(const float *v, size_t n_texts, int32_t dim, const size_t *n_tokens, const brasa_model_desc *d,
                          bool json) {
    if (json) {
        printf("{\"dim\": %d, \"pooling\": \"%s\", \"tokens\": [", dim, brasa_pooling_name(d->pooling));
        for (size_t t = 0; t < n_texts; t++)
            printf("%s%zu", t ? ", " : "", n_tokens[t]);
        printf("], \"embeddings\": [");
    }
    for (size_t t = 0; t < n_texts; t++) {
        if (json)
            printf("%s[", t ? ", " : "");
        for (int32_t i = 0; i < dim; i++)
            printf(json ? "%s%.9g" : "%s%.8g", i ? (json ? ", " : " ") : "", (double)v[t * (size_t)dim + (size_t)i]);
        printf(json ? "]" : "\n");
    }
    if (json)
        printf("]}\n");
}

int cmd_embed(int argc, char **argv) {
    const char *model_path = NULL;
    bool json = false, special = false, timing = false;
    int64_t threads = 0, ctx = 0;
    const char **texts = calloc((size_t)argc, sizeof *texts);
    size_t n_texts = 0;
    if (!texts)
        return cli_fail("out of memory");
    int rc = CLI_OK;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(usage, stdout);
            free(texts);
            return CLI_OK;
        } else if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0) {
            if (++i >= argc)
                rc = cli_usage_error("embed", usage, "%s needs a FILE", a);
            else
                model_path = argv[i];
        } else if (strcmp(a, "--threads") == 0 || strcmp(a, "--ctx") == 0) {
            const bool is_threads = a[2] == 't';
            if (++i >= argc || !cli_parse_i64(argv[i], 1, is_threads ? 1024 : 1 << 22, is_threads ? &threads : &ctx))
                rc = cli_usage_error("embed", usage, "%s needs a number from 1%s", a, is_threads ? " to 1024" : "");
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--special") == 0) {
            special = true;
        } else if (strcmp(a, "--time") == 0) {
            timing = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = cli_usage_error("embed", usage, "unknown option '%s'", a);
        } else {
            texts[n_texts++] = a;
        }
    }
    if (rc == CLI_OK && !model_path)
        rc = cli_usage_error("embed", usage, "missing -m MODEL");
    if (rc == CLI_OK && n_texts == 0)
        rc = cli_usage_error("embed", usage, "missing TEXT (or - for standard input)");
    for (size_t t = 0; rc == CLI_OK && t < n_texts; t++)
        if (strcmp(texts[t], "-") == 0 && n_texts > 1)
            rc = cli_usage_error("embed", usage, "- (standard input) is the only text when given");
    if (rc != CLI_OK) {
        free(texts);
        return rc;
    }

    char *input = NULL;
    size_t input_len = 0;
    if (n_texts > 0 && strcmp(texts[0], "-") == 0 && !(input = cli_read_stdin(&input_len))) {
        free(texts);
        return cli_fail("cannot read standard input");
    }
    brasa_model *m = cli_open_model(model_path);
    brasa_context *c = NULL;
    brasa_token **tokens = calloc(n_texts, sizeof *tokens);
    size_t *n_tokens = calloc(n_texts, sizeof *n_tokens);
    float *vectors = NULL;
    brasa_model_desc d;
    memset(&d, 0, sizeof d);
    brasa_error err;
    if (!m || !tokens || !n_tokens) {
        if (m)
            cli_fail("out of memory");
        rc = CLI_FAILED;
    }
    if (rc == CLI_OK) {
        brasa_model_describe(m, &d);
        if (!d.is_embedding) {
            cli_fail("%s: %s makes no embeddings (its file sets no pooling type; embedding models such as bert do)",
                     model_path, d.architecture);
            rc = CLI_FAILED;
        }
    }
    const unsigned flags = BRASA_TOKENIZE_ADD_BOS | (special ? BRASA_TOKENIZE_PARSE_SPECIAL : 0);
    for (size_t t = 0; rc == CLI_OK && t < n_texts; t++) {
        const char *text = input ? input : texts[t];
        tokens[t] = tokenize(m, model_path, text, input ? input_len : strlen(text), flags, &n_tokens[t]);
        if (!tokens[t])
            rc = CLI_FAILED;
    }
    if (rc == CLI_OK) {
        brasa_context_params cp = brasa_context_default_params();
        cp.n_threads = (int32_t)threads;
        cp.n_ctx = (int32_t)ctx;
        if (brasa_context_create(m, &cp, &c, &err) != BRASA_OK) {
            cli_fail("%s: %s", model_path, err.message);
            rc = CLI_FAILED;
        }
    }
    if (rc == CLI_OK && !(vectors = malloc(n_texts * (size_t)d.embedding_dim * sizeof *vectors))) {
        cli_fail("out of memory");
        rc = CLI_FAILED;
    }
    if (rc == CLI_OK) {
        const double t0 = plat_time_seconds();
        if (brasa_embed_batch(c, (const brasa_token *const *)tokens, n_tokens, n_texts, vectors,
                              n_texts * (size_t)d.embedding_dim, &err) != BRASA_OK) {
            rc = cli_fail("%s: %s", model_path, err.message);
        } else {
            const double seconds = plat_time_seconds() - t0;
            print_vectors(vectors, n_texts, d.embedding_dim, n_tokens, &d, json);
            if (timing) {
                size_t total = 0;
                for (size_t t = 0; t < n_texts; t++)
                    total += n_tokens[t];
                fprintf(stderr, "%zu embeddings of %zu tokens in %.3f s: %.1f embeddings/s, %.0f tokens/s (%s)\n", n_texts,
                        total, seconds, (double)n_texts / seconds, (double)total / seconds, brasa_context_backend(c));
            }
            if (fflush(stdout) != 0)
                rc = CLI_FAILED;
        }
    }
    for (size_t t = 0; tokens && t < n_texts; t++)
        free(tokens[t]);
    free(tokens);
    free(n_tokens);
    free(vectors);
    free(input);
    free(texts);
    brasa_context_free(c);
    brasa_model_free(m);
    return rc;
}
