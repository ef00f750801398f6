// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// cuBLAS' int8 GEMM (tensor cores, int32 sums), the CUDA engine of the integer products: an
// integer sum is exact in any order, so whatever kernel cuBLAS picks gives the portable engine's
// bits (see TernaryCounter_IntegerOperands.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#ifdef KOKKOS_ENABLE_CUDA
namespace TernaryCounter::Impl {

/// c [r, c] = sum over k < depth of a [r, k] * b [c, k], enqueued on `space`: a [rows, lda] and
/// b [cols, ldb] int8, depth contiguous; c int32, row-major with row stride ldc. Returns false,
/// having enqueued nothing, where cuBLAS cannot run it (a size past int, an unsupported stride):
/// the caller then runs the portable engine.
bool cublas_int8_gemm(const Kokkos::Cuda& space, std::int64_t rows, std::int64_t cols,
                      std::int64_t depth, const std::int8_t* a, std::int64_t lda,
                      const std::int8_t* b, std::int64_t ldb, std::int32_t* c, std::int64_t ldc);

}  // namespace TernaryCounter::Impl
#endif
