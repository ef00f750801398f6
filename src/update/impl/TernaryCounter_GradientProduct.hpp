// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// update_from_io's FP32 weight gradient as an operation of the tile engine (TileGemm).
#pragma once

#include "TernaryCounter_ViewTypes.hpp"
#include "engines/TernaryCounter_TileOperands.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// The weight gradient of SPEC §3 step 1 as a tile product: rows(r, i) = sum over m ascending of
/// grad_out(m, first + r) * x(m, i).
template <class MemorySpace>
struct GradientProduct {
  MatrixOperand<MemorySpace, false> a;  ///< grad_out, k = m, j = r
  MatrixOperand<MemorySpace, false> b;  ///< x, k = m, j = i
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> gradient;

  GradientProduct(const InputView<MemorySpace>& x, const InputView<MemorySpace>& grad_out,
                  const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& rows,
                  std::int64_t first)
      : a(grad_out, first, x.extent(0), rows.extent(0)),
        b(x, 0, x.extent(0), x.extent(1)),
        gradient(rows) {}

  KOKKOS_INLINE_FUNCTION std::int64_t rows() const { return gradient.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const { return gradient.extent(1); }
  KOKKOS_INLINE_FUNCTION std::int64_t depth() const { return a.depth; }
  KOKKOS_INLINE_FUNCTION void store(std::int64_t r, std::int64_t c, float acc) const {
    gradient(r, c) = acc;
  }
};

/// The same chains continued from the gradient's values: rows(r, i) = the chain of rows(r, i)'s
/// own samples, then grad_out(m, first + r) * x(m, i) over these m ascending. A gradient
/// accumulated over micro-batches this way is the gradient of their concatenation, bit for bit.
template <class MemorySpace>
struct ContinuedGradientProduct : GradientProduct<MemorySpace> {
  using GradientProduct<MemorySpace>::GradientProduct;
  KOKKOS_INLINE_FUNCTION float start(std::int64_t r, std::int64_t c) const {
    return this->gradient(r, c);
  }
};

}  // namespace TernaryCounter::Impl
