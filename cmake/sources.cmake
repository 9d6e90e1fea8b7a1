# The source lists, in one place, so the library and its sanitized twin cannot drift apart.
set(BRASA_LIB_SOURCES
  src/core/error.c
  src/core/strmap.c
  src/core/f16.c
  src/core/pool.c
  src/backend/backend.c
  src/backend/cpu/cpu.c
  src/backend/cpu/kernels_scalar.c
  src/backend/cpu/kernels_avx2.c
  src/backend/cpu/kernels_neon.c
  src/backend/cpu/kernels_neon_dotprod.c
  src/gguf/gguf.c
  src/quant/quant.c
  src/quant/quant_float.c
  src/quant/quant_legacy.c
  src/quant/quant_k.c
  src/tokenizer/unicode.c
  src/tokenizer/unicode_tables.c
  src/tokenizer/vocab.c
  src/tokenizer/pretok.c
  src/tokenizer/tok_bpe.c
  src/tokenizer/tok_spm.c
  src/tokenizer/tokenizer.c
  src/model/model.c
  src/models/arch.c
  src/models/decoder.c
  src/models/llama.c
  src/models/qwen2.c
  src/models/gemma3.c
  src/engine/context.c
  src/engine/sampler.c
  src/engine/chat.c
  src/engine/stream.c
  src/engine/generate.c
  src/engine/system.c
  src/api/tokens.c
  src/platform/sockaddr.c
)
if(WIN32)
  list(APPEND BRASA_LIB_SOURCES src/platform/win32.c)
else()
  list(APPEND BRASA_LIB_SOURCES src/platform/posix.c)
endif()

set(BRASA_CLI_SOURCES
  cli/main.c
  cli/args.c
  cli/json.c
  cli/cmd_info.c
  cli/cmd_tokenize.c
  cli/cmd_run.c
  cli/gen_options.c
  cli/cmd_bench.c
)

# The server: built when libmicrohttpd and cJSON are found (see CMakeLists.txt).
set(BRASA_SERVER_SOURCES
  src/server/api.c
  src/server/metrics.c
  src/server/sched.c
  src/server/server.c
  src/server/webui.c
  cli/cmd_serve.c
)
