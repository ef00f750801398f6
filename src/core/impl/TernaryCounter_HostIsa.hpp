// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host kernels at full speed in a build without architecture flags. Many installed Kokkos are
// configured for baseline x86-64 (no Kokkos_ARCH_*), and an application that links one compiles
// our kernels the same way: fma becomes a call into libm and nothing vectorizes (update_from_io
// runs tens of times slower). So on x86-64, when the translation unit is not already compiled for
// AVX2 + FMA, each host team kernel also has a copy compiled for them, chosen per team at run time;
// the tile GEMMs have a third, for AVX-512, with micro-tiles sized for its registers.
//
// The copy is one function with everything it calls inlined into it (flatten), so no inline
// function is ever emitted out of line with AVX2 instructions where a baseline caller could link
// to it. Both copies run the same IEEE operations in the same order (fma is exact in both; the
// determinism flags forbid contraction): the same bits on every CPU.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <cstring>

#if !defined(TERNARYCOUNTER_HOST_ISA_DISPATCH)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(__HIPCC__) && !defined(__SYCL_DEVICE_ONLY__) &&                                    \
    !(defined(__AVX2__) && defined(__FMA__))
#define TERNARYCOUNTER_HOST_ISA_DISPATCH 1
#else
#define TERNARYCOUNTER_HOST_ISA_DISPATCH 0
#endif
#endif

namespace TernaryCounter::Impl {

#if TERNARYCOUNTER_HOST_ISA_DISPATCH
/// The copy that TERNARYCOUNTER_HOST_ISA asks for ("baseline" or "avx2"; the tests use it to run
/// every copy on one CPU), or nullptr.
inline const char* host_isa_forced() {
  static const char* forced = std::getenv("TERNARYCOUNTER_HOST_ISA");
  return forced;
}

/// True when the CPU runs AVX2 and FMA and TERNARYCOUNTER_HOST_ISA is not "baseline".
inline bool host_runs_avx2_fma() {
  static const bool runs = [] {
    const char* forced = host_isa_forced();
    if (forced != nullptr && std::strcmp(forced, "baseline") == 0) return false;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return runs;
}

/// True when the CPU also runs AVX-512 (F, VL, BW, DQ) and TERNARYCOUNTER_HOST_ISA names no
/// copy: the tile GEMMs then run with micro-tiles for its 32 vector registers, as a build for
/// that CPU does (the AVX2 copy's micro-tiles leave half of those registers unused).
inline bool host_runs_avx512() {
  static const bool runs = [] {
    return host_isa_forced() == nullptr && host_runs_avx2_fma() &&
           __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  }();
  return runs;
}

// Instruction sets only: GCC inlines nothing across a different arch= or tune=, so
// target("arch=haswell") left the copy calling the baseline functions (update_from_io 10 s
// instead of 0.1 s at 512 x 2048 x 2048). The copy is tuned generically, as the build is.
template <class Kernel, class Member>
__attribute__((target("avx2,fma"), flatten)) void team_body_avx2_fma(const Kernel& kernel,
                                                                     const Member& team) {
  kernel.team_body(team);
}
template <class Kernel, class Member>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"), flatten)) void
team_body_avx512(const Kernel& kernel, const Member& team) {
  kernel.team_body(team);
}
#endif

/// kernel.team_body(team), in its AVX2 + FMA copy where the CPU has both (see above), or in its
/// AVX-512 copy for kernels that are launched only where host_runs_avx512() (Avx512).
template <bool Avx512 = false, class Kernel, class Member>
KOKKOS_FORCEINLINE_FUNCTION void run_team_body(const Kernel& kernel, const Member& team) {
#if TERNARYCOUNTER_HOST_ISA_DISPATCH
  if constexpr (Avx512) {
    team_body_avx512(kernel, team);
    return;
  }
  if (host_runs_avx2_fma()) {
    team_body_avx2_fma(kernel, team);
    return;
  }
#endif
  kernel.team_body(team);
}

}  // namespace TernaryCounter::Impl
