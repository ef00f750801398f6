// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The data-parallel strict update: every rank holds the whole packed state and its own samples;
// each rank updates a block of output rows and the updated rows (codes, scale, v) are
// all-gathered. FP32 (whose sums over samples are ordered): the update all-gathers x and
// grad_out in rank order (= the global sample order) and each rank runs update_from_io on its
// rows over all samples. Int8 (SPEC §7): the columns' absmax are all-reduced by max and each
// rank's int32 partial sums of the weight gradient are reduce-scattered by row blocks, a traffic
// that does not grow with the batch. Either way the state that results is bit-identical to one
// process's update_from_io on the concatenated samples, for any number of ranks and any split
// of the samples.
#pragma once

#include "TernaryCounter_Communicator.hpp"

#include <TernaryCounter_PackedState.hpp>
#include <TernaryCounter_Params.hpp>
#include <TernaryCounter_UpdateFromIO.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace TernaryCounter::Distributed {

namespace Impl {
template <class MemorySpace>
struct IntegerWorkspace;  // the int8 route's buffers (impl/TernaryCounter_IntegerUpdate.hpp)
}  // namespace Impl

/// The buffers of the data-parallel update (FP32: the gathered x and grad_out, this rank's
/// columns of grad_out, update_from_io's workspace; int8: the quantized local samples, the
/// columns' absmax and a round's int32 gradient sums, at most about params.workspace_bytes, 0:
/// the backend's default), kept across calls so a step allocates nothing while the shapes stay
/// the same (each is reallocated when its shape changes). One per layer.
template <class MemorySpace>
struct UpdateWorkspace {
  using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>;
  Matrix x, grad_out, grad_out_rows, update;
  std::shared_ptr<Impl::IntegerWorkspace<MemorySpace>> integer;
};

/// One collective update step of `state` (identical on every rank before the call, and after
/// it) from this rank's samples x_local [m_r, in] and grad_out_local [m_r, out]; the global
/// batch is the ranks' samples in rank order, m_r may differ between ranks (0 too). Returns
/// the skipped rows of the whole layer (the same on every rank).
///
/// Every rank must call it with the same state shape, C, precision and params (seed included;
/// team_size may differ): when a rank's arguments are invalid or the ranks disagree, every rank
/// throws std::invalid_argument with the same message and no state changes. Blocks until done on
/// the host path; with NCCL the final all-gather may still be running on `space`'s stream (later
/// work on `space` is ordered after it).
template <class ExecSpace>
UpdateReport update_from_io(const Communicator& comm, const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space>& x_local,
                            const InputView<typename ExecSpace::memory_space>& grad_out_local,
                            const UpdateParams& params,
                            UpdateWorkspace<typename ExecSpace::memory_space>& workspace,
                            Precision precision = Precision::fp32);

/// The same with buffers allocated for this call.
template <class ExecSpace>
UpdateReport update_from_io(const Communicator& comm, const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space>& x_local,
                            const InputView<typename ExecSpace::memory_space>& grad_out_local,
                            const UpdateParams& params, Precision precision = Precision::fp32) {
  UpdateWorkspace<typename ExecSpace::memory_space> workspace;
  return update_from_io(comm, space, state, x_local, grad_out_local, params, workspace, precision);
}

/// Bytes one rank sends per FP32 update step on rings, for a layer of out x in weights and a
/// global batch of m samples on `ranks` ranks: (ranks-1)/ranks of the gathered x and grad_out
/// (4 m (in + out)) and of the updated rows (3/4 out in + 8 out).
inline double update_bytes_sent_per_rank(std::int64_t out, std::int64_t in, std::int64_t m,
                                         int ranks) {
  const double gathered =
      4.0 * double(m) * double(in + out) + 0.75 * double(out) * double(in) + 8.0 * double(out);
  return gathered * double(ranks - 1) / double(ranks);
}

/// Bytes one rank sends per int8 update step on rings (SPEC §7), whatever the batch:
/// (ranks-1)/ranks of the int32 sums (4 out in) and of the updated rows (3/4 out in + 8 out),
/// and 2 (ranks-1)/ranks of the columns' absmax (4 (in + out)).
inline double integer_update_bytes_sent_per_rank(std::int64_t out, std::int64_t in, int ranks) {
  const double share = double(ranks - 1) / double(ranks);
  return share * (4.75 * double(out) * double(in) + 8.0 * double(out)) +
         2.0 * share * 4.0 * double(in + out);
}

namespace Impl {
/// One value every rank must hold equally (doubles compared bit for bit).
struct Field {
  const char* name;
  std::int64_t bits;
  bool is_double = false;

  static Field integer(const char* name, std::int64_t value) { return {name, value, false}; }
  static Field real(const char* name, double value);
};

/// update_from_io with extra values the ranks must agree on (e.g. a layer's step).
template <class ExecSpace>
UpdateReport update_from_io_agreeing(
    const Communicator& comm, const ExecSpace& space,
    const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x_local,
    const InputView<typename ExecSpace::memory_space>& grad_out_local, const UpdateParams& params,
    Precision precision, UpdateWorkspace<typename ExecSpace::memory_space>& workspace,
    const std::vector<Field>& extra);
}  // namespace Impl

}  // namespace TernaryCounter::Distributed
