/* test_header_c: the public header compiles as C11 on its own and its status texts exist. */
#include "brasa.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    brasa_model_params mp = brasa_model_default_params();
    brasa_context_params cp = brasa_context_default_params();
    brasa_sampler_params sp = brasa_sampler_default_params();
    int bad = mp.progress != NULL || cp.n_ctx != 0 || sp.top_k != 40;
    const brasa_status all[] = { BRASA_OK, BRASA_ERR_INVALID_ARGUMENT, BRASA_ERR_IO, BRASA_ERR_FORMAT,
                                 BRASA_ERR_UNSUPPORTED, BRASA_ERR_NO_MEMORY, BRASA_ERR_BUFFER_TOO_SMALL,
                                 BRASA_ERR_INTERNAL, BRASA_CONTEXT_FULL, BRASA_ABORTED };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        bad |= strcmp(brasa_status_str(all[i]), "unknown status") == 0;
    brasa_model_free(NULL); /* every _free accepts NULL */
    brasa_context_free(NULL);
    brasa_sampler_free(NULL);
    brasa_decoder_free(NULL);
    printf("header (C): %s\n", bad ? "FAILED" : "ok");
    return bad;
}
