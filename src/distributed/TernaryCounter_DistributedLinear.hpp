// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Distributed::TernaryLinear: a TernaryLinear whose update is the sharded, collective one, for
// data-parallel training. forward and backward_input work on this rank's samples and need no
// communication; update_from_io is collective and leaves every rank with the state one process
// would have after the same steps on the ranks' samples concatenated in rank order.
#pragma once

#include "TernaryCounter_Communicator.hpp"
#include "TernaryCounter_DistributedUpdate.hpp"

#include <TernaryCounter_TernaryLinear.hpp>

#include <stdexcept>
#include <string>

namespace TernaryCounter::Distributed {

// Private inheritance: the one-process update_from_io must not be reachable through a base
// reference (it would update each rank from its own samples only).
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class TernaryLinear : private TernaryCounter::TernaryLinear<ExecSpace> {
  using Base = TernaryCounter::TernaryLinear<ExecSpace>;

 public:
  using typename Base::execution_space;
  using typename Base::memory_space;
  using typename Base::state_type;

  /// The same layer on every rank of `comm` (same arguments everywhere; the state starts equal).
  TernaryLinear(const Communicator& comm, const ExecSpace& space, const std::string& label,
                std::int64_t out, std::int64_t in, const UpdateParams& params,
                std::uint32_t base_seed, Precision precision = Precision::fp32)
      : Base(space, label, out, in, params, base_seed, precision), comm_(comm) {}

  using Base::base_seed;
  using Base::forward;
  using Base::params;
  using Base::precision;
  using Base::set_lr;
  using Base::set_lr_scale;
  using Base::set_params;
  using Base::set_step;
  using Base::space;
  using Base::state;
  using Base::step;
  using Base::step_seed;

  /// grad_x [m_r, in] of this rank's samples, with the weights before this step's update. In
  /// int8 its rounding stream is indexed by the global sample, so this is collective then (an
  /// exclusive scan of the ranks' sample counts, in rank order): any rank count gives one
  /// process's bits.
  void backward_input(const InputView<memory_space>& grad_out_local,
                      const OutputView<memory_space>& grad_x_local) const {
    ProductOptions options = Base::product_options();
    if (options.precision == Precision::int8) {
      long long mine = static_cast<long long>(grad_out_local.extent(0)), before = 0;
      if (MPI_Exscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, comm_.mpi()) != MPI_SUCCESS) {
        throw std::runtime_error(
            "TernaryCounter::Distributed::TernaryLinear::backward_input: MPI_Exscan failed");
      }
      options.sample_offset = comm_.rank() == 0 ? 0 : before;  // rank 0's result is undefined
    }
    TernaryCounter::backward_input(space(), state(), grad_out_local, grad_x_local, options);
  }

  /// Collective: the step's update from this rank's x_local [m_r, in] and grad_out_local
  /// [m_r, out] (Distributed::update_from_io with seed step_seed(base_seed, step)); then
  /// step += 1. Ranks that disagree on the shape, params, base seed or step all throw the same
  /// std::invalid_argument and nothing changes.
  UpdateReport update_from_io(const InputView<memory_space>& x_local,
                              const InputView<memory_space>& grad_out_local) {
    UpdateParams p = params();
    p.seed = step_seed(base_seed(), step());
    const UpdateReport report = Impl::update_from_io_agreeing(
        comm_, space(), state(), x_local, grad_out_local, p, precision(), workspace_,
        {Impl::Field::integer("the layer's step", step()),
         Impl::Field::integer("the layer's base seed", base_seed())});
    set_step(step() + 1);
    return report;
  }

  const Communicator& communicator() const { return comm_; }

 private:
  Communicator comm_;
  UpdateWorkspace<memory_space> workspace_;
};

}  // namespace TernaryCounter::Distributed
