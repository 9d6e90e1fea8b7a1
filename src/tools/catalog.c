/* catalog.c: popular open models' shapes and common quantizations (see catalog.h). */
#include "tools/catalog.h"

#include <math.h>

/* From each model's config.json: the GGUF architecture, parameters, layers, hidden size, heads, KV heads, head size, FFN size (per
 * expert for MoE), vocabulary, trained context, sliding window and its pattern. */
static const catalog_model models[] = {
    { "Qwen2.5-0.5B-Instruct", "qwen2", 0.49e9, 0.49e9, 24, 896, 14, 2, 64, 4864, 151936, 32768, 0, 0 },
    { "Llama-3.2-1B-Instruct", "llama", 1.24e9, 1.24e9, 16, 2048, 32, 8, 64, 8192, 128256, 131072, 0, 0 },
    { "Qwen2.5-1.5B-Instruct", "qwen2", 1.54e9, 1.54e9, 28, 1536, 12, 2, 128, 8960, 151936, 32768, 0, 0 },
    { "Llama-3.2-3B-Instruct", "llama", 3.21e9, 3.21e9, 28, 3072, 24, 8, 128, 8192, 128256, 131072, 0, 0 },
    { "gemma-3-4b-it", "gemma3", 3.88e9, 3.88e9, 34, 2560, 8, 4, 256, 10240, 262144, 131072, 1024, 6 },
    { "Qwen3-4B", "qwen3", 4.02e9, 4.02e9, 36, 2560, 32, 8, 128, 9728, 151936, 40960, 0, 0 },
    { "Qwen2.5-7B-Instruct", "qwen2", 7.62e9, 7.62e9, 28, 3584, 28, 4, 128, 18944, 152064, 32768, 0, 0 },
    { "Llama-3.1-8B-Instruct", "llama", 8.03e9, 8.03e9, 32, 4096, 32, 8, 128, 14336, 128256, 131072, 0, 0 },
    { "Qwen3-8B", "qwen3", 8.19e9, 8.19e9, 36, 4096, 32, 8, 128, 12288, 151936, 40960, 0, 0 },
    { "gemma-3-12b-it", "gemma3", 11.8e9, 11.8e9, 48, 3840, 16, 8, 256, 15360, 262144, 131072, 1024, 6 },
    { "Qwen2.5-14B-Instruct", "qwen2", 14.8e9, 14.8e9, 48, 5120, 40, 8, 128, 13824, 152064, 32768, 0, 0 },
    { "gpt-oss-20b", "gpt-oss", 20.9e9, 3.6e9, 24, 2880, 64, 8, 64, 2880, 201088, 131072, 128, 2 },
    { "Mistral-Small-3.2-24B-Instruct", "llama", 23.6e9, 23.6e9, 40, 5120, 32, 8, 128, 32768, 131072, 131072, 0, 0 },
    { "gemma-3-27b-it", "gemma3", 27.4e9, 27.4e9, 62, 5376, 32, 16, 128, 21504, 262144, 131072, 1024, 6 },
    { "Qwen3-30B-A3B", "qwen3moe", 30.5e9, 3.3e9, 48, 2048, 32, 4, 128, 768, 151936, 40960, 0, 0 },
    { "Qwen3-Coder-30B-A3B-Instruct", "qwen3moe", 30.5e9, 3.3e9, 48, 2048, 32, 4, 128, 768, 151936, 262144, 0, 0 },
    { "Qwen3-32B", "qwen3", 32.8e9, 32.8e9, 64, 5120, 64, 8, 128, 25600, 151936, 40960, 0, 0 },
    { "Qwen2.5-32B-Instruct", "qwen2", 32.8e9, 32.8e9, 64, 5120, 40, 8, 128, 27648, 152064, 32768, 0, 0 },
    { "Llama-3.3-70B-Instruct", "llama", 70.6e9, 70.6e9, 80, 8192, 64, 8, 128, 28672, 128256, 131072, 0, 0 },
    { "gpt-oss-120b", "gpt-oss", 116.8e9, 5.1e9, 36, 2880, 64, 8, 64, 2880, 201088, 131072, 128, 2 },
    { "Qwen3-235B-A22B", "qwen3moe", 235e9, 22e9, 94, 4096, 64, 4, 128, 1536, 151936, 40960, 0, 0 },
    { "Llama-3.1-405B-Instruct", "llama", 405.9e9, 405.9e9, 126, 16384, 128, 8, 128, 53248, 128256, 131072, 0, 0 },
};

/* Bits per weight averaged over real files of these types (their mixed tensor types included). */
static const catalog_quant quants[] = {
    { "Q4_K_M", 4.85 }, { "Q5_K_M", 5.69 }, { "Q6_K", 6.56 }, { "Q8_0", 8.5 }, { "F16", 16.0 },
};

size_t catalog_count(void) { return sizeof models / sizeof models[0]; }
const catalog_model *catalog_get(size_t i) { return i < catalog_count() ? &models[i] : 0; }
size_t catalog_quant_count(void) { return sizeof quants / sizeof quants[0]; }
const catalog_quant *catalog_quant_get(size_t i) { return i < catalog_quant_count() ? &quants[i] : 0; }

const catalog_model *catalog_nearest(double params) {
    const catalog_model *best = &models[0];
    for (size_t i = 1; i < catalog_count(); i++)
        if (fabs(log(models[i].params / params)) < fabs(log(best->params / params)))
            best = &models[i];
    return best;
}
