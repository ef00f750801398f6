// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hosts' quantizer of update_from_io's operands (SPEC §6): x and grad_out by columns.
#pragma once

#include "TernaryCounter_ViewTypes.hpp"
#include "engines/TernaryCounter_HostInt8Gemm.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_Quantize.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter::Impl {

/// What a ColumnQuantizer launch does: the columns' absmax and the quantization (one process),
/// only the absmax, or only the quantization with given absmax (data parallelism, SPEC §7).
enum class ColumnPass { both, absmax, quantize };

/// The weight gradient's operands on hosts (SPEC §6, update from IO; GPUs: TiledColumnQuantizer):
/// x quantized per column to xq [M, in] (nearest) and grad_out per column, transposed, to
/// gq [out, Mp] (stochastic on stream tag_w with elem = (row_offset + o) * M + m), with the
/// columns' scales and gq's row sums.
/// A thread takes `width` adjacent columns of one matrix and reads the samples' rows contiguously
/// (in loops that vectorize); gq's transposed rows are written through a small tile of `tile`
/// samples. A 16-bit x and grad_out (T) are widened as they are read (exact: the float bits).
template <class ExecSpace, class T = float>
struct ColumnQuantizer {
  using Mem = typename ExecSpace::memory_space;
  static_assert(std::is_same_v<Mem, Kokkos::HostSpace>);
  static constexpr int width = 128;
  static constexpr int tile = 64;
  InputView<Mem, T> x, grad_out;
  Int8Matrix<Mem> xq;
  FloatVector<Mem> x_scale;
  QuantizedRows<Mem> gq;
  std::uint32_t key = 0;
  std::int64_t row_offset = 0;
  bool avx512 = false;  ///< hosts: the AVX-512 copy of x's nearest rounding (set by run)
  /// Data parallelism (SPEC §7): the global batch size and this block's first global sample,
  /// which key gq's stream (-1: these samples are the whole batch).
  std::int64_t stream_samples = -1;
  std::int64_t sample_offset = 0;
  /// The columns' absmax bits [in + out] (x's, then grad_out's): written by an absmax pass, read
  /// by a quantize pass (both: the quantizer's own, and this is unused).
  Kokkos::View<std::uint32_t*, Mem> amax_bits;
  ColumnPass pass = ColumnPass::both;

  KOKKOS_INLINE_FUNCTION static std::int64_t blocks(std::int64_t n) {
    return (n + width - 1) / width;
  }

  /// xq(m, c0 + j) for every sample, rows of W levels.
  template <int W>
  KOKKOS_INLINE_FUNCTION void quantize_x_rows(std::int64_t c0, const float* amax) const {
    const std::int64_t M = x.extent(0);
#if TERNARYCOUNTER_HOST_VNNI
    if constexpr (W % 16 == 0 && std::is_same_v<T, float>) {
      if (avx512) {
        for (std::int64_t m = 0; m < M; ++m) {
          HostInt8::quantize_nearest_columns(&x(m, c0), W, amax, &xq(m, c0));
        }
        return;
      }
    }
#endif
    for (std::int64_t m = 0; m < M; ++m) {
      const T* row = &x(m, c0);
      std::int8_t* q = &xq(m, c0);
      for (int j = 0; j < W; ++j) q[j] = std::int8_t(QuantizeRule(amax[j]).nearest(widen(row[j])));
    }
  }

  /// Columns [c0, c0 + W) of x.
  /// amax[j]: the absmax of column c0 + j of `m` (first: its index in amax_bits), from
  /// amax_bits in a quantize pass, else over the samples (and stored in an absmax pass).
  template <int W>
  KOKKOS_INLINE_FUNCTION void column_absmax(const InputView<Mem, T>& m, std::int64_t c0,
                                            std::int64_t first, float* amax) const {
    if (pass == ColumnPass::quantize) {
      for (int j = 0; j < W; ++j) amax[j] = absmax_from_bits(amax_bits(first + c0 + j));
      return;
    }
    for (int j = 0; j < W; ++j) amax[j] = 0.0f;
    for (std::int64_t s = 0; s < std::int64_t(m.extent(0)); ++s) {
      const T* row = &m(s, c0);
      for (int j = 0; j < W; ++j) amax[j] = absmax_join(amax[j], absmax_term(widen(row[j])));
    }
    if (pass == ColumnPass::absmax) {
      for (int j = 0; j < W; ++j)
        amax_bits(first + c0 + j) = Kokkos::bit_cast<std::uint32_t>(amax[j]);
    }
  }

  template <int W>
  KOKKOS_INLINE_FUNCTION void quantize_x(std::int64_t c0) const {
    float amax[W];
    column_absmax<W>(x, c0, 0, amax);
    if (pass == ColumnPass::absmax) return;
    quantize_x_rows<W>(c0, amax);
    for (int j = 0; j < W; ++j) x_scale(c0 + j) = dequantization_scale(amax[j]);
  }

  /// Columns [o0, o0 + W) of grad_out.
  template <int W>
  KOKKOS_INLINE_FUNCTION void quantize_grad_out(std::int64_t o0) const {
    const std::int64_t M = grad_out.extent(0), padded = gq.q.extent(1);
    float amax[W];
    column_absmax<W>(grad_out, o0, x.extent(1), amax);
    if (pass == ColumnPass::absmax) return;
    const std::int64_t stream_M = stream_samples < 0 ? M : stream_samples;
    std::int32_t sum[W];
    std::uint32_t column_elem[W];
    for (int j = 0; j < W; ++j) {
      sum[j] = 0;
      column_elem[j] = element_index(row_offset + o0 + j, stream_M, sample_offset);
    }
    for (std::int64_t m0 = 0; m0 < padded; m0 += tile) {
      std::int8_t q[tile][W];
      const int n = int(Kokkos::min<std::int64_t>(tile, padded - m0));
      for (int e = 0; e < n; ++e) {
        const std::int64_t m = m0 + e;
        if (m < M) {
          const T* row = &grad_out(m, o0);
          for (int j = 0; j < W; ++j) {
            const int v = QuantizeRule(amax[j]).stochastic(
                widen(row[j]), uniform01(key, column_elem[j] + std::uint32_t(m)));
            q[e][j] = std::int8_t(v);
            sum[j] += v;
          }
        } else {
          for (int j = 0; j < W; ++j) q[e][j] = 0;
        }
      }
      for (int j = 0; j < W; ++j) {
        std::int8_t* out = &gq.q(o0 + j, m0);
        for (int e = 0; e < n; ++e) out[e] = q[e][j];
      }
    }
    for (int j = 0; j < W; ++j) {
      gq.scale(o0 + j) = dequantization_scale(amax[j]);
      gq.sums(o0 + j) = sum[j];
    }
  }

  /// Block b, in its AVX2 copy where the CPU has AVX2 (run_team_body).
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t b) const {
    run_team_body(*this, b);
  }
  KOKKOS_INLINE_FUNCTION void team_body(std::int64_t b) const {
    const std::int64_t in = x.extent(1), out = grad_out.extent(1);
    const bool of_x = b < blocks(in);
    const std::int64_t c0 = (of_x ? b : b - blocks(in)) * width;
    const std::int64_t n = of_x ? in : out;
    if (c0 + width <= n) {
      if (of_x) {
        quantize_x<width>(c0);
      } else {
        quantize_grad_out<width>(c0);
      }
      return;
    }
    for (std::int64_t c = c0; c < n; ++c) {
      if (of_x) {
        quantize_x<1>(c);
      } else {
        quantize_grad_out<1>(c);
      }
    }
  }

  void run(const ExecSpace& space, const char* label) const {
    ColumnQuantizer columns = *this;
    columns.avx512 = HostInt8::runs_avx512();  // once per launch, outside the kernel
    Kokkos::parallel_for(label,
                         Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                             space, 0, blocks(x.extent(1)) + blocks(grad_out.extent(1))),
                         columns);
  }
};

}  // namespace TernaryCounter::Impl
