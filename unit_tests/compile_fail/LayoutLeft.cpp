// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Must not compile: LayoutLeft Views (Kokkos' default on GPUs) passed to the update calls, the
// layer's products and TernaryLinear's members. The test that builds it expects the library's
// readable static_assert messages, one per argument.
#include <TernaryCounter.hpp>

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using Left = Kokkos::View<float**, Kokkos::LayoutLeft, Mem>;
using Right = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;

void calls(const TernaryCounter::PackedState<Mem>& state, const Left& left, const Right& right) {
  const TernaryCounter::UpdateParams p;
  const Kokkos::DefaultExecutionSpace space;
  TernaryCounter::update(space, state, left, p);
  TernaryCounter::update(state, left, p);
  TernaryCounter::update_from_io(space, state, right, left, p);
  TernaryCounter::update_from_io(state, left, right, p);
  TernaryCounter::update_from_io(space, state, right, right, p, left);
  TernaryCounter::forward(space, state, left, right);
  TernaryCounter::forward(state, right, left);
  TernaryCounter::backward_input(space, state, left, right);
  TernaryCounter::backward_input(state, right, left);
}

void members(TernaryCounter::TernaryLinear<>& layer, const Left& left, const Right& right) {
  layer.forward(left, right);
  layer.backward_input(right, left);
  layer.update_from_io(right, left);
}
