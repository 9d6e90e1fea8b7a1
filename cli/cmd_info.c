/* cmd_info.c: `brasa info MODEL [--json] [--tensors] [--metadata]`: what is inside a model file. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: brasa info MODEL [--json] [--tensors] [--metadata]\n"
    "\n"
    "Describes a GGUF model: architecture, parameters, layers, heads, context, rope, tokenizer,\n"
    "chat template, and the tensors by type with their sizes. The file is fully validated.\n"
    "MODEL is a file or a model name, OWNER/REPO[:QUANT] (see brasa pull).\n"
    "\n"
    "  --json       one JSON object on standard output, for programs\n"
    "  --tensors    also list every tensor (name, type, shape, bytes)\n"
    "  --metadata   also list every metadata key and value\n";

typedef struct type_total {
    const char *name;
    uint32_t type;
    size_t count;
    uint64_t bytes;
    int64_t elements;
} type_total;

/* Sums tensors per type; returns the number of distinct types (at most 64 listed). */
static size_t totals_by_type(const brasa_model *m, type_total *totals, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < brasa_model_tensor_count(m); i++) {
        brasa_tensor_desc t;
        brasa_model_tensor(m, i, &t);
        size_t k = 0;
        while (k < n && totals[k].type != t.type)
            k++;
        if (k == n) {
            if (n == cap)
                continue;
            totals[n++] = (type_total){ t.type_name, t.type, 0, 0, 0 };
        }
        int64_t el = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
        totals[k].count++;
        totals[k].bytes += t.bytes;
        totals[k].elements += el;
    }
    return n;
}

static const char *vocab_kind(brasa_vocab_type t) {
    switch (t) {
    case BRASA_VOCAB_SPM: return "SentencePiece-style (scores, byte fallback)";
    case BRASA_VOCAB_BPE: return "BPE (merges)";
    case BRASA_VOCAB_WPM: return "WordPiece (BERT's normalizer, longest pieces first)";
    default: return "none usable";
    }
}

static void human_size(uint64_t bytes, char *out, size_t size) {
    if (bytes >= 1000000000ull)
        snprintf(out, size, "%.2f GB", (double)bytes / 1e9);
    else if (bytes >= 1000000ull)
        snprintf(out, size, "%.2f MB", (double)bytes / 1e6);
    else if (bytes >= 1000ull)
        snprintf(out, size, "%.2f kB", (double)bytes / 1e3);
    else
        snprintf(out, size, "%" PRIu64 " B", bytes);
}

/* Prints a token's vocabulary text for people, control characters made visible. */
static void print_token_text(const brasa_model *m, brasa_token t) {
    const char *s = brasa_token_text(m, t);
    if (!s) {
        printf("-");
        return;
    }
    printf("%d '", t);
    for (; *s; s++) {
        if (*s == '\n') printf("\\n");
        else if (*s == '\t') printf("\\t");
        else putchar(*s);
    }
    printf("'");
}

static void print_template_head(const char *tpl, int max_lines) {
    int line = 0;
    const char *p = tpl;
    while (*p && line < max_lines) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        printf("%s%.*s%s\n", line == 0 ? "" : "                 ", (int)(len > 100 ? 100 : len), p,
               len > 100 ? " ..." : "");
        line++;
        if (!nl)
            return;
        p = nl + 1;
    }
    if (*p)
        printf("                 ... (%zu bytes in all)\n", strlen(tpl));
}

static void print_human(const char *path, const brasa_model *m, bool tensors, bool metadata) {
    brasa_model_desc d;
    brasa_model_describe(m, &d);
    char size[32];
    human_size(d.file_bytes, size, sizeof size);
    printf("%s\n", path);
    if (d.name[0])
        printf("  name           %s\n", d.name);
    printf("  architecture   %s\n", d.architecture);
    printf("  parameters     %.2f M (%" PRId64 ")\n", (double)d.n_params / 1e6, d.n_params);
    printf("  file           %s, GGUF v%u, %zu tensors, %zu metadata keys\n", size, d.gguf_version,
           brasa_model_tensor_count(m), brasa_model_meta_count(m));
    printf("  layers         %d\n", d.n_layer);
    printf("  embedding      %d\n", d.n_embd);
    printf("  feed-forward   %d\n", d.n_ff);
    if (d.n_expert > 0) {
        printf("  experts        %d, %d used per token, feed-forward %d each\n", d.n_expert, d.n_expert_used, d.n_ff_exp);
        printf("  active         %.2f M parameters per token (%.1f%%)\n", (double)d.n_params_active / 1e6,
               d.n_params > 0 ? 100.0 * (double)d.n_params_active / (double)d.n_params : 0.0);
    }
    printf("  heads          %d, KV heads %d, head dim %d\n", d.n_head, d.n_head_kv, d.head_dim);
    printf("  context        %d tokens (trained)\n", d.n_ctx_train);
    printf("  rope           base %g, dims %d, scaling %s", d.rope_freq_base, d.rope_dim, d.rope_scaling);
    if (d.rope_scaling_factor > 0)
        printf(" x%g", d.rope_scaling_factor);
    printf("\n");
    if (d.sliding_window)
        printf("  sliding window %d\n", d.sliding_window);
    printf("  vocabulary     %d tokens, %s, model '%s'", d.n_vocab, vocab_kind(d.vocab_type), d.tokenizer_model);
    if (d.tokenizer_pre[0])
        printf(", pre-tokenizer '%s'", d.tokenizer_pre);
    printf("\n");
    if (d.tokenizer_error)
        printf("                 (cannot tokenize: %s)\n", d.tokenizer_error);
    if (d.vocab_type != BRASA_VOCAB_NONE) {
        static const struct { brasa_special which; const char *name; } specials[] = {
            { BRASA_SPECIAL_BOS, "bos" }, { BRASA_SPECIAL_EOS, "eos" }, { BRASA_SPECIAL_EOT, "eot" },
            { BRASA_SPECIAL_UNK, "unk" }, { BRASA_SPECIAL_PAD, "pad" },
        };
        printf("  special tokens");
        for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
            brasa_token t = brasa_token_special(m, specials[i].which);
            if (t == BRASA_TOKEN_NONE)
                continue;
            printf(" %s ", specials[i].name);
            print_token_text(m, t);
        }
        printf("\n");
        /* what ends a reply: eos and eot for most, harmony's <|return|> and <|call|> for gpt-oss */
        int n_eog = 0;
        for (brasa_token t = 0; t < d.n_vocab; t++)
            if (brasa_token_is_eog(m, t)) {
                printf("%s ", n_eog++ ? "" : "  ends at       ");
                print_token_text(m, t);
            }
        if (n_eog)
            printf("\n");
    }
    const char *format = d.vocab_type != BRASA_VOCAB_NONE ? brasa_chat_format_detect(m) : NULL;
    if (d.chat_template)
        printf("  chat format    the file's template (Jinja, %zu bytes%s)\n", strlen(d.chat_template),
               d.chat_template_tool_use ? ", and a tool_use variant" : "");
    else
        printf("  chat format    %s\n", format ? format : "none: the file has no template and brasa recognizes no "
                                                      "format (give one with --chat-template-file)");
    if (!d.chat_template && format)
        printf("                 (built in, from the vocabulary: the file has no template)\n");
    printf("  runs           %s\n", d.run_error ? d.run_error : "yes");
    if (d.is_embedding)
        printf("  embeddings     %d dimensions, %s pooling, %s attention%s\n", d.embedding_dim, brasa_pooling_name(d.pooling),
               d.causal_attention ? "causal" : "bidirectional", d.can_generate ? "" : " (no output head: brasa embed)");
    printf("  chat template  ");
    if (d.chat_template)
        print_template_head(d.chat_template, 4);
    else
        printf("none\n");

    type_total totals[64];
    size_t n = totals_by_type(m, totals, 64);
    printf("  tensors by type\n");
    for (size_t i = 0; i < n; i++) {
        human_size(totals[i].bytes, size, sizeof size);
        printf("    %-8s %5zu tensors %14" PRId64 " elements %12s (%" PRIu64 " bytes)\n",
               totals[i].name, totals[i].count, totals[i].elements, size, totals[i].bytes);
    }
    human_size(d.tensor_bytes, size, sizeof size);
    printf("    %-8s %5zu tensors %14" PRId64 " elements %12s (%" PRIu64 " bytes)\n", "total",
           brasa_model_tensor_count(m), d.n_params, size, d.tensor_bytes);

    if (tensors) {
        printf("  tensors\n");
        for (size_t i = 0; i < brasa_model_tensor_count(m); i++) {
            brasa_tensor_desc t;
            brasa_model_tensor(m, i, &t);
            printf("    %-40s %-6s [", t.name, t.type_name);
            for (uint32_t k = 0; k < t.n_dims; k++)
                printf("%s%" PRId64, k ? ", " : "", t.ne[k]);
            printf("] %" PRIu64 " bytes at %" PRIu64 "\n", t.bytes, t.offset);
        }
    }
    if (metadata) {
        printf("  metadata\n");
        char value[512];
        for (size_t i = 0; i < brasa_model_meta_count(m); i++) {
            brasa_model_meta_value(m, i, value, sizeof value);
            for (char *c = value; *c; c++)
                if (*c == '\n' || *c == '\r' || *c == '\t')
                    *c = ' ';
            printf("    %-44s %-14s %.160s\n", brasa_model_meta_key(m, i), brasa_model_meta_type(m, i), value);
        }
    }
}

static void print_json(const char *path, const brasa_model *m) {
    brasa_model_desc d;
    brasa_model_describe(m, &d);
    printf("{\"file\": ");
    json_cstr(stdout, path);
    printf(", \"name\": ");
    json_cstr(stdout, d.name);
    printf(", \"architecture\": ");
    json_cstr(stdout, d.architecture);
    printf(", \"gguf_version\": %u, \"file_bytes\": %" PRIu64 ", \"tensor_bytes\": %" PRIu64
           ", \"n_params\": %" PRId64 ", \"n_tensors\": %zu, \"n_metadata\": %zu",
           d.gguf_version, d.file_bytes, d.tensor_bytes, d.n_params, brasa_model_tensor_count(m),
           brasa_model_meta_count(m));
    printf(", \"n_layer\": %d, \"n_embd\": %d, \"n_ff\": %d, \"n_head\": %d, \"n_head_kv\": %d, \"head_dim\": %d"
           ", \"n_ctx_train\": %d, \"rope_dim\": %d, \"rope_freq_base\": %.9g, \"rope_scaling\": ",
           d.n_layer, d.n_embd, d.n_ff, d.n_head, d.n_head_kv, d.head_dim, d.n_ctx_train, d.rope_dim,
           (double)d.rope_freq_base);
    json_cstr(stdout, d.rope_scaling);
    printf(", \"rope_scaling_factor\": %.9g, \"sliding_window\": %d", (double)d.rope_scaling_factor, d.sliding_window);
    printf(", \"n_expert\": %d, \"n_expert_used\": %d, \"n_ff_exp\": %d, \"n_params_active\": %" PRId64, d.n_expert,
           d.n_expert_used, d.n_ff_exp, d.n_params_active);
    printf(", \"vocab\": {\"size\": %d, \"type\": \"%s\", \"model\": ", d.n_vocab,
           d.vocab_type == BRASA_VOCAB_SPM ? "spm" : d.vocab_type == BRASA_VOCAB_BPE ? "bpe"
           : d.vocab_type == BRASA_VOCAB_WPM ? "wpm" : "none");
    json_cstr(stdout, d.tokenizer_model);
    printf(", \"pre\": ");
    json_cstr(stdout, d.tokenizer_pre);
    printf(", \"error\": ");
    if (d.tokenizer_error)
        json_cstr(stdout, d.tokenizer_error);
    else
        printf("null");
    printf(", \"bos\": %d, \"eos\": %d, \"eot\": %d, \"end_of_generation\": [", brasa_token_special(m, BRASA_SPECIAL_BOS),
           brasa_token_special(m, BRASA_SPECIAL_EOS), brasa_token_special(m, BRASA_SPECIAL_EOT));
    for (brasa_token t = 0, n_eog = 0; t < d.n_vocab && d.vocab_type != BRASA_VOCAB_NONE; t++)
        if (brasa_token_is_eog(m, t))
            printf("%s%d", n_eog++ ? ", " : "", t);
    printf("]}");
    const char *format = d.vocab_type != BRASA_VOCAB_NONE ? brasa_chat_format_detect(m) : NULL;
    printf(", \"chat_format\": ");
    if (format)
        json_cstr(stdout, format);
    else
        printf("null");
    printf(", \"embedding\": {\"is_embedding\": %s, \"can_generate\": %s, \"dim\": %d, \"pooling\": \"%s\", "
           "\"causal\": %s}", d.is_embedding ? "true" : "false", d.can_generate ? "true" : "false", d.embedding_dim,
           brasa_pooling_name(d.pooling), d.causal_attention ? "true" : "false");
    printf(", \"run_error\": ");
    if (d.run_error)
        json_cstr(stdout, d.run_error);
    else
        printf("null");
    printf(", \"chat_template\": ");
    if (d.chat_template)
        json_cstr(stdout, d.chat_template);
    else
        printf("null");
    type_total totals[64];
    size_t n = totals_by_type(m, totals, 64);
    printf(", \"tensor_types\": [");
    for (size_t i = 0; i < n; i++)
        printf("%s{\"type\": \"%s\", \"count\": %zu, \"elements\": %" PRId64 ", \"bytes\": %" PRIu64 "}",
               i ? ", " : "", totals[i].name, totals[i].count, totals[i].elements, totals[i].bytes);
    printf("]}\n");
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool json = false, tensors = false, metadata = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(usage, stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--tensors") == 0) {
            tensors = true;
        } else if (strcmp(argv[i], "--metadata") == 0) {
            metadata = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage_error("info", usage, "unknown option '%s'", argv[i]);
        } else if (path) {
            return cli_usage_error("info", usage, "one model at a time ('%s' and '%s')", path, argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return cli_usage_error("info", usage, "missing MODEL");
    char resolved[CLI_MODEL_PATH_MAX];
    if (!(path = cli_model_path(path, resolved, sizeof resolved))) /* a model name becomes its file */
        return CLI_FAILED;
    brasa_model *m = cli_open_model(path);
    if (!m)
        return CLI_FAILED;
    if (json)
        print_json(path, m);
    else
        print_human(path, m, tensors, metadata);
    brasa_model_free(m);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAILED;
}
