# Cross-compiling for 64-bit Arm Linux with Debian's gcc-aarch64-linux-gnu; tests run under
# qemu-user (Debian's qemu-user) with the cross C library.
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
find_program(BRASA_AARCH64_CXX aarch64-linux-gnu-g++)
if(BRASA_AARCH64_CXX)
  set(CMAKE_CXX_COMPILER ${BRASA_AARCH64_CXX})
endif()
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)

# The server needs libmicrohttpd and cJSON built for the target, which Debian does not ship.
set(BRASA_SERVER OFF CACHE BOOL "Build brasa serve")
