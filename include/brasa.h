/* brasa.h: the public API of libbrasa, a local inference engine for GGUF models.
 *
 * Everything a program needs goes through this header; every type is opaque and every function that
 * can fail returns a brasa_status and, when given one, fills a brasa_error with a message a person can
 * read. The library never prints and never exits.
 *
 * A worked example: open a model, print its architecture, tokenize a string.
 *
 *     brasa_error err;
 *     brasa_model *model = NULL;
 *     brasa_model_params mp = brasa_model_default_params();
 *     if (brasa_model_open("SmolLM2-135M-Instruct.Q4_1.gguf", &mp, &model, &err) != BRASA_OK) {
 *         fprintf(stderr, "%s\n", err.message);
 *         return 1;
 *     }
 *     brasa_model_desc desc;
 *     brasa_model_describe(model, &desc);
 *     printf("%s, %d layers\n", desc.architecture, desc.n_layer);
 *
 *     brasa_token ids[64];
 *     size_t n = 0;
 *     const char *text = "¿Qué tal?";
 *     if (brasa_tokenize(model, text, strlen(text), BRASA_TOKENIZE_DEFAULT, ids, 64, &n, &err) == BRASA_OK)
 *         printf("%zu tokens\n", n);
 *     brasa_model_free(model);
 *
 * Ownership: whoever creates an object frees it with the matching _free, and every _free accepts NULL.
 * Strings returned by the library point into the model and live as long as it does.
 */
#ifndef BRASA_H
#define BRASA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BRASA_VERSION_STRING "0.1.0"

/* Status codes: 0 is success, negative values are errors, positive values are soft conditions. */
typedef enum brasa_status {
    BRASA_OK = 0,
    BRASA_ERR_INVALID_ARGUMENT = -1, /* a caller passed something unusable */
    BRASA_ERR_IO = -2,               /* a file could not be opened, mapped or read */
    BRASA_ERR_FORMAT = -3,           /* a model file is truncated, corrupt or hostile */
    BRASA_ERR_UNSUPPORTED = -4,      /* valid input that this build cannot handle (yet) */
    BRASA_ERR_NO_MEMORY = -5,
    BRASA_ERR_BUFFER_TOO_SMALL = -6, /* the output did not fit; the needed size was reported */
    BRASA_ERR_INTERNAL = -7,         /* a bug in brasa: please report it */
    BRASA_CONTEXT_FULL = 1,          /* the tokens do not fit in the context; nothing was evaluated */
    BRASA_ABORTED = 2                /* stopped on request (Ctrl-C, a callback) */
} brasa_status;

/* A short English name for a status, e.g. "corrupt model file". Never NULL. */
const char *brasa_status_str(brasa_status status);

/* What went wrong, for people: filled by any function that takes one and fails. */
typedef struct brasa_error {
    brasa_status status;
    char message[512];
} brasa_error;

/* ---- Models ------------------------------------------------------------------------------------ */

typedef struct brasa_model brasa_model;

typedef struct brasa_model_params {
    /* Called during loading with a fraction in [0, 1]; NULL for none. */
    void (*progress)(float fraction, void *user_data);
    void *progress_user_data;
} brasa_model_params;

brasa_model_params brasa_model_default_params(void);

/* Opens and validates a GGUF file (mapped, read-only). On success *out owns the model. */
brasa_status brasa_model_open(const char *path, const brasa_model_params *params, brasa_model **out,
                              brasa_error *err);
void brasa_model_free(brasa_model *model);

typedef enum brasa_vocab_type {
    BRASA_VOCAB_NONE = 0, /* the file carries no usable tokenizer */
    BRASA_VOCAB_SPM = 1,  /* SentencePiece-style: scores and byte fallback (tokenizer.ggml.model = llama) */
    BRASA_VOCAB_BPE = 2,  /* BPE with merges: byte-level (tokenizer.ggml.model = gpt2) or over UTF-8 (gemma4) */
    BRASA_VOCAB_WPM = 3   /* WordPiece: BERT's normalizer and longest pieces first (tokenizer.ggml.model = bert) */
} brasa_vocab_type;

/* How a model makes one vector of an input's final hidden states ({arch}.pooling_type; the numbers
 * are llama.cpp's, which GGUF files carry). */
typedef enum brasa_pooling {
    BRASA_POOLING_NONE = 0, /* the file sets none: a decoder that makes no embeddings */
    BRASA_POOLING_MEAN = 1, /* the mean over the input's tokens (sentence-transformers' usual choice) */
    BRASA_POOLING_CLS = 2,  /* the first token's ([CLS]) */
    BRASA_POOLING_LAST = 3, /* the last token's (decoder embedding models) */
    BRASA_POOLING_RANK = 4  /* a reranker's score head: not supported yet */
} brasa_pooling;

/* "none", "mean", "cls", "last", "rank"; "unknown" for other values. Never NULL. */
const char *brasa_pooling_name(brasa_pooling pooling);

/* The shape of a model, read from its metadata. Zero where the file does not say. */
typedef struct brasa_model_desc {
    const char *architecture;  /* general.architecture, e.g. "llama" */
    const char *name;          /* general.name, or "" */
    uint32_t gguf_version;
    int64_t n_params;          /* elements over all tensors */
    uint64_t file_bytes;
    uint64_t tensor_bytes;
    int32_t n_layer;           /* {arch}.block_count */
    int32_t n_embd;            /* {arch}.embedding_length */
    int32_t n_ff;              /* {arch}.feed_forward_length */
    int32_t n_head;            /* {arch}.attention.head_count */
    int32_t n_head_kv;         /* {arch}.attention.head_count_kv (= n_head when absent) */
    int32_t head_dim;          /* {arch}.attention.key_length, else n_embd / n_head */
    int32_t n_ctx_train;       /* {arch}.context_length */
    int32_t rope_dim;          /* {arch}.rope.dimension_count, else head_dim */
    float rope_freq_base;      /* {arch}.rope.freq_base (10000 when absent) */
    const char *rope_scaling;  /* {arch}.rope.scaling.type, or "none" */
    float rope_scaling_factor; /* {arch}.rope.scaling.factor, or 0 */
    int32_t sliding_window;    /* {arch}.attention.sliding_window, or 0 */
    int32_t n_vocab;
    brasa_vocab_type vocab_type;
    const char *tokenizer_model; /* tokenizer.ggml.model, or "" */
    const char *tokenizer_pre;   /* tokenizer.ggml.pre, or "" */
    const char *tokenizer_error; /* why the tokenizer is unusable, or NULL when it works */
    const char *chat_template;   /* tokenizer.chat_template, or NULL */
    const char *chat_template_tool_use; /* tokenizer.chat_template.tool_use, or NULL */
    const char *run_error;       /* why brasa cannot run this model, or NULL when it can */
    uint64_t weight_bytes_per_token; /* weight bytes one decoded token reads (0 when it cannot run);
                                      * of a mixture of experts, only the experts a token uses */
    int32_t n_expert;          /* {arch}.expert_count: 0 for a dense model */
    int32_t n_expert_used;     /* {arch}.expert_used_count: experts each token is routed to */
    int32_t n_ff_exp;          /* {arch}.expert_feed_forward_length */
    int64_t n_params_active;   /* elements one token computes with (= n_params for a dense model) */
    int64_t macs_per_token;    /* multiply-adds of one token's products with the layers' weight
                                * matrices (of a mixture of experts, the experts used): what prefill
                                * computes per token. Not the embedding lookup (no product), not the
                                * output head (a prompt runs it for its last token only), not
                                * attention over the cache (it grows with the context). 0 when
                                * brasa cannot run the model. */
    /* What the model is for. An embedding model makes a vector per input (brasa_embed): an encoder
     * (bert), or any model whose file sets a pooling type. A model generates when it has an output
     * head and causal attention (brasa_decode, brasa_generate); a decoder may do both. */
    bool is_embedding;
    bool can_generate;
    int32_t embedding_dim;     /* the length of brasa_embed's vectors (n_embd); 0 when is_embedding is false */
    brasa_pooling pooling;     /* {arch}.pooling_type */
    bool causal_attention;     /* {arch}.attention.causal: false when every token sees the whole input */
} brasa_model_desc;

void brasa_model_describe(const brasa_model *model, brasa_model_desc *desc);

/* Metadata, in file order. Values of every type are rendered as text (arrays: their first elements
 * and length). Returns the bytes needed excluding the terminating NUL, like snprintf. */
size_t brasa_model_meta_count(const brasa_model *model);
const char *brasa_model_meta_key(const brasa_model *model, size_t index);
const char *brasa_model_meta_type(const brasa_model *model, size_t index); /* "u32", "string", "array[string]" */
size_t brasa_model_meta_value(const brasa_model *model, size_t index, char *buf, size_t size);

typedef struct brasa_tensor_desc {
    const char *name;
    const char *type_name; /* "q4_K", "f32", ... */
    uint32_t type;         /* the GGUF/ggml type number */
    uint32_t n_dims;
    int64_t ne[4];         /* elements along each dimension, ne[0] fastest */
    uint64_t offset;       /* from the start of the file */
    uint64_t bytes;
} brasa_tensor_desc;

size_t brasa_model_tensor_count(const brasa_model *model);
brasa_status brasa_model_tensor(const brasa_model *model, size_t index, brasa_tensor_desc *desc);

/* ---- Tokens ------------------------------------------------------------------------------------ */

typedef int32_t brasa_token;
#define BRASA_TOKEN_NONE (-1)

enum {
    BRASA_TOKENIZE_DEFAULT = 0,
    BRASA_TOKENIZE_ADD_BOS = 1 << 0,       /* prepend BOS when the model asks for it (tokenizer.ggml.add_bos_token) */
    BRASA_TOKENIZE_PARSE_SPECIAL = 1 << 1  /* recognize control tokens such as <|im_start|> written in the text */
};

/* Turns UTF-8 text (len bytes, need not be NUL-terminated, may be invalid UTF-8) into tokens.
 * Writes up to capacity tokens and sets *n_tokens to the full count; when capacity is too small it
 * returns BRASA_ERR_BUFFER_TOO_SMALL and *n_tokens says how many are needed. */
brasa_status brasa_tokenize(const brasa_model *model, const char *text, size_t len, unsigned flags,
                            brasa_token *tokens, size_t capacity, size_t *n_tokens, brasa_error *err);

enum {
    BRASA_DETOKENIZE_DEFAULT = 0,
    BRASA_DETOKENIZE_SPECIAL = 1 << 0 /* render control tokens (BOS, <|im_end|>...) as their text */
};

/* Turns tokens back into bytes (exactly the text they stand for, for lossless tokenizers). Writes up
 * to size bytes (no NUL) and sets *n_bytes to the full length; BRASA_ERR_BUFFER_TOO_SMALL as above. */
brasa_status brasa_detokenize(const brasa_model *model, const brasa_token *tokens, size_t n, unsigned flags,
                              char *buf, size_t size, size_t *n_bytes, brasa_error *err);

/* Streaming decode for output one token at a time: never emits part of a multi-byte UTF-8 character;
 * bytes that can never complete one are emitted as they are. */
typedef struct brasa_decoder brasa_decoder;

brasa_status brasa_decoder_create(const brasa_model *model, unsigned flags, brasa_decoder **out, brasa_error *err);
void brasa_decoder_free(brasa_decoder *decoder);
/* Feeds one token; *out points at the bytes ready to print (valid until the next call) and *n_out is
 * their count, possibly 0. */
brasa_status brasa_decoder_push(brasa_decoder *decoder, brasa_token token, const char **out, size_t *n_out,
                                brasa_error *err);
/* Returns whatever is still held back (an incomplete sequence at the end of the stream). */
void brasa_decoder_flush(brasa_decoder *decoder, const char **out, size_t *n_out);

int32_t brasa_vocab_size(const brasa_model *model);
/* The token's text as stored in the vocabulary (e.g. "Ġthe", "▁the", "<0x0A>"); NULL when out of range. */
const char *brasa_token_text(const brasa_model *model, brasa_token token);
bool brasa_token_is_control(const brasa_model *model, brasa_token token);

typedef enum brasa_special {
    BRASA_SPECIAL_BOS,
    BRASA_SPECIAL_EOS,
    BRASA_SPECIAL_EOT, /* end of turn, e.g. <|im_end|> or <end_of_turn> */
    BRASA_SPECIAL_UNK,
    BRASA_SPECIAL_PAD
} brasa_special;

/* The id of a special token, or BRASA_TOKEN_NONE. */
brasa_token brasa_token_special(const brasa_model *model, brasa_special which);

/* ---- Inference contexts ------------------------------------------------------------------------ */

/* Inference state: the KV cache of one or more sequences (conversations) and scratch memory, sized
 * once at creation. Many contexts can share one model; one context is used by one thread at a time.
 * The functions without a sequence number work on sequence 0. */
typedef struct brasa_context brasa_context;

/* How the KV cache stores keys and values. Half precision (the default, as in llama.cpp) takes half
 * the memory and half the reads per token; f32 is exact to float rounding (the reference tests). */
typedef enum brasa_kv_type {
    BRASA_KV_DEFAULT = 0, /* f16 */
    BRASA_KV_F16,
    BRASA_KV_F32
} brasa_kv_type;

typedef struct brasa_context_params {
    int32_t n_ctx;     /* tokens the KV cache holds per sequence; 0: the trained context, at most 4096 */
    int32_t n_batch;   /* prompt tokens evaluated at once; 0: 64 (a model whose tokens see the whole
                        * input, such as bert, evaluates its n_ctx at once and keeps no KV cache) */
    int32_t n_threads; /* compute threads; 0: one per physical core */
    int32_t n_seq;     /* independent sequences, each with its own n_ctx-token cache; 0: 1 */
    int32_t kv_type;   /* a brasa_kv_type */
    /* where the model runs: NULL or "cpu"; "cuda" or "hip" (device 0), "cuda:1": a GPU backend
     * module loaded at run time */
    const char *device;
    /* With a GPU device, how many layers run there: the last ones, with the output head; the CPU
     * runs the others (and the embedding lookup) in the same forward pass. BRASA_GPU_LAYERS_AUTO
     * (the default) takes as many as the device's free memory holds beside the caches and scratch;
     * N > 0 takes N (all when N >= the model's layers); BRASA_GPU_LAYERS_NONE runs all on the CPU. */
    int32_t gpu_layers;
    /* Called with a fraction in [0, 1] while weights are copied to a GPU device; NULL for none. */
    void (*progress)(float fraction, void *user_data);
    void *progress_user_data;
    /* Started by an MPI launcher as one of several processes (mpirun -n N brasa ...), the model's
     * layers are split among them, in order, as a pipeline: by each process's available memory,
     * or by these shares, one per process ("3,1": process 0 takes three quarters of the bytes).
     * NULL: by memory. In a process started alone, shares are an error. */
    const char *pipeline_split;
} brasa_context_params;

#define BRASA_GPU_LAYERS_AUTO 0
#define BRASA_GPU_LAYERS_NONE (-1)
#define BRASA_GPU_LAYERS_ALL INT32_MAX

/* ---- one model across several processes ----
 * Started by an MPI launcher as one of several processes (mpirun -n N PROGRAM ...; over SSH between
 * machines with --host), every process calls brasa_group_start first. Process 0 then works as
 * usual: each context it creates runs its share of the model's layers (params.pipeline_split) and
 * drives the others, which hand the residual stream on, layer range to layer range; its results
 * are bit for bit those of one process. Every other process opens the same model file and calls
 * brasa_group_serve, which returns when process 0 calls brasa_group_stop. Started alone, a
 * process is rank 0 of a group of one and nothing changes. brasa opens no port for this: MPI
 * launches and carries. */
brasa_status brasa_group_start(int *rank, int *size, brasa_error *err);
/* Serves process 0 with model (NULL when this process could not open it: why_not says why, and
 * process 0 reports it); 0, or 1 after an error, which it prints and which ends the group. */
int brasa_group_serve(const brasa_model *model, const char *why_not);
/* Process 0: ends the others' brasa_group_serve; every process: leaves the group. */
void brasa_group_stop(void);
/* The processes in the group (1 alone). */
int brasa_group_size(void);
/* The name of this process's machine, as the group's launcher knows it ("" alone). */
const char *brasa_group_host_name(void);
/* A process's machine, as that process measured it. */
typedef struct brasa_group_host {
    char name[64];                          /* the machine's name ("?" when unknown) */
    uint64_t memory_total, memory_available; /* the machine's memory in bytes (0: unknown) */
    int processes_on_host;                  /* the group's processes on that machine, which share it */
} brasa_group_host;
/* Process 0: every process's machine (out[r] for process r, n >= brasa_group_size()); alone, this
 * machine. */
brasa_status brasa_group_hosts(brasa_group_host *out, int n, brasa_error *err);
/* Process 0: the shortest of `rounds` round trips of a message of `bytes` bytes through every
 * process of the group (0 -> 1 -> ... -> 0), the hand-offs' cost without any computing. */
brasa_status brasa_group_link_seconds(size_t bytes, int rounds, double *seconds, brasa_error *err);

brasa_context_params brasa_context_default_params(void);
brasa_status brasa_context_create(const brasa_model *model, const brasa_context_params *params,
                                  brasa_context **out, brasa_error *err);
void brasa_context_free(brasa_context *ctx);

int32_t brasa_context_size(const brasa_context *ctx);  /* n_ctx */
int32_t brasa_context_used(const brasa_context *ctx);  /* tokens in the cache */
int32_t brasa_context_threads(const brasa_context *ctx);
/* Layers that run on the context's GPU device (0 on the CPU) of the model's n_layer. */
int32_t brasa_context_gpu_layers(const brasa_context *ctx);

/* ---- GPU kernel tuning ----
 * A GPU's matrix products come in variants (lanes per row and warps per block for decode, tile
 * size for prefill), all computing the same sums. By default a rule picks one per weight shape,
 * with no delay. brasa_context_tune measures the variants on the context's own weight shapes and
 * keeps the fastest in a tuning cache in the user's cache directory, one file per device, keyed
 * by its name, architecture, driver version and brasa's version; every later context on that
 * device takes the stored choices at creation (reading one small file: no measuring, no delay). A
 * stale, foreign or damaged file is ignored, with a note. */
typedef struct brasa_tune_params {
    int32_t prefill_tokens; /* tokens of the prefill products measured; 0: 512 */
    int32_t repetitions;    /* runs per variant, after a warm-up; 0: 10 */
    void (*progress)(float fraction, void *user_data);
    void *progress_user_data;
} brasa_tune_params;

typedef struct brasa_tune_shape {
    char kind[8];      /* "decode" (measured with 1 token) or "prefill" */
    char type[16];     /* of the weights: "q4_K" */
    int64_t n_out, n_in;
    char before[48];   /* the variant in use before (the rule's, or an earlier tuning's), its time */
    double before_us;
    char best[48];     /* the fastest, now stored */
    double best_us;
} brasa_tune_shape;

#define BRASA_TUNE_SHAPES_MAX 64

typedef struct brasa_tune_report {
    int32_t n_shapes;
    brasa_tune_shape shapes[BRASA_TUNE_SHAPES_MAX];
    char cache_path[1024];   /* where the choices were written; "" when they could not be */
    char cache_problem[256]; /* why not, or "" */
} brasa_tune_report;

brasa_tune_params brasa_tune_default_params(void);
/* Tunes the products of the layers on the context's GPU (BRASA_ERR_UNSUPPORTED on the CPU). */
brasa_status brasa_context_tune(brasa_context *ctx, const brasa_tune_params *params, brasa_tune_report *report,
                                brasa_error *err);
/* How many stored choices the context's GPU took from the tuning cache at creation; *note (when
 * not NULL) says why a cache file was ignored, or is "". */
int32_t brasa_context_tuning(const brasa_context *ctx, const char **note);
const brasa_model *brasa_context_model(const brasa_context *ctx);
void brasa_context_reset(brasa_context *ctx);          /* forget every token of every sequence */
/* Drops cached tokens from position n on (n <= used), e.g. to rewind a conversation. Sliding-window
 * layers (gemma3) keep only their window plus a batch of keys: a rewind by more than that empties
 * the context instead, so check brasa_context_used afterwards. */
void brasa_context_truncate(brasa_context *ctx, int32_t n);

/* The memory a context holds, in bytes, all allocated (and touched) at creation. */
typedef struct brasa_context_memory {
    uint64_t kv_bytes;      /* the KV caches of every sequence */
    uint64_t scratch_bytes; /* activations of one batch and each sequence's logits */
} brasa_context_memory;
void brasa_context_memory_use(const brasa_context *ctx, brasa_context_memory *out);

/* Evaluates n tokens after those already in the cache. all_logits, when not NULL, receives the
 * logits of every one of them (n * brasa_logits_size floats); the last token's logits are always
 * kept (brasa_logits). Returns BRASA_CONTEXT_FULL, evaluating nothing, when they do not fit. */
brasa_status brasa_decode(brasa_context *ctx, const brasa_token *tokens, size_t n, float *all_logits,
                          brasa_error *err);
const float *brasa_logits(const brasa_context *ctx); /* NULL before the first decode */
int32_t brasa_logits_size(const brasa_context *ctx); /* the output vocabulary */

/* Sequences: each has its own cache, positions and logits; seq is 0 .. brasa_context_seqs - 1. */
int32_t brasa_context_seqs(const brasa_context *ctx);
int32_t brasa_seq_used(const brasa_context *ctx, int32_t seq);
const float *brasa_seq_logits(const brasa_context *ctx, int32_t seq); /* NULL until it has some */
void brasa_seq_truncate(brasa_context *ctx, int32_t seq, int32_t n); /* as brasa_context_truncate */
/* brasa_decode for one sequence. */
brasa_status brasa_seq_decode(brasa_context *ctx, int32_t seq, const brasa_token *tokens, size_t n, float *all_logits,
                              brasa_error *err);
/* One token for each of n different sequences, evaluated together so the weights are read once for
 * all of them (continuous batching). Every sequence gets exactly the logits it would get decoding
 * its token alone. BRASA_CONTEXT_FULL, evaluating nothing, when one of them is full. */
brasa_status brasa_seq_decode_step(brasa_context *ctx, const int32_t *seqs, const brasa_token *tokens, size_t n,
                                   brasa_error *err);
/* brasa_seq_decode_step in two halves, so that a pipeline of processes (brasa_group_start) keeps
 * two steps of different sequences in flight, each process working on one of them: begin hands a
 * step of at most 15 sequences on and returns; end waits for the oldest step begun and sets its
 * sequences' logits. At most two steps are in flight; any other call on the context first ends
 * them. In one process, begin does the whole step and end nothing; the logits are the same. */
brasa_status brasa_seq_decode_step_begin(brasa_context *ctx, const int32_t *seqs, const brasa_token *tokens, size_t n,
                                         brasa_error *err);
brasa_status brasa_seq_decode_step_end(brasa_context *ctx, brasa_error *err);
/* Makes sequence dst hold the first n tokens of sequence src (a shared prompt prefix); fails when
 * src's sliding-window cache has moved too far past n (see brasa_context_truncate). */
brasa_status brasa_seq_copy(brasa_context *ctx, int32_t src, int32_t dst, int32_t n, brasa_error *err);

/* The compute backend a context runs on, e.g. "cpu/avx2". */
const char *brasa_context_backend(const brasa_context *ctx);

/* ---- Embeddings --------------------------------------------------------------------------------
 * An embedding model (brasa_model_desc.is_embedding: bert, or a decoder whose file sets a pooling
 * type) turns an input into one vector: its final hidden states pooled as the file says (mean, the
 * first token, the last token) and scaled to unit length (L2), so that the dot product of two
 * vectors is their cosine similarity. Tokenize the text with BRASA_TOKENIZE_ADD_BOS first (BERT
 * wraps it in [CLS] ... [SEP]). An encoder (bert) has no output head: brasa_decode and generation
 * fail on it with "... is an embedding model".
 *
 *     brasa_context_params cp = brasa_context_default_params();   // n_ctx 0: the trained length
 *     brasa_context_create(model, &cp, &ctx, &err);
 *     brasa_tokenize(model, text, strlen(text), BRASA_TOKENIZE_ADD_BOS, ids, 512, &n, &err);
 *     float vec[384];                                               // desc.embedding_dim floats
 *     brasa_embed(ctx, ids, n, vec, 384, &err);
 *
 * The vector is computed from scratch every call; nothing stays in the context (of a decoder, the
 * tokens of sequence 0 are dropped). A context holds the scratch memory, so one context serves one
 * thread at a time; a server gives each worker its own context, all sharing the read-only model.
 * Embedding models run on the CPU device only for now. */

/* The embedding of one input of n tokens (1 to brasa_context_size: an encoder's context is at most
 * its trained length) into out, which holds out_cap floats (at least desc.embedding_dim). An empty
 * input is BRASA_ERR_INVALID_ARGUMENT, a longer one BRASA_CONTEXT_FULL, a model that makes no
 * embeddings BRASA_ERR_UNSUPPORTED, a short out BRASA_ERR_BUFFER_TOO_SMALL; nothing is evaluated then. */
brasa_status brasa_embed(brasa_context *ctx, const brasa_token *tokens, size_t n, float *out, size_t out_cap,
                         brasa_error *err);
/* The embeddings of n_inputs inputs (inputs[i] of n_tokens[i] tokens) into out, one after another
 * (n_inputs * embedding_dim floats). An encoder evaluates as many inputs together as fit in its
 * context, so the weights are read once for all of them; each input still sees only itself, and
 * gets its vector of brasa_embed to float rounding. The checks of brasa_embed apply to every input
 * before any is evaluated (the message names the input). */
brasa_status brasa_embed_batch(brasa_context *ctx, const brasa_token *const *inputs, const size_t *n_tokens,
                               size_t n_inputs, float *out, size_t out_cap, brasa_error *err);

/* Whether a token ends generation: end of turn and end of text, or for a harmony vocabulary
 * (gpt-oss) <|return|> and <|call|>, not <|end|>, which also closes the reasoning before the answer. */
bool brasa_token_is_eog(const brasa_model *model, brasa_token token);

/* ---- Sampling ---------------------------------------------------------------------------------- */

#define BRASA_SEED_RANDOM UINT64_MAX

/* Applied in this order: penalties, top-k, top-p, min-p, temperature, then a draw. */
typedef struct brasa_sampler_params {
    float temperature;       /* <= 0: greedy (the most likely token) */
    int32_t top_k;           /* keep the k most likely; 0: off */
    float top_p;             /* keep the smallest set with probability >= p; 1: off */
    float min_p;             /* drop tokens below min_p times the top probability; 0: off */
    float repeat_penalty;    /* divides positive (multiplies negative) logits of recent tokens; 1: off */
    float presence_penalty;  /* subtracted once from the logit of every recent token; 0: off */
    float frequency_penalty; /* subtracted per occurrence among recent tokens; 0: off */
    int32_t penalty_last_n;  /* how many recent tokens the penalties look at */
    uint64_t seed;           /* the same seed gives the same draws; BRASA_SEED_RANDOM picks one */
} brasa_sampler_params;

brasa_sampler_params brasa_sampler_default_params(void);

typedef struct brasa_sampler brasa_sampler;
brasa_status brasa_sampler_create(const brasa_sampler_params *params, brasa_sampler **out, brasa_error *err);
void brasa_sampler_free(brasa_sampler *sampler);
/* Picks a token from n_vocab logits (not modified). */
brasa_token brasa_sampler_sample(brasa_sampler *sampler, const float *logits, int32_t n_vocab);
/* Records a token (prompt or generated) for the penalties. */
void brasa_sampler_accept(brasa_sampler *sampler, brasa_token token);
void brasa_sampler_reset(brasa_sampler *sampler);
uint64_t brasa_sampler_seed(const brasa_sampler *sampler); /* the seed in use */

/* The log-probability of token under logits (the log-softmax of the raw logits, before any
 * penalty, filter or temperature: what the model says), and the n_top (at most 20) most likely
 * tokens, most likely first, into top (may be NULL when n_top is 0). */
typedef struct brasa_token_logprob {
    brasa_token token;
    float logprob;
} brasa_token_logprob;
float brasa_logprobs(const float *logits, int32_t n_vocab, brasa_token token, int32_t n_top, brasa_token_logprob *top);

/* ---- Constrained output ------------------------------------------------------------------------ */

/* What generated text must be: prefix, then a JSON value valid against a JSON Schema, then suffix
 * (for a forced tool call: "<tool_call>\n" + the call object + "\n</tool_call>"). Compiled once
 * (a schema keyword brasa cannot enforce is BRASA_ERR_UNSUPPORTED, naming it), then shared
 * read-only by the samplers that follow it.
 *
 *     brasa_constraint *c;
 *     brasa_constraint_create(model, NULL, "{\"type\": \"object\"}", NULL, &c, &err);
 *     brasa_sampler_set_constraint(sampler, c, &err);   // c outlives the sampler
 */
typedef struct brasa_constraint brasa_constraint;
/* prefix, suffix: literal text or NULL; schema_json: a JSON Schema, or NULL for no JSON value. */
brasa_status brasa_constraint_create(const brasa_model *model, const char *prefix, const char *schema_json,
                                     const char *suffix, brasa_constraint **out, brasa_error *err);
void brasa_constraint_free(brasa_constraint *c);
/* From now on the sampler picks only tokens that keep its output on c, and an end-of-generation
 * token only where the output is complete (and then nothing else). The model's choice is checked
 * first; only when the constraint refuses it is the whole vocabulary masked and the draw redone,
 * so the distribution is the model's restricted to what c allows. c NULL: no constraint. */
brasa_status brasa_sampler_set_constraint(brasa_sampler *sampler, const brasa_constraint *c, brasa_error *err);

/* ---- Chat -------------------------------------------------------------------------------------- */

typedef struct brasa_chat_message {
    const char *role;    /* "system", "user" or "assistant" (more roles: brasa_chat_render's JSON) */
    const char *content;
} brasa_chat_message;

/* The chat format built into brasa that the model's template (or, without one, its vocabulary)
 * resembles: "chatml", "gemma", "llama3" or "qwen3"; NULL when none. Chats are rendered with the
 * model's own template when it has one; the built-in formats serve files that carry none. */
const char *brasa_chat_format_detect(const brasa_model *model);
/* The built-in formats, comma-separated. */
const char *brasa_chat_format_names(void);

/* How to render a conversation. By default with the model's own tokenizer.chat_template (a Jinja
 * program, run as Hugging Face's transformers runs it; its tool_use variant when tools are given
 * and the file has one), else with the built-in format its vocabulary calls for.
 *
 *     brasa_chat_params cp = brasa_chat_default_params();
 *     cp.enable_thinking = false;
 *     brasa_chat_tokenize_with(model, messages, n_messages, &cp, tokens, capacity, &n_tokens, &err);
 */
typedef struct brasa_chat_params {
    const char *format;         /* a built-in format's name to use instead of the template; NULL: the template */
    const char *template_text;  /* a Jinja chat template to use instead of the model's; NULL: the model's */
    const char *tools_json;     /* the tools, a JSON array in OpenAI's shape, passed as `tools`; NULL: none */
    const char *kwargs_json;    /* more template variables, a JSON object (chat_template_kwargs); may be NULL */
    bool add_generation_prompt; /* open the assistant's turn (default true) */
    bool enable_thinking;       /* models that reason: think before answering (default true); false is
                                 * passed to the template as enable_thinking */
    int64_t now;                /* the time strftime_now shows, seconds since 1970; 0: now */
} brasa_chat_params;

brasa_chat_params brasa_chat_default_params(void);

/* Renders a conversation given as JSON (an array of messages as OpenAI's API and Hugging Face take
 * them: role, content, tool_calls, tool_call_id, name, reasoning_content, ...) as params say, into
 * text. A tool call's function.arguments given as a JSON string reaches the template as the object
 * it encodes, as transformers expects. Buffer convention as brasa_tokenize, in bytes (no NUL). */
brasa_status brasa_chat_render(const brasa_model *model, const char *messages_json, size_t json_len,
                               const brasa_chat_params *params, char *text, size_t capacity, size_t *length,
                               brasa_error *err);
/* brasa_chat_render, tokenized: the template's own text may hold control tokens, the messages'
 * text never does (a user who writes "<|im_start|>" sends text). */
brasa_status brasa_chat_tokenize_json(const brasa_model *model, const char *messages_json, size_t json_len,
                                      const brasa_chat_params *params, brasa_token *tokens, size_t capacity,
                                      size_t *n_tokens, brasa_error *err);
/* The same for messages of role and text. params NULL: the defaults. */
brasa_status brasa_chat_tokenize_with(const brasa_model *model, const brasa_chat_message *messages, size_t n_messages,
                                      const brasa_chat_params *params, brasa_token *tokens, size_t capacity,
                                      size_t *n_tokens, brasa_error *err);
/* brasa_chat_tokenize_with with the default params but format and add_generation_prompt. */
brasa_status brasa_chat_tokenize(const brasa_model *model, const char *format, const brasa_chat_message *messages,
                                 size_t n_messages, bool add_generation_prompt, brasa_token *tokens, size_t capacity,
                                 size_t *n_tokens, brasa_error *err);

/* How the reply to a prompt rendered with params begins, so that its reasoning can be told from
 * its answer: the text of a leading <think> ... </think> block (or, when the prompt opened the
 * block, the text up to </think>) is reasoning, the whitespace after </think> is dropped, the rest
 * is answer. */
typedef enum brasa_chat_reasoning {
    BRASA_REASONING_NONE = 0, /* the format does not reason: the reply is all answer */
    BRASA_REASONING_LEADING,  /* the reply may begin with a <think> ... </think> block */
    BRASA_REASONING_OPEN      /* the prompt opened the block: the reply begins inside it */
} brasa_chat_reasoning;

/* Read from the prompt the template writes (it opened a <think> block, or the template writes
 * such blocks at all). params NULL: the defaults. */
brasa_chat_reasoning brasa_chat_reasoning_start(const brasa_model *model, const brasa_chat_params *params);

/* ---- Generation -------------------------------------------------------------------------------- */

typedef struct brasa_generate_params {
    int32_t n_predict;          /* most tokens to generate; 0: until end of generation or a full context */
    const char *const *stop;    /* stop strings (not included in the output), NULL-terminated; may be NULL */
    unsigned detokenize_flags;  /* BRASA_DETOKENIZE_SPECIAL: control tokens' text too (for a reply parser) */
    /* Receives the text as it is made, whole UTF-8 characters only; return false to stop. */
    bool (*on_text)(const char *text, size_t len, void *user_data);
    void *user_data;
    /* Receives every generated token that entered the context (not the final end-of-generation one). */
    void (*on_token)(brasa_token token, void *user_data);
    volatile int *abort_flag;   /* generation stops when this becomes non-zero (Ctrl-C); may be NULL */
} brasa_generate_params;

typedef enum brasa_stop_reason {
    BRASA_STOP_EOG,       /* the model ended its turn */
    BRASA_STOP_LENGTH,    /* n_predict tokens were made */
    BRASA_STOP_STRING,    /* a stop string appeared */
    BRASA_STOP_CONTEXT,   /* the context filled up */
    BRASA_STOP_ABORTED    /* abort_flag or on_text said stop */
} brasa_stop_reason;

typedef struct brasa_generate_stats {
    int32_t n_prompt, n_generated;
    double prompt_seconds, generate_seconds;
    brasa_stop_reason stop_reason;
} brasa_generate_stats;

brasa_generate_params brasa_generate_default_params(void);
/* Evaluates the prompt after what the context holds, then samples until a stop. The sampler sees
 * the prompt and the generated tokens for its penalties. A loop over brasa_generation_next. */
brasa_status brasa_generate(brasa_context *ctx, brasa_sampler *sampler, const brasa_token *prompt, size_t n_prompt,
                            const brasa_generate_params *params, brasa_generate_stats *stats, brasa_error *err);

/* Generation one token at a time, for callers that run the forward passes themselves (a server
 * decoding many sequences in one batched step). One brasa_generation follows one sequence of a
 * context: each brasa_generation_next samples the sequence's next token from its logits, records
 * it with the sampler, turns it into text (whole UTF-8 characters, a possible stop string held
 * back) and says whether generation is over; when it is not, the caller evaluates the token in the
 * sequence (brasa_seq_decode or a batched step) before the next call.
 *
 *     brasa_generation *g;
 *     brasa_generation_create(ctx, seq, sampler, &gp, &g, &err);   // after the prompt's evaluation
 *     for (brasa_generation_step step;;) {
 *         if (brasa_generation_next(g, &step, &err) != BRASA_OK || step.done) break;
 *         brasa_seq_decode(ctx, seq, &step.token, 1, NULL, &err);
 *     }
 *     brasa_generation_free(g);
 */
#define BRASA_MAX_TOP_LOGPROBS 20

typedef struct brasa_generation brasa_generation;

typedef struct brasa_generation_params {
    int32_t n_predict;          /* most tokens to generate; 0: until end of generation or a full context */
    const char *const *stop;    /* stop strings (not in the text), NULL-terminated, copied; may be NULL */
    unsigned detokenize_flags;  /* BRASA_DETOKENIZE_SPECIAL: control tokens' text too (for a tool-call parser) */
    int32_t top_logprobs;       /* -1: no log-probabilities; else each step's and this many alternatives (<= 20) */
    /* Receives the text as it is made; return false to stop (the step then ends as ABORTED). */
    bool (*on_text)(const char *text, size_t len, void *user_data);
    void *user_data;
    /* A cap on the reply's reasoning (Anthropic's thinking.budget_tokens): when the reply opens with
     * think_open's tokens (an empty text: it begins inside the block, the prompt opened it) and
     * think_budget tokens of reasoning follow without think_close's first token, the next steps
     * give think_close's tokens themselves, as if sampled (recorded by the sampler, turned into
     * text, counted), and the model goes on from there: its answer. Both texts are tokenized with
     * control tokens recognized. think_budget 0: no cap. Not for a sampler under a constraint (the
     * closing text may be outside it). */
    int32_t think_budget;
    const char *think_open, *think_close;
} brasa_generation_params;

typedef struct brasa_generation_step {
    brasa_token token;              /* the token sampled */
    bool done;                      /* generation is over: token is not to be evaluated */
    brasa_stop_reason stop_reason;  /* when done */
    int32_t stop_index;             /* BRASA_STOP_STRING: which stop string; else -1 */
    bool forced;                    /* the token closes reasoning over its budget: given, not sampled */
    bool has_logprob;               /* top_logprobs >= 0 and token is not an end-of-generation one */
    float logprob;                  /* the token's log-probability under the raw logits */
    int32_t n_top;
    brasa_token_logprob top[BRASA_MAX_TOP_LOGPROBS];
} brasa_generation_step;

brasa_generation_params brasa_generation_default_params(void);
/* seq: the context's sequence (0 for a context of one), whose logits are ready; sampler: borrowed,
 * it outlives the generation. */
brasa_status brasa_generation_create(brasa_context *ctx, int32_t seq, brasa_sampler *sampler,
                                     const brasa_generation_params *params, brasa_generation **out, brasa_error *err);
void brasa_generation_free(brasa_generation *g);
/* One token (see above). When a step ends generation, the text held back for a possible stop
 * string is handed out first, unless a stop string matched. */
brasa_status brasa_generation_next(brasa_generation *g, brasa_generation_step *step, brasa_error *err);
/* For a caller that ends generation itself (an abort): hands out the text still held back. */
void brasa_generation_flush(brasa_generation *g);
/* Tokens sampled so far (the final end-of-generation one included). */
int32_t brasa_generation_count(const brasa_generation *g);

/* ---- This machine ------------------------------------------------------------------------------ */

/* The CPU's SIMD features that brasa can use, space-separated ("avx2 fma f16c ..."). */
void brasa_cpu_features(char *buf, size_t size);
/* Physical cores (the default thread count). */
int32_t brasa_cpu_count(void);
/* Measures main-memory read bandwidth with n_threads threads (0: all), in GB/s (1e9 bytes). Takes
 * about a second and half a gigabyte of memory for the duration. */
brasa_status brasa_measure_memory_bandwidth(int32_t n_threads, double *gb_per_second, brasa_error *err);
/* Measures the integer product peak of the CPU kernel path this machine runs (the one
 * BRASA_CPU_KERNELS forces, else the best it supports): 8-bit multiply-adds per second of that
 * path's product instruction (vpdpbusd, vpmaddubsw, sdot, ...) on n_threads threads at once (0:
 * all), best of a few passes over about a quarter of a second. path (may be NULL) receives the
 * path's name, e.g. "avx512vnni". Prefill is bound by this as decode is by bandwidth. */
brasa_status brasa_measure_int8_peak(int32_t n_threads, double *macs_per_second, char *path, size_t path_size,
                                     brasa_error *err);
/* The most memory this process has held (resident), in bytes; 0 where unknown. */
uint64_t brasa_peak_memory_bytes(void);

#ifdef __cplusplus
}
#endif

#endif /* BRASA_H */
