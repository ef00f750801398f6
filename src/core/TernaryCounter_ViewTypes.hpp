// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The View types of the public calls, and compile-time checks of the View types the public calls
// take: float, bfloat16 or float16 matrices [rows, cols] in LayoutRight (row-major, SPEC §5) in
// the execution space's memory space. A LayoutLeft View is Kokkos' default layout on CUDA and HIP,
// so it is the first View many users pass; the catch-all overloads built on these turn the
// compiler's list of candidates into one readable message.
#pragma once

#include "TernaryCounter_HalfFloats.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter {

/// The calls' input matrices: x, grad_out, grad_w [rows, cols], row-major; T is float, or
/// bfloat16 / float16 for x and grad_out.
template <class MemorySpace, class T = float>
using InputView = Kokkos::View<const T**, Kokkos::LayoutRight, MemorySpace>;

/// The products' output matrices: y, grad_x [rows, cols], row-major; T is float, or the 16-bit
/// type of the product's input.
template <class MemorySpace, class T = float>
using OutputView = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>;

/// Where the asynchronous calls write how many rows they left untouched (a non-finite gradient).
template <class MemorySpace>
using SkippedRowsView = Kokkos::View<std::int64_t, MemorySpace>;

}  // namespace TernaryCounter

namespace TernaryCounter::Impl {

/// A 16-bit input matrix: a View<const T**, LayoutRight, MemorySpace> for T bfloat16 or float16.
template <class View, class MemorySpace>
concept HalfInputMatrix =
    Kokkos::is_view_v<View> && HalfFloat<typename View::non_const_value_type> &&
    std::is_convertible_v<const View&, InputView<MemorySpace, typename View::non_const_value_type>>;

/// x and grad_out of one 16-bit type.
template <class X, class GradOut, class MemorySpace>
concept HalfInputPair = HalfInputMatrix<X, MemorySpace> && HalfInputMatrix<GradOut, MemorySpace> &&
    std::is_same_v<typename X::non_const_value_type, typename GradOut::non_const_value_type>;

/// A 16-bit input and its output: float or the input's type.
template <class In, class Out, class MemorySpace>
concept HalfProductViews = HalfInputMatrix<In, MemorySpace> && Kokkos::is_view_v<Out> &&
    (std::is_same_v<typename Out::value_type, float> ||
     std::is_same_v<typename Out::value_type, typename In::non_const_value_type>)&&std::
        is_convertible_v<const Out&, OutputView<MemorySpace, typename Out::value_type>>;

/// A View the call cannot take where it expects View<const float**, LayoutRight, MemorySpace>
/// (or its 16-bit variants).
template <class View, class MemorySpace>
concept NotInputMatrix =
    Kokkos::is_view_v<View> &&
    !std::is_convertible_v<const View&,
                           Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>> &&
    !HalfInputMatrix<View, MemorySpace>;

/// A View the call cannot take where it expects View<float**, LayoutRight, MemorySpace>.
template <class View, class MemorySpace>
concept NotOutputMatrix = Kokkos::is_view_v<View> &&
    !std::is_convertible_v<const View&, Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>>;

/// Arguments of forward/backward_input (an input matrix and an output matrix) of which one is
/// wrong.
template <class In, class Out, class MemorySpace>
concept NotProductViews =
    (NotInputMatrix<In, MemorySpace> ||
     NotOutputMatrix<Out, MemorySpace>)&&!HalfProductViews<In, Out, MemorySpace>;

template <class...>
inline constexpr bool dependent_false = false;

}  // namespace TernaryCounter::Impl

/// The text of the compile errors (one place, so every call says the same).
#define TERNARYCOUNTER_MATRIX_RULE(call, arg, type)                                            \
  "TernaryCounter::" call ": " arg " must be a Kokkos::View<" type                             \
  "**, Kokkos::LayoutRight, MemorySpace> in the execution space's memory space. A LayoutLeft " \
  "View (Kokkos' default on CUDA and HIP) must first be deep_copy'd into a LayoutRight one; "  \
  "see 'Views' in the README."
