// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_ScratchMemory.hpp"

#include "engines/TernaryCounter_ExecutionSpaces.hpp"
#include "engines/TernaryCounter_ScratchArena.hpp"

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace TernaryCounter {

template <class MemorySpace>
std::int64_t scratch_bytes_held() {
  std::int64_t total = 0;
#define TERNARYCOUNTER_ADD_ARENAS(SPACE)                                                   \
  if constexpr (std::is_same_v<typename SPACE::memory_space, MemorySpace>) {               \
    total += std::int64_t(Impl::ScratchArena<SPACE, Impl::Int8Scratch>::bytes_held() +     \
                          Impl::ScratchArena<SPACE, Impl::WideningScratch>::bytes_held()); \
  }
  TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_ADD_ARENAS)
#undef TERNARYCOUNTER_ADD_ARENAS
  return total;
}

// Once per memory space of the enabled execution spaces (Serial and OpenMP share the host's).
template std::int64_t scratch_bytes_held<Kokkos::HostSpace>();
#ifdef KOKKOS_ENABLE_CUDA
template std::int64_t scratch_bytes_held<Kokkos::Cuda::memory_space>();
#endif
#ifdef KOKKOS_ENABLE_HIP
template std::int64_t scratch_bytes_held<Kokkos::HIP::memory_space>();
#endif

}  // namespace TernaryCounter
