/* cmd_tokenize.c: `brasa tokenize` and `brasa detokenize`: text <-> token ids with a model's own
 * tokenizer, for checking what a model sees. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/utf8.h"
#include "platform/platform.h"

static const char tokenize_usage[] =
    "Usage: brasa tokenize -m MODEL [--ids | --pieces] [--json] [--no-bos] [--special] TEXT\n"
    "       brasa tokenize -m MODEL [...] -        (read the text from standard input)\n"
    "\n"
    "Prints the tokens of TEXT, one per line as 'ID<TAB>PIECE' by default.\n"
    "\n"
    "  -m, --model FILE  the GGUF model whose tokenizer to use\n"
    "  --ids             only the ids, space-separated on one line\n"
    "  --pieces          only the pieces (the text of each token), one per line\n"
    "  --json            {\"count\": N, \"tokens\": [{\"id\": ID, \"piece\": TEXT}, ...]}\n"
    "  --no-bos          do not add the BOS token the model asks for\n"
    "  --special         recognize control tokens written in the text (<|im_start|>, <bos>, ...)\n";

static const char detokenize_usage[] =
    "Usage: brasa detokenize -m MODEL [--no-special] ID...\n"
    "       brasa detokenize -m MODEL [--no-special] -   (read ids from standard input)\n"
    "\n"
    "Prints the text that the token ids stand for, byte for byte.\n"
    "\n"
    "  -m, --model FILE  the GGUF model whose vocabulary to use\n"
    "  --no-special      leave out control tokens (BOS, end of turn, ...)\n";

/* Writes a piece for people: printable text as is, line breaks and tabs escaped, ill-formed bytes
 * as \xNN (a byte-fallback token holds part of a character). */
static void print_piece(FILE *out, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = utf8_decode(p + i, n - i, &cp);
        if (k < 0) {
            for (int j = 0; j < -k; j++)
                fprintf(out, "\\x%02x", p[i + (size_t)j]);
            i += (size_t)-k;
            continue;
        }
        if (cp == '\n') fputs("\\n", out);
        else if (cp == '\r') fputs("\\r", out);
        else if (cp == '\t') fputs("\\t", out);
        else if (cp == '\\') fputs("\\\\", out);
        else if (cp < 0x20) fprintf(out, "\\x%02x", cp);
        else plat_write_text(out, (const char *)p + i, (size_t)k);
        i += (size_t)k;
    }
}

static bool piece_of(const brasa_model *m, brasa_token t, char *buf, size_t size, size_t *n) {
    brasa_error err;
    return brasa_detokenize(m, &t, 1, BRASA_DETOKENIZE_SPECIAL, buf, size, n, &err) == BRASA_OK;
}

int cmd_tokenize(int argc, char **argv) {
    const char *model_path = NULL, *text_arg = NULL;
    bool ids_only = false, pieces_only = false, json = false, special = false, bos = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(tokenize_usage, stdout);
            return CLI_OK;
        } else if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0) {
            if (++i >= argc)
                return cli_usage_error("tokenize", tokenize_usage, "%s needs a FILE", a);
            model_path = argv[i];
        } else if (strcmp(a, "--ids") == 0) {
            ids_only = true;
        } else if (strcmp(a, "--pieces") == 0) {
            pieces_only = true;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--no-bos") == 0) {
            bos = false;
        } else if (strcmp(a, "--special") == 0) {
            special = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("tokenize", tokenize_usage, "unknown option '%s'", a);
        } else if (text_arg) {
            return cli_usage_error("tokenize", tokenize_usage, "give the text as one argument (quote it)");
        } else {
            text_arg = a;
        }
    }
    if (!model_path)
        return cli_usage_error("tokenize", tokenize_usage, "missing -m MODEL");
    if (!text_arg)
        return cli_usage_error("tokenize", tokenize_usage, "missing TEXT (or - for standard input)");
    if (ids_only + pieces_only + json > 1)
        return cli_usage_error("tokenize", tokenize_usage, "--ids, --pieces and --json exclude each other");

    size_t len = strlen(text_arg);
    char *text = NULL;
    if (strcmp(text_arg, "-") == 0) {
        text = cli_read_stdin(&len);
        if (!text)
            return cli_fail("cannot read standard input");
    }
    brasa_model *m = cli_open_model(model_path);
    if (!m) {
        free(text);
        return CLI_FAILED;
    }
    const char *input = text ? text : text_arg;
    unsigned flags = (bos ? BRASA_TOKENIZE_ADD_BOS : 0) | (special ? BRASA_TOKENIZE_PARSE_SPECIAL : 0);
    brasa_error err;
    size_t n = 0;
    brasa_token *tokens = NULL;
    brasa_status st = brasa_tokenize(m, input, len, flags, NULL, 0, &n, &err);
    if (st == BRASA_ERR_BUFFER_TOO_SMALL) {
        tokens = malloc(n * sizeof *tokens);
        st = tokens ? brasa_tokenize(m, input, len, flags, tokens, n, &n, &err) : BRASA_ERR_NO_MEMORY;
    }
    if (st == BRASA_OK && !tokens)
        n = 0; /* only an empty text needs no buffer */
    int rc = CLI_OK;
    if (st != BRASA_OK) {
        rc = cli_fail("%s: %s", model_path, st == BRASA_ERR_NO_MEMORY ? "out of memory" : err.message);
    } else if (ids_only) {
        for (size_t i = 0; i < n; i++)
            printf("%s%d", i ? " " : "", tokens[i]);
        printf("\n");
    } else {
        char piece[4096];
        size_t plen;
        if (json)
            printf("{\"count\": %zu, \"tokens\": [", n);
        for (size_t i = 0; i < n; i++) {
            if (!piece_of(m, tokens[i], piece, sizeof piece, &plen))
                plen = 0;
            if (json) {
                printf("%s{\"id\": %d, \"piece\": ", i ? ", " : "", tokens[i]);
                json_string(stdout, piece, plen);
                printf("}");
            } else {
                if (!pieces_only)
                    printf("%d\t", tokens[i]);
                print_piece(stdout, piece, plen);
                printf("\n");
            }
        }
        if (json)
            printf("]}\n");
    }
    free(tokens);
    free(text);
    brasa_model_free(m);
    if (fflush(stdout) != 0)
        rc = CLI_FAILED;
    return rc;
}

/* Parses whitespace-separated ids from s into *ids (malloc'ed); returns false with a message. */
static bool parse_ids(const char *s, brasa_token **ids, size_t *n, size_t *cap) {
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == ',')
            s++;
        if (!*s)
            break;
        const char *start = s;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != ',')
            s++;
        char word[32];
        size_t len = (size_t)(s - start);
        int64_t v;
        if (len >= sizeof word) {
            cli_fail("'%.*s...' is not a token id", 20, start);
            return false;
        }
        memcpy(word, start, len);
        word[len] = '\0';
        if (!cli_parse_i64(word, 0, INT32_MAX, &v)) {
            cli_fail("'%s' is not a token id", word);
            return false;
        }
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 64;
            brasa_token *p = realloc(*ids, c * sizeof *p);
            if (!p) {
                cli_fail("out of memory");
                return false;
            }
            *ids = p;
            *cap = c;
        }
        (*ids)[(*n)++] = (brasa_token)v;
    }
    return true;
}

int cmd_detokenize(int argc, char **argv) {
    const char *model_path = NULL;
    bool special = true, from_stdin = false;
    brasa_token *ids = NULL;
    size_t n = 0, cap = 0;
    int rc = CLI_OK;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(detokenize_usage, stdout);
            free(ids);
            return CLI_OK;
        } else if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0) {
            if (++i >= argc)
                rc = cli_usage_error("detokenize", detokenize_usage, "%s needs a FILE", a);
            else
                model_path = argv[i];
        } else if (strcmp(a, "--no-special") == 0) {
            special = false;
        } else if (strcmp(a, "-") == 0) {
            from_stdin = true;
        } else if (a[0] == '-' && !(a[1] >= '0' && a[1] <= '9')) {
            rc = cli_usage_error("detokenize", detokenize_usage, "unknown option '%s'", a);
        } else if (!parse_ids(a, &ids, &n, &cap)) {
            rc = CLI_USAGE;
        }
    }
    if (rc == CLI_OK && !model_path)
        rc = cli_usage_error("detokenize", detokenize_usage, "missing -m MODEL");
    if (rc == CLI_OK && from_stdin) {
        size_t len;
        char *text = cli_read_stdin(&len);
        if (!text)
            rc = cli_fail("cannot read standard input");
        else if (!parse_ids(text, &ids, &n, &cap))
            rc = CLI_USAGE;
        free(text);
    }
    if (rc == CLI_OK && n == 0 && !from_stdin)
        rc = cli_usage_error("detokenize", detokenize_usage, "missing token ids");
    brasa_model *m = rc == CLI_OK ? cli_open_model(model_path) : NULL;
    if (rc == CLI_OK && !m)
        rc = CLI_FAILED;
    if (rc == CLI_OK) {
        brasa_error err;
        size_t bytes = 0;
        unsigned flags = special ? BRASA_DETOKENIZE_SPECIAL : 0;
        brasa_status st = brasa_detokenize(m, ids, n, flags, NULL, 0, &bytes, &err);
        char *out = NULL;
        if (st == BRASA_ERR_BUFFER_TOO_SMALL) {
            out = malloc(bytes);
            st = out ? brasa_detokenize(m, ids, n, flags, out, bytes, &bytes, &err) : BRASA_ERR_NO_MEMORY;
        }
        if (st != BRASA_OK) {
            rc = cli_fail("%s", st == BRASA_ERR_NO_MEMORY ? "out of memory" : err.message);
        } else {
            plat_write_text(stdout, out, bytes);
            if (plat_is_terminal(1))
                fputc('\n', stdout);
            if (fflush(stdout) != 0)
                rc = CLI_FAILED;
        }
        free(out);
    }
    brasa_model_free(m);
    free(ids);
    return rc;
}
