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

// Host code that may ask the CPU what it runs (the int8 engines choose at run time in every
// build).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(__HIPCC__)
#define TERNARYCOUNTER_HOST_X86 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define TERNARYCOUNTER_HOST_X86 0
#endif

namespace TernaryCounter::Impl {

/// The hosts' engines of the integer products (HostInt8Gemm.hpp).
enum class HostInt8Engine { portable, avx2, vnni, amx };

/// The engine's name, as the products' labels and the perf driver print it.
inline const char* host_int8_engine_name(HostInt8Engine engine) {
  switch (engine) {
    case HostInt8Engine::avx2:
      return "avx2";
    case HostInt8Engine::vnni:
      return "vnni";
    case HostInt8Engine::amx:
      return "amx";
    default:
      return "portable";
  }
}

/// What the host kernels run on this CPU, decided once per process (host_isa()).
/// TERNARYCOUNTER_HOST_ISA restricts it so that the tests run every copy on one CPU: "baseline"
/// (no AVX2 copies, the portable int8 engine), "avx2" (AVX2 copies, no AVX-512, the AVX2 int8
/// engine), "avx512" (VNNI but not AMX; the FP32 tiles keep the AVX2 micro-tiles).
struct HostIsa {
  bool avx2_fma = false;         ///< the team kernels' AVX2 + FMA copies
  bool avx512_tiles = false;     ///< the FP32 tile GEMMs' AVX-512 micro-tiles
  bool avx512_quantize = false;  ///< the int8 host quantizers' AVX-512 copies
  bool vbmi = false;             ///< packed codes decoded in vector registers (vpermb)
  HostInt8Engine int8_engine = HostInt8Engine::portable;
};

#if TERNARYCOUNTER_HOST_X86
/// AMX-TILE and AMX-INT8 in CPUID leaf 7 (EDX bits 24 and 25); not every compiler's
/// __builtin_cpu_supports knows them.
inline bool cpu_has_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx >> 24 & 1u) != 0 && (edx >> 25 & 1u) != 0;
}

/// Whether the kernel lets this process use the AMX tile data (Linux asks for it once).
inline bool amx_permitted() {
  static const bool permitted = [] {
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
  }();
  return permitted;
}
#endif

/// This CPU's HostIsa under TERNARYCOUNTER_HOST_ISA = `forced` (nullptr: unset).
inline HostIsa detect_host_isa([[maybe_unused]] const char* forced) {
  HostIsa isa;
#if TERNARYCOUNTER_HOST_X86
  const bool named_avx512 = forced != nullptr && std::strcmp(forced, "avx512") == 0;
  const bool named_baseline = forced != nullptr && std::strcmp(forced, "baseline") == 0;
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw");
  isa.avx2_fma = !named_baseline && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  isa.avx512_tiles =
      forced == nullptr && isa.avx2_fma && avx512 && __builtin_cpu_supports("avx512dq");
  isa.avx512_quantize = (forced == nullptr || named_avx512) && avx512;
  isa.vbmi = __builtin_cpu_supports("avx512vbmi");
  const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vnni");
  if (forced == nullptr) {
    const bool amx = vnni && cpu_has_amx_int8() && amx_permitted();
    isa.int8_engine = amx            ? HostInt8Engine::amx
                      : vnni         ? HostInt8Engine::vnni
                      : isa.avx2_fma ? HostInt8Engine::avx2
                                     : HostInt8Engine::portable;
  } else {
    isa.int8_engine = named_avx512 && vnni ? HostInt8Engine::vnni
                      : isa.avx2_fma       ? HostInt8Engine::avx2
                                           : HostInt8Engine::portable;
  }
#endif
  return isa;
}

inline HostIsa& host_isa_decision() {
  static HostIsa isa = detect_host_isa(std::getenv("TERNARYCOUNTER_HOST_ISA"));
  return isa;
}

/// The host kernels' instruction sets: read once per process, the one place that does.
inline const HostIsa& host_isa() {
  return host_isa_decision();
}

/// Tests: decides again as if TERNARYCOUNTER_HOST_ISA were `forced` (nullptr: unset). Not while
/// a kernel runs.
inline void force_host_isa(const char* forced) {
  host_isa_decision() = detect_host_isa(forced);
}

#if TERNARYCOUNTER_HOST_ISA_DISPATCH
/// True when the CPU runs AVX2 and FMA and TERNARYCOUNTER_HOST_ISA is not "baseline".
inline bool host_runs_avx2_fma() {
  return host_isa().avx2_fma;
}

/// True when the CPU also runs AVX-512 (F, VL, BW, DQ) and TERNARYCOUNTER_HOST_ISA names no
/// copy: the tile GEMMs then run with micro-tiles for its 32 vector registers, as a build for
/// that CPU does (the AVX2 copy's micro-tiles leave half of those registers unused).
inline bool host_runs_avx512() {
  return host_isa().avx512_tiles;
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
