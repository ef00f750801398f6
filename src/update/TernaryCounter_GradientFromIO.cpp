// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_GradientFromIO.hpp"

#include "core/TernaryCounter_Validation.hpp"
#include "engines/TernaryCounter_ExecutionSpaces.hpp"
#include "update/impl/TernaryCounter_UpdateDispatch.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>

namespace TernaryCounter {

template <class ExecSpace>
void gradient_from_io(const ExecSpace& space, const InputView<typename ExecSpace::memory_space>& x,
                      const InputView<typename ExecSpace::memory_space>& grad_out,
                      const OutputView<typename ExecSpace::memory_space>& grad_w, bool accumulate) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::gradient_from_io");
  const char* call = "gradient_from_io";
  Impl::require_extent(call, "grad_out.extent(0) (M)", grad_out.extent(0), "x.extent(0) (M)",
                       x.extent(0));
  Impl::require_extent(call, "grad_w.extent(0)", grad_w.extent(0), "grad_out.extent(1) (out)",
                       grad_out.extent(1));
  Impl::require_extent(call, "grad_w.extent(1)", grad_w.extent(1), "x.extent(1) (in)", x.extent(1));
  Impl::dispatch_gradient_from_io(space, x, grad_out, grad_w, accumulate);
}

#define TERNARYCOUNTER_INSTANTIATE_GRADIENT_FROM_IO(SPACE)                                   \
  template void gradient_from_io<SPACE>(const SPACE&, const InputView<SPACE::memory_space>&, \
                                        const InputView<SPACE::memory_space>&,               \
                                        const OutputView<SPACE::memory_space>&, bool);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_GRADIENT_FROM_IO)

}  // namespace TernaryCounter
