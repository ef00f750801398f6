// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Helpers of the distributed tests: deterministic global data that every rank can build, row
// blocks of it, and exact comparisons of states.
#pragma once

#include <TernaryCounter.hpp>
#include <TernaryCounter_Distributed.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace TernaryCounter::Test {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using State = PackedState<MemSpace>;
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>;
namespace Dist = TernaryCounter::Distributed;

/// [rows, cols] values of about `sigma` in size from (stream, element), the same on every rank.
inline Matrix hashed_matrix(const std::string& label, std::int64_t rows, std::int64_t cols,
                            std::uint32_t stream, float sigma) {
  auto host = Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace>(label, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      host(r, c) = sigma * (2.0f * uniform01(stream, element_index(r, cols, c)) - 1.0f);
    }
  }
  Matrix device(label, rows, cols);
  Kokkos::deep_copy(device, host);
  return device;
}

/// Rows [first, last) of a matrix: a LayoutRight View that shares its memory.
inline Matrix rows_of(const Matrix& m, std::int64_t first, std::int64_t last) {
  return Kokkos::subview(m, std::pair<std::int64_t, std::int64_t>(first, last), Kokkos::ALL);
}

/// A state with random ternary codes, varied scales and v = 0 (equal on every rank).
inline State random_state(std::int64_t out, std::int64_t in, int C, std::uint32_t seed) {
  State state("state", out, in, C);
  randomize_ternary(state, seed, 0.5f);
  return state;
}

/// Whether two states are bit-identical (codes, scale and v bit patterns).
inline bool identical(const State& a, const State& b) {
  const auto ha = create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, a);
  const auto hb = create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, b);
  if (ha.out() != hb.out() || ha.in() != hb.in() || ha.C != hb.C) return false;
  for (std::int64_t o = 0; o < ha.out(); ++o) {
    if (std::bit_cast<std::uint32_t>(ha.scale(o)) != std::bit_cast<std::uint32_t>(hb.scale(o)) ||
        std::bit_cast<std::uint32_t>(ha.v(o)) != std::bit_cast<std::uint32_t>(hb.v(o))) {
      return false;
    }
    for (std::size_t j = 0; j < ha.codes.extent(1); ++j) {
      if (ha.codes(o, j) != hb.codes(o, j)) return false;
    }
  }
  return true;
}

/// Whether `local` holds on every rank (collective).
inline bool on_every_rank(bool local) {
  int mine = local ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

/// Whether every rank passed the same text (collective).
inline bool same_on_every_rank(const std::string& text) {
  const unsigned long long h = std::hash<std::string>{}(text);
  unsigned long long lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

}  // namespace TernaryCounter::Test
