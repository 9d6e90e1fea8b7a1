// test_header_cxx: the public header is valid C++ too (extern "C", no C-only constructs).
#include "brasa.h"

#include <cstdio>

int main() {
    brasa_error err = {};
    brasa_model *model = nullptr;
    brasa_status st = brasa_model_open("/nonexistent/model.gguf", nullptr, &model, &err);
    bool ok = st == BRASA_ERR_IO && model == nullptr && err.message[0] != '\0';
    std::printf("header (C++): %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
