// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The int8 weight gradient's engine (SPEC §6): the one choice that update_from_io and the
// data-parallel phases share, from the backend's capabilities (Capabilities.hpp) and the host's
// ISA. G = gq xq^T of a block of rows, int32, exact in any order.
#pragma once

#include "engines/TernaryCounter_Capabilities.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_IntegerProduct.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"
#include "engines/vendor/TernaryCounter_VendorInt8Product.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

enum class Int8GradientEngine {
  host_integer,     ///< the host ISA's integer engine (AVX2, VNNI, AMX or portable), epilogue fused
  few_sample_rows,  ///< the row update forms G from the operands (no G in memory; CUDA, M <= 16)
  vendor_gemm,      ///< the vendor GEMM writes int32 G; the caller consumes it
  portable,         ///< the portable integer engine, epilogue fused
};

/// The engine of an int8 weight gradient over M samples; `row_update_can_form` when the caller
/// can let the row update form G itself (update_from_io; not the data-parallel phases, whose G
/// is summed across ranks first).
template <class ExecSpace>
Int8GradientEngine int8_gradient_engine(std::int64_t M, bool row_update_can_form) {
  using Caps = Capabilities<ExecSpace>;
  if constexpr (Caps::host) {
    return Int8GradientEngine::host_integer;
  } else if constexpr (Caps::vendor_int8 != VendorInt8Gemm::none) {
    if (row_update_can_form && Caps::few_sample_int8_gpu && M <= few_sample_update_max) {
      return Int8GradientEngine::few_sample_rows;
    }
    return Int8GradientEngine::vendor_gemm;
  } else {
    return Int8GradientEngine::portable;
  }
}

/// G of the rows `part` (gq's rows, with their scales and sums) by xq, n x in, on `engine`
/// (host_integer, vendor_gemm or portable). Returns true when G is left as int32 in `target`
/// (row stride target_stride, in int32) for the caller; false when `epilogue` consumed it. The
/// vendor GEMM falls back to the portable engine where it declines a shape.
template <class ExecSpace, class Epilogue>
bool int8_gradient_product(const ExecSpace& space, Int8GradientEngine engine,
                           const QuantizedRows<typename ExecSpace::memory_space>& part,
                           const Int8Matrix<typename ExecSpace::memory_space>& xq, int C,
                           std::int64_t n, std::int64_t in, const Epilogue& epilogue, float* target,
                           std::int64_t target_stride, const char* label) {
  using Mem = typename ExecSpace::memory_space;
  if constexpr (host_space<ExecSpace>) {
    run_integer_product(space, host_isa().int8_engine, part, Int8ByDepth<Mem>{xq}, C, n, in,
                        epilogue, label);
    return false;
  } else {
    const std::int64_t depth = part.q.extent(1);
    if (engine == Int8GradientEngine::vendor_gemm &&
        vendor_int8_gemm(space, n, in, depth, part.q.data(), depth, xq.data(), depth, target,
                         target_stride)) {
      return true;
    }
    PortableIntegerProduct<ExecSpace, Int8ByColumn<Mem>, Epilogue>{
        Int8Rows<Mem>{part.q}, Int8ByColumn<Mem>{xq}, epilogue, n, in, depth / 4}
        .run(space, label);
    return false;
  }
}

}  // namespace TernaryCounter::Impl
