# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The optional distributed component (TernaryCounter::Distributed): MPI between processes and,
# on CUDA, NCCL between GPUs. Each is on by default when it is found; asking for one that is not
# there is an error. The core library needs neither.
find_package(MPI COMPONENTS CXX QUIET)
option(TernaryCounter_ENABLE_MPI "Build TernaryCounter::Distributed (data parallelism over MPI)"
       ${MPI_CXX_FOUND})
if(TernaryCounter_ENABLE_MPI AND NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "TernaryCounter_ENABLE_MPI is ON but no MPI was found (Debian/Ubuntu: "
                      "apt-get install libopenmpi-dev openmpi-bin)")
endif()

set(_tc_nccl_default OFF)
if(TernaryCounter_ENABLE_MPI AND Kokkos_ENABLE_CUDA)
  include(${CMAKE_CURRENT_LIST_DIR}/TernaryCounterFindNCCL.cmake)
  set(_tc_nccl_default ${NCCL_FOUND})
endif()
option(TernaryCounter_ENABLE_NCCL
       "All-gather device buffers with NCCL in TernaryCounter::Distributed (CUDA builds)"
       ${_tc_nccl_default})
if(TernaryCounter_ENABLE_NCCL)
  if(NOT TernaryCounter_ENABLE_MPI OR NOT Kokkos_ENABLE_CUDA)
    message(FATAL_ERROR "TernaryCounter_ENABLE_NCCL needs TernaryCounter_ENABLE_MPI and a CUDA "
                        "Kokkos (NCCL is bootstrapped over MPI and moves CUDA buffers)")
  endif()
  include(${CMAKE_CURRENT_LIST_DIR}/TernaryCounterFindNCCL.cmake)
  if(NOT NCCL_FOUND)
    message(FATAL_ERROR "TernaryCounter_ENABLE_NCCL is ON but nccl.h / libnccl were not found "
                        "(set NCCL_ROOT)")
  endif()
endif()
if(TernaryCounter_ENABLE_NCCL)
  message(STATUS "TernaryCounter: TernaryCounter::Distributed with MPI ${MPI_CXX_VERSION} and "
                 "NCCL ${NCCL_VERSION} (${NCCL_LIBRARY})")
elseif(TernaryCounter_ENABLE_MPI)
  message(STATUS "TernaryCounter: TernaryCounter::Distributed with MPI ${MPI_CXX_VERSION} "
                 "(device buffers staged through host memory)")
else()
  message(STATUS "TernaryCounter: no MPI: TernaryCounter::Distributed is not built")
endif()

# The tests' mpirun flags: Open MPI refuses more ranks than cores without --oversubscribe.
if(TernaryCounter_ENABLE_MPI)
  set(TernaryCounter_MPIEXEC_FLAGS ${MPIEXEC_PREFLAGS})
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _tc_mpiexec_version
                  ERROR_QUIET RESULT_VARIABLE _tc_rc)
  if(_tc_rc EQUAL 0 AND _tc_mpiexec_version MATCHES "Open MPI|OpenRTE")
    list(APPEND TernaryCounter_MPIEXEC_FLAGS --oversubscribe)
  endif()
endif()
