// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_Linear.hpp"

#include "core/impl/TernaryCounter_ExecutionSpaces.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>
#include "core/impl/TernaryCounter_Validation.hpp"
#include "products/impl/TernaryCounter_FewSampleProduct.hpp"
#include "products/impl/TernaryCounter_IntegerPath.hpp"
#include "products/impl/TernaryCounter_SmallBatchProduct.hpp"
#include "products/impl/TernaryCounter_TileGemm.hpp"
#include "products/impl/TernaryCounter_TileOperands.hpp"

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace TernaryCounter {

namespace Impl {

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

/// forward or backward_input: on GPUs, products of up to 16 samples over aligned rows by teams
/// per 32 output columns (not on HIP: Tiling) and other products of a few samples by the
/// small-batch kernel; else by the tile engine. Each kernel launches under its own label,
/// "<call>::<kernel>", so Kokkos Tools tell them apart.
template <class ExecSpace, class Product>
void run_product(const ExecSpace& space, const Product& product, const std::string& call) {
  if constexpr (Tiling<ExecSpace>::few_sample) {
    if (run_few_sample_product(space, product, (call + "::few_sample").c_str())) return;
  }
  if constexpr (Tiling<ExecSpace>::small_batch) {
    using Small = SmallBatchProduct<ExecSpace, Product>;
    if (Small::serves(product.rows())) {
      Small{product}.run(space, (call + "::small_batch").c_str());
      return;
    }
  }
  run_tile_gemm(space, product, (call + "::tiles").c_str());
}

template <class MemorySpace>
void validate_layer(const char* call, const PackedState<MemorySpace>& state) {
  if (state.codes.extent(1) % bytes_per_group != 0) {
    std::ostringstream msg;
    msg << "TernaryCounter::" << call << ": the state's codes have " << state.codes.extent(1)
        << " bytes per row, not a multiple of 3";
    throw std::invalid_argument(msg.str());
  }
  if (state.C < min_counter_depth || state.C > max_counter_depth) {
    std::ostringstream msg;
    msg << "TernaryCounter::" << call << ": state.C = " << state.C << " must be in [2, 11]";
    throw std::invalid_argument(msg.str());
  }
  require_extent(call, "state.scale.extent(0)", state.scale.extent(0), "the state's out",
                 state.out());
}

}  // namespace Impl

template <class ExecSpace>
void forward(const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
             const InputView<typename ExecSpace::memory_space>& x,
             const OutputView<typename ExecSpace::memory_space>& y, const ProductOptions& options) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::forward");
  Impl::validate_layer("forward", state);
  Impl::require_extent("forward", "x.extent(1)", x.extent(1), "the state's in", state.in());
  Impl::require_extent("forward", "y.extent(1)", y.extent(1), "the state's out", state.out());
  Impl::require_extent("forward", "y.extent(0) (M)", y.extent(0), "x.extent(0) (M)", x.extent(0));
  if (options.precision == Precision::int8) {
    Impl::forward_int8(space, state, x, y);
    return;
  }
  using Mem = typename ExecSpace::memory_space;
  const Impl::ForwardProduct<Mem> product{
      Impl::MatrixOperand<Mem, true>(x, 0, state.in(), x.extent(0)),
      Impl::TernaryOperand<Mem, true>(state.codes, state.scale, state.C), y};
  Impl::run_product(space, product, "TernaryCounter::forward");
}

template <class ExecSpace>
void backward_input(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const InputView<typename ExecSpace::memory_space>& grad_out,
                    const OutputView<typename ExecSpace::memory_space>& grad_x,
                    const ProductOptions& options) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::backward_input");
  Impl::validate_layer("backward_input", state);
  Impl::require_extent("backward_input", "grad_out.extent(1)", grad_out.extent(1),
                       "the state's out", state.out());
  Impl::require_extent("backward_input", "grad_x.extent(1)", grad_x.extent(1), "the state's in",
                       state.in());
  Impl::require_extent("backward_input", "grad_x.extent(0) (M)", grad_x.extent(0),
                       "grad_out.extent(0) (M)", grad_out.extent(0));
  if (options.precision == Precision::int8) {
    Impl::backward_input_int8(space, state, grad_out, grad_x, options.seed, options.sample_offset);
    return;
  }
  using Mem = typename ExecSpace::memory_space;
  const Impl::BackwardInputProduct<Mem> product{
      Impl::MatrixOperand<Mem, true>(grad_out, 0, state.out(), grad_out.extent(0)),
      Impl::TernaryOperand<Mem, false>(state.codes, state.scale, state.C), grad_x};
  Impl::run_product(space, product, "TernaryCounter::backward_input");
}

#define TERNARYCOUNTER_INSTANTIATE_LINEAR(SPACE)                                               \
  template void forward<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,          \
                               const InputView<SPACE::memory_space>&,                          \
                               const OutputView<SPACE::memory_space>&, const ProductOptions&); \
  template void backward_input<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,   \
                                      const InputView<SPACE::memory_space>&,                   \
                                      const OutputView<SPACE::memory_space>&,                  \
                                      const ProductOptions&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_LINEAR)

}  // namespace TernaryCounter
