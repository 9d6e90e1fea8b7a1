# Cross-compiling for 64-bit Windows with Debian's mingw-w64 (gcc-mingw-w64-x86-64).
#   cmake -S . -B build-windows -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc)
find_program(BRASA_MINGW_CXX x86_64-w64-mingw32-g++)
if(BRASA_MINGW_CXX)
  set(CMAKE_CXX_COMPILER ${BRASA_MINGW_CXX})
endif()
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
find_program(BRASA_WINE NAMES wine64 wine)
if(BRASA_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${BRASA_WINE})
endif()

# The server needs libmicrohttpd and cJSON built for the target, which Debian does not ship.
set(BRASA_SERVER OFF CACHE BOOL "Build brasa serve")
