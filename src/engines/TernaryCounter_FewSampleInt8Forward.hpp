// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// forward of a few samples on the integer path (SPEC §6) on GPUs: each weight is used M <= 16
// times, so the product is bound by reading the packed codes (0.75 byte per weight), and
// decoding them in registers beats any GEMM. A team takes `rows` rows of W and its threads split
// the depth in chunks of 16 weights (12 bytes of codes: three 32-bit loads); each thread keeps
// rows x samples int32 sums, and one team reduction adds them (an integer sum: any order).
//
// The codes decode without branches into u = t + 1 per byte (PackedBytes.hpp), so
// sum(t x) = sum(u x) - sum(x), and sum(x) over the row is the quantizer's row sum: one 4-way
// byte dot product per 4 weights.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "TernaryCounter_PackedState.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_PackedBytes.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter::Impl {

/// The int32 sums of one team: rows x S of them.
template <int N>
struct IntSums {
  std::int32_t v[N];
  KOKKOS_INLINE_FUNCTION IntSums() {
    for (int i = 0; i < N; ++i) v[i] = 0;
  }
  KOKKOS_INLINE_FUNCTION IntSums& operator+=(const IntSums& o) {
    for (int i = 0; i < N; ++i) v[i] += o.v[i];
    return *this;
  }
};

}  // namespace TernaryCounter::Impl

namespace Kokkos {
template <int N>
struct reduction_identity<TernaryCounter::Impl::IntSums<N>> {
  KOKKOS_FORCEINLINE_FUNCTION static TernaryCounter::Impl::IntSums<N> sum() { return {}; }
};
}  // namespace Kokkos

namespace TernaryCounter::Impl {

/// forward of M <= S samples (xq: the quantized rows, with int8_padding_rows >= 16 zero rows past
/// M); in a multiple of 16.
template <class ExecSpace, int S, class Epilogue>
struct FewSampleInt8Forward {
  using Mem = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int rows = 4;
  static_assert(S <= int8_padding_rows, "xq's zero rows cover the samples past M");
  Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, Mem> xq;
  Kokkos::View<const std::int32_t*, Mem> x_sums;
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, Mem> codes;
  int C = 8;
  std::int64_t M = 0;
  Epilogue epilogue;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t out = codes.extent(0), chunks = codes.extent(1) / 12;
    const std::int64_t o0 = std::int64_t(team.league_rank()) * rows;
    const std::uint32_t lv = std::uint32_t(counter_levels(C));
    const std::uint32_t above_lv = (128u - lv) * 0x01010101u;
    const std::uint32_t above_2lv = (128u - 2 * lv) * 0x01010101u;
    IntSums<rows * S> total;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, chunks),
        [&](std::int64_t c, IntSums<rows * S>& acc) {
          std::uint32_t x[S][4];
          for (int m = 0; m < S; ++m) {
            const std::uint32_t* q = reinterpret_cast<const std::uint32_t*>(&xq(m, 16 * c));
            for (int w = 0; w < 4; ++w) x[m][w] = q[w];
          }
          for (int r = 0; r < rows; ++r) {
            const std::int64_t o = Kokkos::min(o0 + r, out - 1);  // a short last team re-reads
            const std::uint32_t* bytes = reinterpret_cast<const std::uint32_t*>(&codes(o, 12 * c));
            const std::uint32_t w[3] = {bytes[0], bytes[1], bytes[2]};
            std::uint32_t u[4];
            split_groups(w, u);
            for (int q = 0; q < 4; ++q) u[q] = ternary_plus_one(u[q], above_lv, above_2lv);
            for (int m = 0; m < S; ++m) {
              std::int32_t s = acc.v[r * S + m];
              for (int w = 0; w < 4; ++w) s = dot4(u[w], x[m][w], s);
              acc.v[r * S + m] = s;
            }
          }
        },
        Kokkos::Sum<IntSums<rows * S>>(total));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows * S), [&](int i) {
      const std::int64_t o = o0 + i / S, m = i % S;
      if (o < out && m < M) epilogue.store(m, o, total.v[i] - x_sums(m));
    });
  }

  void run(const ExecSpace& space, const char* label) const {
    const std::int64_t out = codes.extent(0);
    const std::int64_t teams = (out + rows - 1) / rows;
    if constexpr (std::is_same_v<Mem, Kokkos::HostSpace>) {  // hosts run it only in the tests
      Kokkos::parallel_for(label, Kokkos::TeamPolicy<ExecSpace>(space, teams, Kokkos::AUTO), *this);
    } else {
      Kokkos::parallel_for(label, Kokkos::TeamPolicy<ExecSpace>(space, teams, 128), *this);
    }
  }
};

/// Whether few_sample_int8_forward serves M samples of a layer with `in` inputs.
inline bool few_sample_int8_forward_serves(std::int64_t M, std::int64_t in) {
  return M <= 16 && in % 16 == 0;
}

/// Runs FewSampleInt8Forward with the least S >= M of 1, 2, 4, 8, 16; false where M > 16 or the
/// layer's depth is not a multiple of 16 (then a GEMM serves).
template <class ExecSpace, class Epilogue>
bool few_sample_int8_forward(
    const ExecSpace& space,
    const Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, typename ExecSpace::memory_space>&
        xq,
    const Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space>& x_sums,
    const PackedState<typename ExecSpace::memory_space>& state, std::int64_t M,
    const Epilogue& epilogue) {
  if (!few_sample_int8_forward_serves(M, state.in())) return false;
  const char* label = "TernaryCounter::forward::int8_few_samples";
  const auto launch = [&](auto samples) {
    FewSampleInt8Forward<ExecSpace, decltype(samples)::value, Epilogue>{
        xq, x_sums, state.codes, state.C, M, epilogue}
        .run(space, label);
  };
  if (M <= 1) {
    launch(std::integral_constant<int, 1>{});
  } else if (M <= 2) {
    launch(std::integral_constant<int, 2>{});
  } else if (M <= 4) {
    launch(std::integral_constant<int, 4>{});
  } else if (M <= 8) {
    launch(std::integral_constant<int, 8>{});
  } else {
    launch(std::integral_constant<int, 16>{});
  }
  return true;
}

}  // namespace TernaryCounter::Impl
