// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// forward and backward_input as the FP32 engines' operations (TileGemm, FewSampleProduct,
// SmallBatchProduct): operands, extents and the store of each sum.
#pragma once

#include "TernaryCounter_ViewTypes.hpp"
#include "engines/TernaryCounter_TileOperands.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// forward as a tile product: y(m, o) = scale[o] * (sum over i ascending of x(m, i) * t[o, i]).
template <class MemorySpace>
struct ForwardProduct {
  MatrixOperand<MemorySpace, true> a;   ///< x, k = i, j = m
  TernaryOperand<MemorySpace, true> b;  ///< t, k = i, j = o
  OutputView<MemorySpace> y;

  KOKKOS_INLINE_FUNCTION std::int64_t rows() const { return y.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const { return y.extent(1); }
  KOKKOS_INLINE_FUNCTION std::int64_t depth() const { return a.depth; }
  KOKKOS_INLINE_FUNCTION void store(std::int64_t m, std::int64_t o, float acc) const {
    y(m, o) = b.scale(o) * acc;
  }
};

/// backward_input as a tile product: grad_x(m, i) = sum over o ascending of
/// grad_out(m, o) * (scale[o] * t[o, i]).
template <class MemorySpace>
struct BackwardInputProduct {
  MatrixOperand<MemorySpace, true> a;    ///< grad_out, k = o, j = m
  TernaryOperand<MemorySpace, false> b;  ///< scale * t, k = o, j = i
  OutputView<MemorySpace> grad_x;

  KOKKOS_INLINE_FUNCTION std::int64_t rows() const { return grad_x.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const { return grad_x.extent(1); }
  KOKKOS_INLINE_FUNCTION std::int64_t depth() const { return a.depth; }
  KOKKOS_INLINE_FUNCTION void store(std::int64_t m, std::int64_t i, float acc) const {
    grad_x(m, i) = acc;
  }
};

}  // namespace TernaryCounter::Impl
