// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// backward_input of a few samples on the integer path (SPEC §6) on GPUs:
// X[m, i] = sum over o of hq[m, o] * t[o, i] reads each packed code once (0.75 byte per weight)
// and decodes it in registers, instead of decoding all of W into a GEMM operand first.
//
// A thread takes 16 columns (12 bytes of codes per row: three 32-bit loads, the warp's loads
// contiguous), up to 4 samples and a slice of rows, 4 rows at a time: each row's codes become
// u = t + 1 in 4 bytes per group (ternary_plus_one), the 4 rows' bytes of each column are
// transposed into one word, and a 4-way byte dot product with hq[m, o..o+3] (contiguous) adds
// 4 rows per instruction. sum(t h) = sum(u h) - sum(h), the quantizer's row sum. Slices of rows
// add their int32 sums atomically (an integer sum: exact in any order), then the epilogue.
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_PackedBytes.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter::Impl {

/// sums[m, i] += sum over the slice's rows o of hq[m, o] * u[o, i] for S samples per thread.
template <class ExecSpace, int S>
struct FewSampleInt8BackwardInput {
  using Mem = typename ExecSpace::memory_space;
  static constexpr int columns = 16;
  Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, Mem> hq;  ///< [M + padding, Kp]
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, Mem> codes;
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> sums;  ///< [M, in], zeroed
  int C = 8;
  std::int64_t M = 0;
  std::int64_t slice_rows = 4;  ///< a multiple of 4
  std::int64_t quads = 1;       ///< groups of S samples

  KOKKOS_INLINE_FUNCTION std::int64_t chunks() const { return codes.extent(1) / 12; }

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t idx) const {
    const std::int64_t out = codes.extent(0);
    const std::int64_t c = idx % chunks(), rest = idx / chunks();
    const std::int64_t m0 = rest % quads * S, first = rest / quads * slice_rows;
    const std::int64_t last = Kokkos::min(out, first + slice_rows);
    const std::uint32_t lv = std::uint32_t(counter_levels(C));
    const std::uint32_t above_lv = (128u - lv) * 0x01010101u;
    const std::uint32_t above_2lv = (128u - 2 * lv) * 0x01010101u;
    std::int32_t acc[S][columns];
    for (int s = 0; s < S; ++s) {
      for (int j = 0; j < columns; ++j) acc[s][j] = 0;
    }
    // The next step's codes are loaded before this step's sums: each thread keeps two steps of
    // loads in flight (a thread has few rows to walk, and its latency is the limit).
    std::uint32_t next[4][3];
    const auto load_step = [&](std::int64_t o, std::uint32_t(&w)[4][3]) {
      for (int r = 0; r < 4; ++r) {
        // Rows past the layer re-read its last row: their hq bytes are the zero padding.
        const std::int64_t row = Kokkos::min(o + r, out - 1);
        const std::uint32_t* bytes = reinterpret_cast<const std::uint32_t*>(&codes(row, 12 * c));
        for (int k = 0; k < 3; ++k) w[r][k] = bytes[k];
      }
    };
    if (first < last) load_step(first, next);
    for (std::int64_t o = first; o < last; o += 4) {
      std::uint32_t u[4][4];  // [row][group of 4 columns]
      for (int r = 0; r < 4; ++r) {
        split_groups(next[r], u[r]);
        for (int q = 0; q < 4; ++q) u[r][q] = ternary_plus_one(u[r][q], above_lv, above_2lv);
      }
      if (o + 4 < last) load_step(o + 4, next);
      std::uint32_t h[S];
      for (int s = 0; s < S; ++s) h[s] = *reinterpret_cast<const std::uint32_t*>(&hq(m0 + s, o));
      for (int g = 0; g < 4; ++g) {
        const std::uint32_t rows[4] = {u[0][g], u[1][g], u[2][g], u[3][g]};
        std::uint32_t column[4];
        transpose_bytes(rows, column);
        for (int e = 0; e < 4; ++e) {
          for (int s = 0; s < S; ++s) acc[s][4 * g + e] = dot4(column[e], h[s], acc[s][4 * g + e]);
        }
      }
    }
    for (int s = 0; s < S; ++s) {
      if (m0 + s >= M) break;
      for (int j = 0; j < columns; ++j) {
        if (acc[s][j] != 0) Kokkos::atomic_add(&sums(m0 + s, columns * c + j), acc[s][j]);
      }
    }
  }
};

/// The int32 scratch of few_sample_int8_backward_input: M x in sums, where it runs.
inline std::int64_t few_sample_backward_input_sums(std::int64_t M, std::int64_t in) {
  return M <= 16 && in % 16 == 0 ? M * in : 0;
}

/// backward_input of M <= 16 samples: sums (few_sample_backward_input_sums elements, any
/// contents) receive X + sum(h) per sample, then epilogue.store(m, i, X[m, i]); false where
/// M > 16 or the layer's in is not a multiple of 16 (then a GEMM serves).
template <class ExecSpace, class Epilogue>
bool few_sample_int8_backward_input(
    const ExecSpace& space,
    const Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, typename ExecSpace::memory_space>&
        hq,
    const Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space>& h_sums,
    const PackedState<typename ExecSpace::memory_space>& state, std::int64_t M,
    const Kokkos::View<std::int32_t**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& sums,
    const Epilogue& epilogue) {
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  if (few_sample_backward_input_sums(M, state.in()) == 0 || M == 0) return false;
  static_assert(4 <= int8_padding_rows, "hq's zero rows cover a last group of 4 samples");
  const std::int64_t in = state.in(), out = state.out();
  Kokkos::deep_copy(space, sums, 0);
  const auto launch = [&](auto samples) {
    constexpr int S = decltype(samples)::value;
    FewSampleInt8BackwardInput<ExecSpace, S> kernel{hq, state.codes, sums, state.C, M};
    kernel.quads = (M + S - 1) / S;
    // Half of the device's threads (each with two steps of loads in flight) keep its memory
    // busy; each slice as long as that allows (fewer atomics).
    const std::int64_t per_slice = in / 16 * kernel.quads;
    const std::int64_t threads = Kokkos::max<std::int64_t>(1, space.concurrency() / 2);
    const std::int64_t slices_wanted = (threads + per_slice - 1) / per_slice;
    const std::int64_t slices = Kokkos::min<std::int64_t>(slices_wanted, (out + 3) / 4);
    kernel.slice_rows = ((out + slices - 1) / slices + 3) / 4 * 4;
    const std::int64_t used = (out + kernel.slice_rows - 1) / kernel.slice_rows;
    Kokkos::parallel_for("TernaryCounter::backward_input::int8_few_samples",
                         Policy(space, 0, used * per_slice), kernel);
  };
  if (M <= 1) {
    launch(std::integral_constant<int, 1>{});
  } else if (M <= 2) {
    launch(std::integral_constant<int, 2>{});
  } else {
    launch(std::integral_constant<int, 4>{});
  }
  Kokkos::parallel_for(
      "TernaryCounter::backward_input::int8_few_samples_epilogue", Policy(space, 0, M * in),
      KOKKOS_LAMBDA(std::int64_t k) {
        const std::int64_t m = k / in, i = k % in;
        // Wrapping arithmetic: sum(u h) may pass 2^31 where X (SPEC §6's bound) cannot.
        epilogue.store(m, i, std::int32_t(std::uint32_t(sums(m, i)) - std::uint32_t(h_sums(m))));
      });
  return true;
}

}  // namespace TernaryCounter::Impl
