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

#endif
