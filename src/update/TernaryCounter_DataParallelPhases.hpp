// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The int8 update_from_io in the phases of data parallelism (SPEC §7): the columns' absmax, the
// int32 sums of the weight gradient with the agreed absmax, the row update from the summed sums.
// Between the phases the caller agrees the absmax (an all-reduce max) and sums the int32 sums
// (a reduce-scatter): Distributed::update_from_io does it over MPI, the Python package over
// torch.distributed. Each phase checks its arguments and throws std::invalid_argument.
// Experimental: the phases' signatures may change with the data-parallel protocol.
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Params.hpp"
#include "TernaryCounter_ViewTypes.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Experimental {

/// The columns' absmax bits [in + out] (x's columns, then grad_out's).
template <class MemorySpace>
using AbsmaxBits = Kokkos::View<std::uint32_t*, MemorySpace>;
/// The weight gradient's int32 sums G [out, in].
template <class MemorySpace>
using IntegerSums = Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MemorySpace>;

/// Enqueues amax_bits = the absmax of each column of x and of grad_out over these samples.
template <class ExecSpace>
void int8_column_absmax(const ExecSpace& space,
                        const InputView<typename ExecSpace::memory_space>& x,
                        const InputView<typename ExecSpace::memory_space>& grad_out,
                        const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits);

/// The weight gradient's quantized operands of a block of samples, kept across calls: xq (hosts
/// [M, in], GPUs [in, Mp]), its column scales, gq [out + padding, Mp] with its row scales and
/// sums.
template <class MemorySpace>
struct Int8GradientOperands {
  Kokkos::View<std::int8_t**, Kokkos::LayoutRight, MemorySpace> xq, gq;
  Kokkos::View<float*, MemorySpace> x_scale, gq_scale;
  Kokkos::View<std::int32_t*, MemorySpace> gq_sums;
};

/// Enqueues the quantization of these samples with the agreed amax_bits into `operands`
/// (reallocated when the shapes change); gq's stream is keyed by the global batch size
/// `stream_samples` and the first sample's global index `sample_offset`.
template <class ExecSpace>
void int8_quantize_operands(const ExecSpace& space,
                            const InputView<typename ExecSpace::memory_space>& x,
                            const InputView<typename ExecSpace::memory_space>& grad_out,
                            const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                            std::uint32_t seed, std::int64_t row_offset,
                            std::int64_t stream_samples, std::int64_t sample_offset,
                            Int8GradientOperands<typename ExecSpace::memory_space>& operands);

/// Enqueues sums [rows, in] = the int32 G of rows [first_row, first_row + rows) from `operands`.
template <class ExecSpace>
void int8_gradient_rows(const ExecSpace& space,
                        const Int8GradientOperands<typename ExecSpace::memory_space>& operands,
                        std::int64_t first_row,
                        const IntegerSums<typename ExecSpace::memory_space>& sums);

/// Enqueues sums [out, in] = the int32 G of these samples, quantized with the agreed amax_bits;
/// gq's stream is keyed by the global batch size `stream_samples` and the first sample's global
/// index `sample_offset`.
template <class ExecSpace>
void int8_gradient_sums(const ExecSpace& space,
                        const InputView<typename ExecSpace::memory_space>& x,
                        const InputView<typename ExecSpace::memory_space>& grad_out,
                        const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                        std::uint32_t seed, std::int64_t row_offset, std::int64_t stream_samples,
                        std::int64_t sample_offset,
                        const IntegerSums<typename ExecSpace::memory_space>& sums);

/// Enqueues the row update (SPEC §3 steps 2-11) of `rows`, the layer's rows [first_row,
/// first_row + rows.out()), from their summed G (overwritten by the float gradient);
/// params.row_offset is the global index of rows' first row.
template <class ExecSpace>
void int8_update_from_sums(const ExecSpace& space,
                           const PackedState<typename ExecSpace::memory_space>& rows,
                           const IntegerSums<typename ExecSpace::memory_space>& sums,
                           const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                           std::int64_t first_row, const UpdateParams& params,
                           const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows);

}  // namespace TernaryCounter::Experimental
