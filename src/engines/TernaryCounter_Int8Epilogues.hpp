// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer products' epilogues (SPEC §6): an int32 sum to its float output, for forward,
// backward_input and update_from_io's weight gradient. Every engine stores through them; the
// products' epilogues round the float into a 16-bit output as they store (T), so a bf16 output
// costs no float pass.
#pragma once

#include "TernaryCounter_HalfFloats.hpp"
#include "TernaryCounter_ViewTypes.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// v, or the quiet NaN 0x7FC00000 where v is a NaN: an output's NaN has the same bits on every
/// backend (GPUs' arithmetic gives other NaN bits than CPUs'; SPEC §6).
KOKKOS_INLINE_FUNCTION float canonical_nan(float v) {
  return v != v ? Kokkos::Experimental::quiet_NaN_v<float> : v;
}

/// y(m, o) = (float(Y) * s_m) * scale[o], rounded to T.
template <class Mem, class T = float>
struct ForwardEpilogue {
  OutputView<Mem, T> y;
  FloatVector<Mem> sample_scale;
  Kokkos::View<const float*, Mem> row_scale;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t m, std::int64_t o, std::int32_t sum) const {
    y(m, o) = narrow<T>(canonical_nan((float(sum) * sample_scale(m)) * row_scale(o)));
  }
  void store_run(std::int64_t m, std::int64_t o0, int n, const std::int32_t* sums) const {
    const float s = sample_scale(m);
    T* out = &y(m, o0);
    const float* scale = &row_scale(o0);
    for (int j = 0; j < n; ++j) out[j] = narrow<T>(canonical_nan((float(sums[j]) * s) * scale[j]));
  }
};

/// grad_x(m, i) = float(X) * r_m, rounded to T.
template <class Mem, class T = float>
struct BackwardInputEpilogue {
  OutputView<Mem, T> grad_x;
  FloatVector<Mem> sample_scale;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t m, std::int64_t i, std::int32_t sum) const {
    grad_x(m, i) = narrow<T>(canonical_nan(float(sum) * sample_scale(m)));
  }
  void store_run(std::int64_t m, std::int64_t i0, int n, const std::int32_t* sums) const {
    const float r = sample_scale(m);
    T* out = &grad_x(m, i0);
    for (int j = 0; j < n; ++j) out[j] = narrow<T>(canonical_nan(float(sums[j]) * r));
  }
};

/// g(r, i) = float(G) * (sg[first + r] * sx[i]), into the update's gradient rows.
template <class Mem>
struct GradientEpilogue {
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> gradient;
  FloatVector<Mem> row_scale;  ///< sg of the chunk's rows
  FloatVector<Mem> col_scale;  ///< sx
  KOKKOS_INLINE_FUNCTION void store(std::int64_t r, std::int64_t i, std::int32_t sum) const {
    gradient(r, i) = float(sum) * (row_scale(r) * col_scale(i));
  }
  void store_run(std::int64_t r, std::int64_t i0, int n, const std::int32_t* sums) const {
    const float sg = row_scale(r);
    float* out = &gradient(r, i0);
    const float* sx = &col_scale(i0);
    for (int j = 0; j < n; ++j) out[j] = float(sums[j]) * (sg * sx[j]);
  }
};

/// sums(r, i) = G: the weight gradient's int32 sums themselves (data parallelism, SPEC §7).
template <class Mem>
struct IntegerSumsEpilogue {
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> sums;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t r, std::int64_t i, std::int32_t sum) const {
    sums(r, i) = sum;
  }
  void store_run(std::int64_t r, std::int64_t i0, int n, const std::int32_t* run) const {
    std::int32_t* out = &sums(r, i0);
    for (int j = 0; j < n; ++j) out[j] = run[j];
  }
};

}  // namespace TernaryCounter::Impl
