// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// forward of a few samples on the integer path (SPEC §6) on GPUs: each weight is used M <= 16
// times, so the product is bound by reading the packed codes (0.75 byte per weight), and
// decoding them in registers beats any GEMM. A team takes `rows` rows of W and its threads split
// the depth in chunks of 16 weights (12 bytes of codes: three 32-bit loads); each thread keeps
// rows x samples int32 sums, and one team reduction adds them (an integer sum: any order).
//
// Decoding without branches: the 4 codes of a group are spread into the 4 bytes of a word, and
// u = [code >= lv] + [code >= 2 lv] is formed in each byte by adding 128 - lv (no byte carries:
// code < 64, lv <= 32) and taking bit 7. Then t = u - 1, so sum(t x) = sum(u x) - sum(x), and
// sum(x) over the row is the quantizer's row sum: one 4-way byte dot product per 4 weights.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "TernaryCounter_PackedState.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"

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

/// a . b of 4 signed bytes each, plus c.
KOKKOS_INLINE_FUNCTION std::int32_t dot4(std::uint32_t a, std::uint32_t b, std::int32_t c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(int(a), int(b), c);
#else
  for (int e = 0; e < 4; ++e) {
    c += std::int32_t(std::int8_t(a >> (8 * e))) * std::int32_t(std::int8_t(b >> (8 * e)));
  }
  return c;
#endif
}

/// u = [code >= lv] + [code >= 2 lv] in each byte, for the group's 4 codes (24-bit word).
KOKKOS_INLINE_FUNCTION std::uint32_t ternary_plus_one(std::uint32_t group, std::uint32_t above_lv,
                                                      std::uint32_t above_2lv) {
  const std::uint32_t b = (group & 0x3Fu) | ((group << 2) & 0x3F00u) | ((group << 4) & 0x3F0000u) |
                          ((group << 6) & 0x3F000000u);
  return (((b + above_lv) >> 7) & 0x01010101u) + (((b + above_2lv) >> 7) & 0x01010101u);
}

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
            const std::uint32_t w0 = bytes[0], w1 = bytes[1], w2 = bytes[2];
            const std::uint32_t u[4] = {
                ternary_plus_one(w0 & 0xFFFFFFu, above_lv, above_2lv),
                ternary_plus_one(((w0 >> 24) | (w1 << 8)) & 0xFFFFFFu, above_lv, above_2lv),
                ternary_plus_one(((w1 >> 16) | (w2 << 16)) & 0xFFFFFFu, above_lv, above_2lv),
                ternary_plus_one(w2 >> 8, above_lv, above_2lv)};
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
