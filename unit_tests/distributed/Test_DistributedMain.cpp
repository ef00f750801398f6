// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ternary-counter-test-distributed: the TernaryCounter::Distributed tests, run under mpirun with
// any number of ranks on Kokkos' default execution space. Every rank runs every test; only rank
// 0 prints, and the exit code is non-zero when a test failed on any rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, failed = 0, any_failed = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    if (rank != 0) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
    }
    failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  }
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_failed && !failed) std::printf("a test failed on another rank\n");
  MPI_Finalize();
  return any_failed;
}
