// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ternary-counter-test-Serial: the shared tests on Kokkos::Serial.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
