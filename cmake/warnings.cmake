# Warnings on, and no floating-point contraction: the scalar reference kernels must round exactly as
# the NumPy reference does, on every architecture (aarch64 would otherwise fuse a*b+c into an FMA).
# BRASA_WERROR turns every warning into an error (CI builds so with gcc, clang and mingw-w64).
function(brasa_warnings target)
  if(MSVC)
    target_compile_options(${target} PRIVATE /W4 $<$<BOOL:${BRASA_WERROR}>:/WX>)
  else()
    if(MINGW)
      # the C99-conforming printf family, so %zu and %lld mean what they do everywhere else
      target_compile_definitions(${target} PRIVATE __USE_MINGW_ANSI_STDIO=1)
    endif()
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wstrict-prototypes
                           -Wno-unused-parameter -ffp-contract=off $<$<BOOL:${BRASA_WERROR}>:-Werror>)
  endif()
endfunction()
