// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The execution space the shared tests run on in ternary-counter-test-OpenMP.
#pragma once

#include <Kokkos_Core.hpp>

#define TEST_EXECSPACE Kokkos::OpenMP
