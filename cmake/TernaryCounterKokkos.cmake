# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Makes Kokkos::kokkos available: the parent project's target, else an installed Kokkos 5.0,
# else Kokkos 5.0.2 built from its pinned release source (see TernaryCounterKokkosSource.cmake).
# The backend is whatever Kokkos is configured with (Kokkos_ENABLE_SERIAL/OPENMP/CUDA/HIP).

if(NOT TARGET Kokkos::kokkos)
  find_package(Kokkos 5.0 CONFIG QUIET)
endif()

if(TARGET Kokkos::kokkos)
  set(TernaryCounter_KOKKOS_BUILT_IN_TREE OFF)
else()
  ternarycounter_provide_kokkos_source()
  message(STATUS "TernaryCounter: building Kokkos from ${TernaryCounter_KOKKOS_SOURCE_DIR}")
  add_subdirectory("${TernaryCounter_KOKKOS_SOURCE_DIR}" "${CMAKE_BINARY_DIR}/_deps/kokkos-build")
  set(TernaryCounter_KOKKOS_BUILT_IN_TREE ON)
endif()
