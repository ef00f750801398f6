// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The execution spaces this Kokkos build enables: the library instantiates its kernels for each.
#pragma once

#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_SERIAL
#define TERNARYCOUNTER_IF_SERIAL(MACRO) MACRO(Kokkos::Serial)
#else
#define TERNARYCOUNTER_IF_SERIAL(MACRO)
#endif
#ifdef KOKKOS_ENABLE_OPENMP
#define TERNARYCOUNTER_IF_OPENMP(MACRO) MACRO(Kokkos::OpenMP)
#else
#define TERNARYCOUNTER_IF_OPENMP(MACRO)
#endif
#ifdef KOKKOS_ENABLE_THREADS
#define TERNARYCOUNTER_IF_THREADS(MACRO) MACRO(Kokkos::Threads)
#else
#define TERNARYCOUNTER_IF_THREADS(MACRO)
#endif
#ifdef KOKKOS_ENABLE_CUDA
#define TERNARYCOUNTER_IF_CUDA(MACRO) MACRO(Kokkos::Cuda)
#else
#define TERNARYCOUNTER_IF_CUDA(MACRO)
#endif
#ifdef KOKKOS_ENABLE_HIP
#define TERNARYCOUNTER_IF_HIP(MACRO) MACRO(Kokkos::HIP)
#else
#define TERNARYCOUNTER_IF_HIP(MACRO)
#endif

/// Expands MACRO(space) once per enabled execution space.
#define TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(MACRO) \
  TERNARYCOUNTER_IF_SERIAL(MACRO)                      \
  TERNARYCOUNTER_IF_OPENMP(MACRO)                      \
  TERNARYCOUNTER_IF_THREADS(MACRO) TERNARYCOUNTER_IF_CUDA(MACRO) TERNARYCOUNTER_IF_HIP(MACRO)
