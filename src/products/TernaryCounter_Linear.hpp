// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The layer's products with its packed weights W[o,i] = scale[o] * t[o,i] (SPEC §1): forward
// y = x W^T and the input gradient grad_x = grad_out W. The codes are decoded on the fly (one
// 3-byte load per 4 weights); no float copy of W is ever made.
//
// Fixed arithmetic order (float32, round-to-nearest, no contraction except the written fma),
// the same on every backend and thread count:
//   forward:        acc = +0; for i = 0..in-1 ascending: acc = fma(x[m,i], float(t[o,i]), acc);
//                   y[m,o] = scale[o] * acc
//                   (x * t is exact, so the chain is a plain ascending sum of +-x; the row scale
//                   is applied once, after the sum).
//   backward_input: acc = +0; for o = 0..out-1 ascending:
//                       acc = fma(grad_out[m,o], scale[o] * float(t[o,i]), acc);
//                   grad_x[m,i] = acc
//                   (scale * t is exact: +-scale or +-0).
// With ProductOptions::precision = Precision::int8 both quantize their input to int8 and sum in
// integers instead (SPEC §6): other bits than fp32, the same on every backend.
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Precision.hpp"
#include "TernaryCounter_ViewTypes.hpp"

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace TernaryCounter {

/// y [M, out] = x [M, in] W^T on `space`, in the order documented above (or SPEC §6 in int8).
/// Throws std::invalid_argument (and writes nothing) on mismatched extents or a malformed state.
template <class ExecSpace>
void forward(const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
             const InputView<typename ExecSpace::memory_space>& x,
             const OutputView<typename ExecSpace::memory_space>& y,
             const ProductOptions& options = {});

/// grad_x [M, in] = grad_out [M, out] W on `space`, in the order documented above. Call it before
/// the step's update: it uses the weights as they are. Throws std::invalid_argument (and writes
/// nothing) on mismatched extents or a malformed state. In int8, options.seed seeds the
/// stochastic rounding of grad_out (pass the step's seed).
template <class ExecSpace>
void backward_input(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const InputView<typename ExecSpace::memory_space>& grad_out,
                    const OutputView<typename ExecSpace::memory_space>& grad_x,
                    const ProductOptions& options = {});

/// forward on the default execution space of the state's memory space.
template <class MemorySpace>
void forward(const PackedState<MemorySpace>& state,
             const std::type_identity_t<InputView<MemorySpace>>& x,
             const std::type_identity_t<OutputView<MemorySpace>>& y,
             const ProductOptions& options = {}) {
  forward(typename MemorySpace::execution_space{}, state, x, y, options);
}

/// backward_input on the default execution space of the state's memory space.
template <class MemorySpace>
void backward_input(const PackedState<MemorySpace>& state,
                    const std::type_identity_t<InputView<MemorySpace>>& grad_out,
                    const std::type_identity_t<OutputView<MemorySpace>>& grad_x,
                    const ProductOptions& options = {}) {
  backward_input(typename MemorySpace::execution_space{}, state, grad_out, grad_x, options);
}

namespace Impl {
/// forward and backward_input of a 16-bit input T with a float or T output U (below).
template <class ExecSpace, class T, class U>
void forward_half(const ExecSpace& space,
                  const PackedState<typename ExecSpace::memory_space>& state,
                  const InputView<typename ExecSpace::memory_space, T>& x,
                  const OutputView<typename ExecSpace::memory_space, U>& y,
                  const ProductOptions& options);
template <class ExecSpace, class T, class U>
void backward_input_half(const ExecSpace& space,
                         const PackedState<typename ExecSpace::memory_space>& state,
                         const InputView<typename ExecSpace::memory_space, T>& grad_out,
                         const OutputView<typename ExecSpace::memory_space, U>& grad_x,
                         const ProductOptions& options);
}  // namespace Impl

/// forward and backward_input of bfloat16 or float16 inputs (x, grad_out) with a float output
/// or one of the input's type: the results of the input widened to float (exact: SPEC's bits
/// of the widened input), written as float or rounded to the input's type (to nearest, ties to
/// even). The same checks, errors and asynchrony as the float calls. int8 quantizes the 16-bit
/// input as it reads it and rounds into a 16-bit output as it stores; FP32 widens into scratch.
template <class ExecSpace, class In, class Out>
requires Impl::HalfProductViews<In, Out, typename ExecSpace::memory_space>
void forward(const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
             const In& x, const Out& y, const ProductOptions& options = {}) {
  using Mem = typename ExecSpace::memory_space;
  using T = typename In::non_const_value_type;
  using U = typename Out::value_type;
  Impl::forward_half<ExecSpace, T, U>(space, state, InputView<Mem, T>(x), OutputView<Mem, U>(y),
                                      options);
}

template <class ExecSpace, class In, class Out>
requires Impl::HalfProductViews<In, Out, typename ExecSpace::memory_space>
void backward_input(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state, const In& grad_out,
                    const Out& grad_x, const ProductOptions& options = {}) {
  using Mem = typename ExecSpace::memory_space;
  using T = typename In::non_const_value_type;
  using U = typename Out::value_type;
  Impl::backward_input_half<ExecSpace, T, U>(space, state, InputView<Mem, T>(grad_out),
                                             OutputView<Mem, U>(grad_x), options);
}

/// The 16-bit calls on the default execution space of the state's memory space.
template <class MemorySpace, class In, class Out>
requires Impl::HalfProductViews<In, Out, MemorySpace>
void forward(const PackedState<MemorySpace>& state, const In& x, const Out& y,
             const ProductOptions& options = {}) {
  forward(typename MemorySpace::execution_space{}, state, x, y, options);
}

template <class MemorySpace, class In, class Out>
requires Impl::HalfProductViews<In, Out, MemorySpace>
void backward_input(const PackedState<MemorySpace>& state, const In& grad_out, const Out& grad_x,
                    const ProductOptions& options = {}) {
  backward_input(typename MemorySpace::execution_space{}, state, grad_out, grad_x, options);
}

/// Any other View types (e.g. LayoutLeft): a compile error per argument saying what is expected.
#define TERNARYCOUNTER_PRODUCT_CHECKS(call, in_name, out_name, Mem)        \
  static_assert(!Impl::NotInputMatrix<In, Mem>,                            \
                TERNARYCOUNTER_MATRIX_RULE(call, in_name, "const float")); \
  static_assert(!Impl::NotOutputMatrix<Out, Mem>,                          \
                TERNARYCOUNTER_MATRIX_RULE(call, out_name, "float"))
template <class ExecSpace, class In, class Out>
void forward(const ExecSpace&, const PackedState<typename ExecSpace::memory_space>&, const In&,
             const Out&) requires Impl::NotProductViews<In, Out, typename ExecSpace::memory_space> {
  TERNARYCOUNTER_PRODUCT_CHECKS("forward", "x", "y", typename ExecSpace::memory_space);
}
template <class MemorySpace, class In, class Out>
void forward(const PackedState<MemorySpace>&, const In&,
             const Out&) requires Impl::NotProductViews<In, Out, MemorySpace> {
  TERNARYCOUNTER_PRODUCT_CHECKS("forward", "x", "y", MemorySpace);
}
template <class ExecSpace, class In, class Out>
void backward_input(
    const ExecSpace&, const PackedState<typename ExecSpace::memory_space>&, const In&,
    const Out&) requires Impl::NotProductViews<In, Out, typename ExecSpace::memory_space> {
  TERNARYCOUNTER_PRODUCT_CHECKS("backward_input", "grad_out", "grad_x",
                                typename ExecSpace::memory_space);
}
template <class MemorySpace, class In, class Out>
void backward_input(const PackedState<MemorySpace>&, const In&,
                    const Out&) requires Impl::NotProductViews<In, Out, MemorySpace> {
  TERNARYCOUNTER_PRODUCT_CHECKS("backward_input", "grad_out", "grad_x", MemorySpace);
}
#undef TERNARYCOUNTER_PRODUCT_CHECKS

}  // namespace TernaryCounter
