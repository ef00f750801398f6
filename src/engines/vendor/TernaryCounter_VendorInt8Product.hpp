// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer products on a vendor's int8 GEMM (CUDA: cuBLAS), W decoded to int8 one bounded
// block at a time; elsewhere none runs (vendor_int8_gemm answers false).
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_ViewTypes.hpp"
#include "engines/TernaryCounter_Capabilities.hpp"
#include "engines/TernaryCounter_DecodedBlocks.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"
#include "engines/TernaryCounter_ScratchArena.hpp"
#include "engines/vendor/TernaryCounter_CublasInt8.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace TernaryCounter::Impl {

/// The int32 sums of one block of a 16-bit output, at most (a float output holds its sums in
/// its own elements).
inline constexpr std::int64_t sums_block_bytes = std::int64_t(64) << 20;

/// Output columns per GEMM of vendor_product: a block of decoded weights, and for a 16-bit
/// output U at most sums_block_bytes of int32 sums over the M rows.
template <class U>
std::int64_t vendor_block_columns(std::int64_t M, std::int64_t cols, std::int64_t depth) {
  const std::int64_t block = decoded_block_rows(cols, depth);
  if constexpr (std::is_same_v<U, float>) {
    return block;
  } else {
    const std::int64_t fit = sums_block_bytes / std::int64_t(sizeof(std::int32_t)) /
                             std::max<std::int64_t>(M, 1) / decoded_tile * decoded_tile;
    return std::min(block, std::max(decoded_tile, fit));
  }
}

/// The arena bytes of vendor_product: a block of decoded weights and, for a 16-bit output U,
/// the block's int32 sums.
template <class U>
std::size_t vendor_product_scratch(std::int64_t M, std::int64_t cols, std::int64_t depth) {
  const std::int64_t block = vendor_block_columns<U>(M, cols, depth);
  return scratch_bytes<std::int8_t>(block * depth) +
         (std::is_same_v<U, float> ? 0 : scratch_bytes<float>(M * block));
}

/// The vendor's int8 GEMM c = a b^T into an output's memory (see cublas_int8_gemm): none here.
template <class ExecSpace>
bool vendor_int8_gemm(const ExecSpace&, std::int64_t, std::int64_t, std::int64_t,
                      const std::int8_t*, std::int64_t, const std::int8_t*, std::int64_t, float*,
                      std::int64_t) {
  return false;
}
#ifdef KOKKOS_ENABLE_CUDA
inline bool vendor_int8_gemm(const Kokkos::Cuda& space, std::int64_t rows, std::int64_t cols,
                             std::int64_t depth, const std::int8_t* a, std::int64_t lda,
                             const std::int8_t* b, std::int64_t ldb, float* c, std::int64_t ldc) {
  return cublas_int8_gemm(space, rows, cols, depth, a, lda, b, ldb,
                          reinterpret_cast<std::int32_t*>(c), ldc);
}
#endif

/// out [M, cols] = a W' on the vendor GEMM, W' decoded one block at a time by Decode (forward:
/// rows of W, backward_input: columns of W), then the epilogue: in place in a float output after
/// the last block; for a 16-bit output, block by block from the block's int32 sums in the arena.
/// False where the GEMM cannot run. The arena holds vendor_product_scratch<U> bytes for it.
template <template <class> class Decode, class ExecSpace, class U, class Epilogue>
bool vendor_product(const ExecSpace& space, ScratchArena<ExecSpace>& arena,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const QuantizedRows<typename ExecSpace::memory_space>& a,
                    const OutputView<typename ExecSpace::memory_space, U>& out,
                    const Epilogue& epilogue, const char* label) {
  using Mem = typename ExecSpace::memory_space;
  constexpr bool in_place = std::is_same_v<U, float>;
  const std::int64_t M = out.extent(0), cols = out.extent(1), depth = a.q.extent(1);
  const std::int64_t block = vendor_block_columns<U>(M, cols, depth);
  const Int8Matrix<Mem> w(arena.template take<std::int8_t>(block * depth), block, depth);
  OutputView<Mem> sums;  // the GEMM's int32 sums, in float's bits
  if constexpr (in_place) {
    sums = out;
  } else {
    sums = OutputView<Mem>(arena.template take<float>(M * block), M, block);
  }
  for (std::int64_t c0 = 0; c0 < cols; c0 += block) {
    const std::int64_t n = std::min(block, cols - c0);
    Decode<ExecSpace>{state.codes, state.C, w, c0, n}.run(space);
    float* c = in_place ? sums.data() + c0 : sums.data();
    if (!vendor_int8_gemm(space, M, n, depth, a.q.data(), depth, w.data(), depth, c,
                          sums.stride(0))) {
      return false;
    }
    if constexpr (!in_place) finish_in_place(space, sums, M, n, epilogue, label, c0);
  }
  if constexpr (in_place) finish_in_place(space, sums, M, cols, epilogue, label);
  return true;
}

}  // namespace TernaryCounter::Impl
