# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Finds NCCL (header nccl.h, library libnccl) and defines the imported target NCCL::NCCL.
# Looked for under NCCL_ROOT / NCCL_HOME / CUDA_HOME and the CUDA toolkit's folders (NVIDIA's
# CUDA images put it there). Installed as part of the package: a consumer of a TernaryCounter
# built with NCCL recreates the target with the same search.
if(TARGET NCCL::NCCL)
  return()
endif()
set(_tc_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} $ENV{CUDA_HOME})
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _tc_nccl_hints ${CUDAToolkit_LIBRARY_ROOT})
endif()
list(APPEND _tc_nccl_hints /usr/local/cuda)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_tc_nccl_hints} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY nccl HINTS ${_tc_nccl_hints} PATH_SUFFIXES lib lib64)
if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _tc_nccl_version REGEX "^#define NCCL_(MAJOR|MINOR) ")
  string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*" "\\1.\\2" NCCL_VERSION
                       "${_tc_nccl_version}")
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
  set(NCCL_FOUND TRUE)
else()
  set(NCCL_FOUND FALSE)
endif()
