// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The quantizer of forward's x and backward_input's grad_out (SPEC §6): each row to int8 from its
// absmax, nearest or stochastic.
#pragma once

#include "TernaryCounter_ViewTypes.hpp"
#include "engines/TernaryCounter_HostInt8Gemm.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_Quantize.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"
#include "engines/TernaryCounter_RowsByLanes.hpp"
#include "engines/TernaryCounter_VectorRowQuantizer.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter::Impl {

/// Quantizes each row r of src [R, K] (times column_scale[k] when Scaled) to q(r, :): nearest,
/// or stochastic on the stream `key` with elem = (first_row + r) * K + k (SPEC §6, forward /
/// backward_input; first_row: the global index of row 0). A 16-bit src (T) is widened as it is
/// read: the widening is exact, so the bits are those of the float matrix.
/// GPUs: a row per vector of lanes, the absmax a reduction over them (a max: any order). Hosts: a
/// thread per row in loops that vectorize.
template <class ExecSpace, bool Scaled, bool Stochastic, class T = float>
struct RowQuantizer {
  using Mem = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr bool host = std::is_same_v<Mem, Kokkos::HostSpace>;
  static constexpr bool float_src = std::is_same_v<T, float>;
  InputView<Mem, T> src;
  Kokkos::View<const float*, Mem> column_scale;
  QuantizedRows<Mem> dst;
  std::uint32_t key = 0;
  std::int64_t first_row = 0;
  bool avx512 = false;  ///< hosts: the AVX-512 copy of the nearest rounding (set by run)

  KOKKOS_INLINE_FUNCTION float value(std::int64_t r, std::int64_t k) const {
    if constexpr (Scaled) {
      return widen(src(r, k)) * column_scale(k);
    } else {
      return widen(src(r, k));
    }
  }
  KOKKOS_INLINE_FUNCTION int quantize(const QuantizeRule& rule, std::uint32_t row_elem,
                                      std::int64_t r, std::int64_t k) const {
    if constexpr (Stochastic) {
      return rule.stochastic(value(r, k), uniform01(key, row_elem + std::uint32_t(k)));
    } else {
      return rule.nearest(value(r, k));
    }
  }

  /// Hosts: row r by one thread, in its AVX2 copy where the CPU has AVX2 (run_team_body).
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t r) const { run_team_body(*this, r); }
  KOKKOS_INLINE_FUNCTION void team_body(std::int64_t r) const {
    const std::int64_t depth = src.extent(1), padded = dst.q.extent(1);
    std::uint32_t amax_bits = 0;
    for (std::int64_t k = 0; k < depth; ++k) {
      const std::uint32_t b = absmax_term_bits(value(r, k));
      amax_bits = b > amax_bits ? b : amax_bits;
    }
    const float amax = absmax_from_bits(amax_bits);
    const QuantizeRule rule(amax);
    const std::uint32_t row_elem = element_index(first_row + r, depth, 0);
    std::int32_t sum = 0;
    bool vectorized = false;
#if TERNARYCOUNTER_HOST_VNNI
    if constexpr (host && !Scaled && !Stochastic && float_src) {
      if (avx512 && !rule.zero) {
        sum = HostInt8::quantize_nearest_row(&src(r, 0), depth, amax, &dst.q(r, 0));
        vectorized = true;
      }
    }
#endif
    for (std::int64_t k = 0; k < depth && !vectorized; ++k) {
      const int q = quantize(rule, row_elem, r, k);
      dst.q(r, k) = std::int8_t(q);
      sum += q;
    }
    for (std::int64_t k = depth; k < padded; ++k) dst.q(r, k) = 0;
    dst.scale(r) = dequantization_scale(amax);
    dst.sums(r) = sum;
  }

  /// GPUs: a row by one thread's vector lanes (RowsByLanes: a warp on CUDA), 4 columns a lane:
  /// the absmax and the row sum reduce across the lanes only (no team barrier), the second pass
  /// reads the row again from cache, and the int8 results are stored 4 to a 32-bit word.
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    RowsByLanes<ExecSpace>::for_each_row(team, src.extent(0), [&](std::int64_t r) {
      const std::int64_t depth = src.extent(1), groups = dst.q.extent(1) / 4;
      float amax = 0.0f;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, (depth + 3) / 4),
          [&](std::int64_t g, float& m) {
            for (std::int64_t k = 4 * g; k < 4 * g + 4 && k < depth; ++k) {
              m = absmax_join(m, absmax_term(value(r, k)));
            }
          },
          Kokkos::Max<float>(amax));
      amax = absmax_join(0.0f, amax);  // a row of no columns
      const QuantizeRule rule(amax);
      const std::uint32_t row_elem = element_index(first_row + r, depth, 0);
      std::int32_t sum = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, groups),
          [&](std::int64_t g, std::int32_t& acc) {
            std::uint32_t word = 0;
            for (int e = 0; e < 4; ++e) {
              const std::int64_t k = 4 * g + e;
              const int q = k < depth ? quantize(rule, row_elem, r, k) : 0;
              word |= std::uint32_t(std::uint8_t(std::int8_t(q))) << (8 * e);
              acc += q;
            }
            *reinterpret_cast<std::uint32_t*>(&dst.q(r, 4 * g)) = word;  // Kp: whole words
          },
          sum);
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        dst.scale(r) = dequantization_scale(amax);
        dst.sums(r) = sum;
      });
    });
  }

  /// The GPUs' launch of the kernel above (the tests run it on hosts too).
  void run_rows_by_lanes(const ExecSpace& space, const char* label) const {
    Kokkos::parallel_for(label, RowsByLanes<ExecSpace>::policy(space, src.extent(0)), *this);
  }

  void run(const ExecSpace& space, const char* label) const {
    if constexpr (host) {
      RowQuantizer rows = *this;
      rows.avx512 = HostInt8::runs_avx512();  // once per launch, outside the kernel
      Kokkos::parallel_for(label,
                           Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                               space, 0, std::int64_t(src.extent(0))),
                           rows);
    } else {
#ifdef KOKKOS_ENABLE_CUDA
      if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda> && float_src) {  // whole float4s
        using Vector = VectorRowQuantizer<ExecSpace, Scaled, Stochastic>;
        if (Vector::runs(src, column_scale)) {
          Vector{src, column_scale, dst.q, dst.scale, dst.sums, key, first_row}.run(space, label);
          return;
        }
      }
#endif
      run_rows_by_lanes(space, label);
    }
  }
};

}  // namespace TernaryCounter::Impl
