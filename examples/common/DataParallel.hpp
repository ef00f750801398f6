// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Data parallelism for the example programs, the same source with or without MPI: the processes
// of a run (all of MPI_COMM_WORLD in a build with TernaryCounter::Distributed, else one), each
// rank's block of a global batch, per-sample sums in global order, the layer type and
// checkpoint calls, and the start-up agreement on every setting. A program written against it
// prints and saves the same bits for any number of ranks (only rank 0 prints and writes).
#pragma once

#include "ContentIdentity.hpp"

#include <TernaryCounter.hpp>

#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
#include <mpi.h>
#include <TernaryCounter_Distributed.hpp>
#endif

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace TernaryCounter::Examples {

/// Named settings every rank must hold equally: options and the identities of the files read.
using Settings = std::vector<std::pair<std::string, std::string>>;

/// The processes of this run. Construct it first in main (before Kokkos): it initializes MPI,
/// and finalizes it when it goes (after everything that communicates).
class Processes {
 public:
  Processes(int& argc, char**& argv) {
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
    MPI_Init(&argc, &argv);
    comm_.emplace(MPI_COMM_WORLD);
    rank_ = comm_->rank();
    size_ = comm_->size();
#else
    (void)argc;
    (void)argv;
#endif
  }
  ~Processes() {
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
    comm_.reset();
    MPI_Finalize();
#endif
  }
  Processes(const Processes&) = delete;
  Processes& operator=(const Processes&) = delete;

  int rank() const {
    return rank_;
  }
  int size() const {
    return size_;
  }
  bool root() const {
    return rank_ == 0;
  }

  /// This rank's contiguous block [first, last) of n samples (rank order = global order).
  std::pair<std::int64_t, std::int64_t> block(std::int64_t n) const {
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
    const Distributed::Block b = Distributed::block(n, rank_, size_);
    return {b.first, b.last};
#else
    return {0, n};
#endif
  }

  /// Collective, before any other collective work: returns when no rank has a `local_error`
  /// (what went wrong while it read its options and files) and all ranks hold the same
  /// `settings`; otherwise throws std::invalid_argument with the same text on every rank (the
  /// first rank's error, or the first setting that differs and the ranks that differ), so every
  /// rank can stop at once without waiting for another. One process: throws local_error.
  void agree(const std::string& where, const std::string& local_error,
             const Settings& settings) const {
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
    if (size_ > 1) {
      Distributed::agree_on_settings(*comm_, where, local_error, settings);
      return;
    }
#endif
    (void)where;
    (void)settings;
    if (!local_error.empty()) throw std::invalid_argument(local_error);
  }

  /// Ends the whole run at once after an error only this rank may have seen: MPI_Abort, so no
  /// other rank waits forever in a collective this one will never reach. One process: exit.
  [[noreturn]] void abort(int code) const {
    std::fflush(stdout);
    std::fflush(stderr);
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
    if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    std::exit(code);
  }

  /// Sends stdout of every rank but rank 0 to /dev/null, so a program prints once.
  void print_on_root_only() const {
    if (!root()) std::freopen("/dev/null", "w", stdout);
  }

  /// The sum over all n samples, in global order and in double, of per-sample values of which
  /// `local` holds this rank's block: the same number for any rank count (every rank gets it).
  template <class T>
  double sum_in_order(const Kokkos::View<const T*, Kokkos::HostSpace>& local,
                      std::int64_t n) const {
    std::vector<T> all(static_cast<std::size_t>(n));
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
    std::vector<int> counts(size_), offsets(size_);
    for (int r = 0; r < size_; ++r) {
      const Distributed::Block b = Distributed::block(n, r, size_);
      offsets[r] = int(b.first);
      counts[r] = int(b.size());
    }
    MPI_Allgatherv(local.data(), int(local.extent(0)), mpi_type<T>(), all.data(), counts.data(),
                   offsets.data(), mpi_type<T>(), comm_->mpi());
#else
    for (std::int64_t m = 0; m < n; ++m) all[m] = local(m);
#endif
    double sum = 0;
    for (const T& value : all) sum += value;
    return sum;
  }

  /// Per-sample values of which each rank computed those that `mine(m)` claims, every sample
  /// claimed by exactly one rank: afterwards every rank holds all of them (the entries it did
  /// not claim are overwritten). Exact: each sum adds one rank's value to zeros.
  /// HostView: a rank-1 View of float or int in host memory (a host mirror's type varies with
  /// the build).
  template <class HostView, class Mine>
  void share(const HostView& values, const Mine& mine) const {
    using T = typename HostView::non_const_value_type;
    static_assert(
        Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename HostView::memory_space>::accessible);
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
    if (size_ == 1) return;
    for (std::size_t m = 0; m < values.extent(0); ++m) {
      if (!mine(std::int64_t(m))) values(m) = T(0);
    }
    MPI_Allreduce(MPI_IN_PLACE, values.data(), int(values.extent(0)), mpi_type<T>(), MPI_SUM,
                  comm_->mpi());
#else
    (void)values;
    (void)mine;
#endif
  }

#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
  const Distributed::Communicator& communicator() const {
    return *comm_;
  }
#endif

 private:
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
  template <class T>
  static MPI_Datatype mpi_type() {
    if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
    if constexpr (std::is_same_v<T, int>) return MPI_INT;
    if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  }
  std::optional<Distributed::Communicator> comm_;
#endif
  int rank_ = 0, size_ = 1;
};

#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
template <class ExecSpace>
using LayerBase = Distributed::TernaryLinear<ExecSpace>;
#else
template <class ExecSpace>
using LayerBase = TernaryLinear<ExecSpace>;
#endif

/// A trainable layer of a data-parallel program: forward and backward_input on this rank's
/// samples; update_from_io(x_local, grad_out_local) is the collective sharded update (one
/// process: the plain one).
template <class ExecSpace>
class Layer : public LayerBase<ExecSpace> {
 public:
  Layer(const Processes& processes, const ExecSpace& space, const std::string& label,
        std::int64_t out, std::int64_t in, const UpdateParams& params, std::uint32_t base_seed,
        Precision precision)
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
      : LayerBase<ExecSpace>(processes.communicator(), space, label, out, in, params, base_seed,
                             precision){}
#else
      : LayerBase<ExecSpace>(space, label, out, in, params, base_seed, precision) {
    (void)processes;
  }
#endif
};

/// save_layers by rank 0 (the others wait; a failure throws on every rank).
template <class MemorySpace>
void save_layers(const Processes& processes, const std::string& path,
                 const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& layers,
                 std::int64_t step, const std::map<std::string, std::string>& metadata) {
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
  Distributed::save_layers(processes.communicator(), path, layers, step, metadata);
#else
  (void)processes;
  TernaryCounter::save_layers(path, layers, step, metadata);
#endif
}

/// copy_layers (of a checkpoint every rank read) on every rank; targets change only when every
/// rank's checks passed.
template <class MemorySpace>
void copy_layers(const Processes& processes, const Checkpoint& checkpoint,
                 const std::string& source,
                 const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& targets) {
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
  Distributed::copy_layers(processes.communicator(), checkpoint, source, targets);
#else
  (void)processes;
  TernaryCounter::copy_layers(checkpoint, source, targets);
#endif
}

/// load_layers on every rank; targets change only when every rank's read succeeded.
template <class MemorySpace>
Checkpoint load_layers(
    const Processes& processes, const std::string& path,
    const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& targets) {
#ifdef TERNARYCOUNTER_EXAMPLES_HAVE_MPI
  return Distributed::load_layers(processes.communicator(), path, targets);
#else
  (void)processes;
  return TernaryCounter::load_layers(path, targets);
#endif
}

}  // namespace TernaryCounter::Examples
