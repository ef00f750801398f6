// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What each backend can run, in one place: the dispatchers choose their engines from these
// capabilities (fixed when the library is compiled) and from host_isa() (the host CPU's, read
// once at run time). Adding a backend or a vendor engine starts here.
#pragma once

#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_Tiling.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace TernaryCounter::Impl {

/// The vendor int8 GEMMs the library can call (int8 x int8 -> int32, both operands K-major).
enum class VendorInt8Gemm { none, cublas };

/// The most samples whose gradient FewSampleGradientRows forms in the row update (4 words of
/// 4 int8 per column): past it, the work per weight outgrows the bytes the update streams, and
/// the GEMM (IntegerSumRows) is faster.
inline constexpr std::int64_t few_sample_update_max = 16;

template <class ExecSpace>
struct Capabilities {
  /// Host threads: the integer engines are the host ISA's (host_isa(): AVX2, VNNI, AMX or
  /// portable), and the quantized x of the weight gradient is [M, in] (else transposed, [in, Mp]).
  static constexpr bool host = std::is_same_v<typename ExecSpace::memory_space, Kokkos::HostSpace>;
  /// The vendor int8 GEMM of this backend.
  static constexpr VendorInt8Gemm vendor_int8 =
#ifdef KOKKOS_ENABLE_CUDA
      std::is_same_v<ExecSpace, Kokkos::Cuda> ? VendorInt8Gemm::cublas :
#endif
                                              VendorInt8Gemm::none;
  /// FP32 products of up to 16 samples by teams per 32 output columns (32-wide warps).
  static constexpr bool few_sample_fp32 = Tiling<ExecSpace>::few_sample;
  /// FP32 products of a few samples by the small-batch kernel.
  static constexpr bool small_batch_fp32 = Tiling<ExecSpace>::small_batch;
  /// int8 forward of a few samples by the GPU kernel that reads each code once.
  static constexpr bool few_sample_int8_forward = !host;
  /// int8 backward_input and update_from_io of a few samples by kernels that read each code
  /// once (measured on CUDA only; HIP runs the general engines).
  static constexpr bool few_sample_int8_gpu = vendor_int8 != VendorInt8Gemm::none;
  /// int8 forward and backward_input past the few-sample kernels on the tensor-core engine
  /// (TensorCoreInt8Product: 8-bit MMAs, codes decoded into shared memory, the epilogue as it
  /// stores): CUDA built for sm_80 or later.
  static constexpr bool tensor_core_int8 =
#if defined(KOKKOS_ENABLE_CUDA) && (defined(KOKKOS_ARCH_AMPERE) || defined(KOKKOS_ARCH_ADA89) || \
                                    defined(KOKKOS_ARCH_HOPPER) || defined(KOKKOS_ARCH_BLACKWELL))
      std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
      false;
#endif
  /// FP32 update_from_io of a few samples by the row update alone, which forms the gradient
  /// (CUDA only, like the int8 one: HIP is compiled, never run).
  static constexpr bool few_sample_fp32_update = few_sample_int8_gpu;
};

/// The GPUs' int8 products past the few-sample kernels, where both serve: the vendor GEMM over
/// blocks of decoded weights, or the tensor-core engine (TERNARYCOUNTER_GPU_INT8_GEMM=tensor_cores,
/// read once per process). The vendor GEMM is the default: on one H100 it is the faster at every
/// measured shape (docs/PERFORMANCE.md, "The tensor-core engine").
enum class GpuInt8Gemm { vendor, tensor_cores };

inline GpuInt8Gemm& gpu_int8_gemm_decision() {
  static GpuInt8Gemm choice = [] {
    const char* named = std::getenv("TERNARYCOUNTER_GPU_INT8_GEMM");
    return named != nullptr && std::strcmp(named, "tensor_cores") == 0 ? GpuInt8Gemm::tensor_cores
                                                                       : GpuInt8Gemm::vendor;
  }();
  return choice;
}

inline GpuInt8Gemm gpu_int8_gemm() {
  return gpu_int8_gemm_decision();
}

/// Tests: chooses as TERNARYCOUNTER_GPU_INT8_GEMM would. Not while a kernel runs.
inline void force_gpu_int8_gemm(GpuInt8Gemm choice) {
  gpu_int8_gemm_decision() = choice;
}

/// Whether ExecSpace runs on the host (its engines are chosen by host_isa()).
template <class ExecSpace>
constexpr bool host_space = Capabilities<ExecSpace>::host;

/// Whether ExecSpace has a vendor int8 GEMM.
template <class ExecSpace>
constexpr bool vendor_gemm_space = Capabilities<ExecSpace>::vendor_int8 != VendorInt8Gemm::none;

}  // namespace TernaryCounter::Impl
