/* model.h: what a brasa_model is inside: the validated GGUF file, its vocabulary and its described
 * shape. The model is immutable once open, so contexts and threads share it freely. */
#ifndef BRASA_MODEL_H
#define BRASA_MODEL_H

#include "brasa.h"
#include "gguf/gguf.h"
#include "models/arch.h"
#include "tokenizer/vocab.h"

struct brasa_model {
    gguf_file *file;
    tok_vocab vocab;
    brasa_model_desc desc;
    char *strings;            /* NUL-terminated copies of the desc's metadata strings */
    char tokenizer_error[512];
    const arch_def *arch;     /* NULL when brasa cannot run the model (run_error says why) */
    arch_hparams hp;
    arch_weights weights;
    char run_error[512];
};

/* Builds a model around an open GGUF file (what brasa_model_open does after gguf_open), taking
 * ownership of file: it is closed with the model, or at once when this fails. Lets a fuzzer or a
 * test open a model from memory (gguf_open_memory) without a file on disk. */
brasa_status model_open_gguf(gguf_file *file, const brasa_model_params *params, brasa_model **out,
                             brasa_error *err);

#endif
