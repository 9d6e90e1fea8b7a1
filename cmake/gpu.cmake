# The GPU backend modules, brasa-cuda (nvcc) and brasa-hip (hipcc), built from one kernel source
# (src/backend/gpu) and loaded by brasa at run time: the program itself never links a GPU runtime.
# Each requested architecture the toolchain does not know is reported here and left out; it never
# fails the build.
option(BRASA_CUDA "Build the CUDA backend module brasa-cuda (needs nvcc)" OFF)
option(BRASA_HIP "Build the HIP backend module brasa-hip (needs hipcc from ROCm)" OFF)
set(BRASA_GPU_TARGETS "" CACHE STRING
  "GPU architectures, e.g. \"sm_80;sm_90;gfx1030\" (empty: every default one the toolchain knows)")

set(BRASA_CUDA_DEFAULT_TARGETS sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120 sm_121)
set(BRASA_HIP_DEFAULT_TARGETS gfx1030 gfx1100 gfx1101 gfx1102 gfx1150 gfx1151 gfx1200 gfx1201 gfx90a gfx942)

set(BRASA_GPU_KERNEL_SOURCE ${PROJECT_SOURCE_DIR}/src/backend/gpu/gpu_kernels.cu)
set(BRASA_GPU_KERNEL_DEPENDS ${BRASA_GPU_KERNEL_SOURCE} ${PROJECT_SOURCE_DIR}/src/backend/gpu/gpu_port.h
  ${PROJECT_SOURCE_DIR}/src/backend/gpu/gpu_kernels.h ${PROJECT_SOURCE_DIR}/src/quant/quant.h
  ${PROJECT_SOURCE_DIR}/src/core/f16.h)
set(BRASA_MODULE_DIR_NAME lib/brasa)

# The requested targets of one vendor (prefix sm_ or gfx), or its defaults when none is named.
function(brasa_gpu_requested prefix defaults out)
  set(picked "")
  foreach(t IN LISTS BRASA_GPU_TARGETS)
    if(t MATCHES "^${prefix}")
      list(APPEND picked ${t})
    endif()
  endforeach()
  if(NOT picked)
    set(picked ${defaults})
  endif()
  set(${out} ${picked} PARENT_SCOPE)
endfunction()

# The pieces every module links from the library, compiled again as position-independent code.
function(brasa_gpu_module name)
  cmake_parse_arguments(M "" "RUNTIME;KERNELS;TARGETS_BUILT" "DEFINES;INCLUDES;LIBS" ${ARGN})
  add_library(${name} MODULE ${PROJECT_SOURCE_DIR}/src/backend/gpu/gpu_device.c ${M_RUNTIME} ${M_KERNELS}
    ${PROJECT_SOURCE_DIR}/src/core/error.c)
  set_target_properties(${name} PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
    C_VISIBILITY_PRESET hidden)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_include_directories(${name} SYSTEM PRIVATE ${M_INCLUDES})
  target_compile_definitions(${name} PRIVATE BRASA_GPU_TARGETS_BUILT="${M_TARGETS_BUILT}" ${M_DEFINES})
  target_link_libraries(${name} PRIVATE ${M_LIBS})
  brasa_warnings(${name})
  install(TARGETS ${name} LIBRARY DESTINATION ${BRASA_MODULE_DIR_NAME})
endfunction()

if(BRASA_CUDA)
  find_program(BRASA_NVCC nvcc PATHS /usr/local/cuda/bin ENV CUDA_PATH PATH_SUFFIXES bin)
  if(NOT BRASA_NVCC)
    message(FATAL_ERROR "BRASA_CUDA: nvcc not found (install the CUDA toolkit or set BRASA_NVCC)")
  endif()
  get_filename_component(cuda_root ${BRASA_NVCC} DIRECTORY)
  get_filename_component(cuda_root ${cuda_root} DIRECTORY)
  find_library(BRASA_CUDART_STATIC cudart_static PATHS ${cuda_root}/lib64 ${cuda_root}/lib/x64 NO_DEFAULT_PATH)
  if(NOT BRASA_CUDART_STATIC)
    message(FATAL_ERROR "BRASA_CUDA: libcudart_static not found under ${cuda_root}")
  endif()
  execute_process(COMMAND ${BRASA_NVCC} --list-gpu-code OUTPUT_VARIABLE known RESULT_VARIABLE rc ERROR_QUIET)
  brasa_gpu_requested(sm_ "${BRASA_CUDA_DEFAULT_TARGETS}" wanted)
  set(cuda_targets "")
  set(gencode "")
  foreach(t IN LISTS wanted)
    if(rc EQUAL 0 AND known MATCHES "(^|\n)${t}(\n|$)")
      list(APPEND cuda_targets ${t})
      string(REPLACE "sm_" "" n ${t})
      list(APPEND gencode --generate-code=arch=compute_${n},code=${t})
    else()
      message(STATUS "brasa: CUDA target ${t} is not known to ${BRASA_NVCC}: left out")
    endif()
  endforeach()
  if(NOT cuda_targets)
    message(FATAL_ERROR "BRASA_CUDA: none of the targets (${wanted}) is known to ${BRASA_NVCC}")
  endif()
  # PTX of the newest target too, which the driver compiles for GPUs newer than every target
  list(GET cuda_targets -1 newest)
  string(REPLACE "sm_" "" n ${newest})
  list(APPEND gencode --generate-code=arch=compute_${n},code=compute_${n})
  set(obj ${CMAKE_BINARY_DIR}/gpu_kernels_cuda${CMAKE_C_OUTPUT_EXTENSION})
  add_custom_command(OUTPUT ${obj}
    COMMAND ${BRASA_NVCC} -std=c++17 -O3 -Xcompiler -fPIC -Xcompiler -fvisibility=hidden ${gencode} -I${PROJECT_SOURCE_DIR}/src
            -I${PROJECT_SOURCE_DIR}/include -c ${BRASA_GPU_KERNEL_SOURCE} -o ${obj}
    DEPENDS ${BRASA_GPU_KERNEL_DEPENDS}
    COMMENT "nvcc: GPU kernels for ${cuda_targets}" VERBATIM)
  # one target owns the compile, so that the module and the kernel test (another directory) wait
  # for it instead of racing to run it
  add_custom_target(brasa_cuda_kernels DEPENDS ${obj})
  string(REPLACE ";" " " built "${cuda_targets}")
  set(cuda_libs ${BRASA_CUDART_STATIC})
  if(NOT WIN32)
    list(APPEND cuda_libs ${CMAKE_DL_LIBS} pthread rt stdc++) # cudart_static is C++
  endif()
  brasa_gpu_module(brasa-cuda RUNTIME ${PROJECT_SOURCE_DIR}/src/backend/gpu/gpu_runtime_cuda.c KERNELS ${obj}
    TARGETS_BUILT "${built}" INCLUDES ${cuda_root}/include LIBS ${cuda_libs})
  add_dependencies(brasa-cuda brasa_cuda_kernels)
  # for the kernel test on a real device (tests/CMakeLists.txt)
  set(BRASA_CUDA_KERNELS_OBJ ${obj})
  set(BRASA_CUDA_INCLUDE ${cuda_root}/include)
  set(BRASA_CUDA_LIBS ${cuda_libs})
  message(STATUS "brasa: CUDA module for ${built}")
endif()

if(BRASA_HIP)
  find_program(BRASA_HIPCC hipcc PATHS /opt/rocm/bin)
  find_path(BRASA_HIP_INCLUDE hip/hip_runtime_api.h PATHS /opt/rocm/include)
  find_library(BRASA_AMDHIP64 amdhip64 PATHS /opt/rocm/lib)
  if(NOT BRASA_HIPCC OR NOT BRASA_HIP_INCLUDE OR NOT BRASA_AMDHIP64)
    message(FATAL_ERROR "BRASA_HIP: hipcc, the HIP headers or libamdhip64 not found (Debian: apt-get install hipcc)")
  endif()
  brasa_gpu_requested(gfx "${BRASA_HIP_DEFAULT_TARGETS}" wanted)
  set(probe ${CMAKE_BINARY_DIR}/CMakeFiles/brasa_hip_probe.hip)
  file(WRITE ${probe} "#include <hip/hip_runtime.h>\n__global__ void probe(float *x) { x[threadIdx.x] = expf(x[threadIdx.x]); }\n")
  set(hip_targets "")
  set(offload "")
  foreach(t IN LISTS wanted)
    execute_process(COMMAND ${BRASA_HIPCC} --offload-arch=${t} -c ${probe} -o ${CMAKE_BINARY_DIR}/CMakeFiles/brasa_hip_probe.o
      RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      list(APPEND hip_targets ${t})
      list(APPEND offload --offload-arch=${t})
    else()
      message(STATUS "brasa: HIP target ${t} is not supported by ${BRASA_HIPCC} and its device libraries: left out")
    endif()
  endforeach()
  if(NOT hip_targets)
    message(FATAL_ERROR "BRASA_HIP: none of the targets (${wanted}) is supported by ${BRASA_HIPCC}")
  endif()
  set(obj ${CMAKE_BINARY_DIR}/gpu_kernels_hip${CMAKE_C_OUTPUT_EXTENSION})
  add_custom_command(OUTPUT ${obj}
    COMMAND ${BRASA_HIPCC} -std=c++17 -O3 -fPIC -fvisibility=hidden ${offload} -I${PROJECT_SOURCE_DIR}/src -I${PROJECT_SOURCE_DIR}/include
            -c ${BRASA_GPU_KERNEL_SOURCE} -o ${obj}
    DEPENDS ${BRASA_GPU_KERNEL_DEPENDS}
    COMMENT "hipcc: GPU kernels for ${hip_targets}" VERBATIM)
  add_custom_target(brasa_hip_kernels DEPENDS ${obj})
  string(REPLACE ";" " " built "${hip_targets}")
  brasa_gpu_module(brasa-hip RUNTIME ${PROJECT_SOURCE_DIR}/src/backend/gpu/gpu_runtime_hip.c KERNELS ${obj}
    TARGETS_BUILT "${built}" DEFINES __HIP_PLATFORM_AMD__ INCLUDES ${BRASA_HIP_INCLUDE} LIBS ${BRASA_AMDHIP64})
  add_dependencies(brasa-hip brasa_hip_kernels)
  set(BRASA_HIP_KERNELS_OBJ ${obj})
  message(STATUS "brasa: HIP module for ${built}")
endif()
