// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// TernaryLinear: one trainable ternary layer = its packed state, its update hyper-parameters and
// a step counter, so a training step reads forward -> loss -> backward_input -> update_from_io.
//
// A constructed layer is initialized from its base seed, so it learns without further calls:
//   t      = randomize_ternary's draw with seed init_seed(base_seed) = hash_u32(hash_u32(base_seed)
//            ^ 0x5EED1417u) (about a third each of -1, 0, +1; every counter 0),
//   scale  = init_scale(in) = 1 / sqrt(2 in / 3) (unit-variance outputs for unit-variance inputs:
//            about 2/3 of t are non-zero), v = 0.
// An all-zero layer (t = 0) would never learn: every gradient through it is zero.
//
// The rounding seed of step s is derived from the layer's base seed:
//   seed(s) = hash_u32(base_seed ^ hash_u32(uint32(s)))
// (it repeats after 2^32 steps). A run resumed at step s with the same base seed therefore draws
// the same rounding thresholds as the uninterrupted run.
#pragma once

#include "TernaryCounter_Hash.hpp"
#include "TernaryCounter_Linear.hpp"
#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Params.hpp"
#include "TernaryCounter_Precision.hpp"
#include "TernaryCounter_UpdateFromIO.hpp"

#include "TernaryCounter_ViewTypes.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace TernaryCounter {

/// The row scale of a freshly initialized layer with `in` inputs: 1 / sqrt(2 in / 3), computed
/// in double and rounded once (1 for in = 0).
inline float init_scale(std::int64_t in) {
  return in > 0 ? float(1.0 / std::sqrt(double(in) * 2.0 / 3.0)) : 1.0f;
}

/// The seed of a TernaryLinear's initial draw (see the file comment); independent of the step
/// seeds, which hash base_seed ^ hash_u32(step).
constexpr std::uint32_t init_seed(std::uint32_t base_seed) {
  return hash_u32(hash_u32(base_seed) ^ 0x5EED1417u);
}

/// Enqueues on `space` the fill of `state` with ternary values drawn from `seed` (t = H(seed ^
/// H(element)) mod 3 - 1, each value about a third of the time), every counter 0, scale =
/// `init_scale` and v = 0. Each group of codes is a function of its place alone, so the draw runs
/// where the state lives, in parallel (a 70B model's state in well under a second on a GPU).
template <class ExecSpace>
void randomize_ternary(const ExecSpace& space,
                       const PackedState<typename ExecSpace::memory_space>& state,
                       std::uint32_t seed, float init_scale) {
  const std::int64_t in = state.in(), groups = in / codes_per_group;
  const auto codes = state.codes;
  const auto scale = state.scale;
  const auto v = state.v;
  const int C = state.C;
  Kokkos::parallel_for(
      "TernaryCounter::randomize_ternary",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>(
          space, {0, 0}, {state.out(), groups > 0 ? groups : 1}),
      KOKKOS_LAMBDA(std::int64_t o, std::int64_t g) {
        if (g < groups) {
          int k[codes_per_group];
          for (int lane = 0; lane < codes_per_group; ++lane) {
            const std::uint32_t h = hash_u32(seed ^ hash_u32(element_index(o, in, 4 * g + lane)));
            k[lane] = encode(int(h % 3u) - 1, 0, C);
          }
          store_group(make_group(k[0], k[1], k[2], k[3]), &codes(o, bytes_per_group * g));
        }
        if (g == 0) {
          scale(o) = init_scale;
          if (v.extent(0) > 0) v(o) = 0.0f;
        }
      });
}

/// The same on the default execution space of the state's memory space; blocks.
template <class MemorySpace>
void randomize_ternary(const PackedState<MemorySpace>& state, std::uint32_t seed,
                       float init_scale) {
  const typename MemorySpace::execution_space space;
  randomize_ternary(space, state, seed, init_scale);
  space.fence("TernaryCounter::randomize_ternary");
}

template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class TernaryLinear {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using state_type = PackedState<memory_space>;

  /// An out x in layer initialized from `base_seed` (t drawn with init_seed(base_seed), scale
  /// init_scale(in), v 0: see the file comment) whose steps use `params` with per-step seeds
  /// derived from `base_seed`; its products and updates run in `precision` (the layer's one
  /// setting of it). params.C sets the state's C. Throws std::invalid_argument on bad params,
  /// precision or shape. Blocks (the draw is made on the host and copied).
  TernaryLinear(const ExecSpace& space, const std::string& label, std::int64_t out, std::int64_t in,
                const UpdateParams& params, std::uint32_t base_seed,
                Precision precision = Precision::fp32)
      : space_(space),
        state_((params.validate(), label), out, in, params.C),
        params_(params),
        precision_(checked(precision)),
        base_seed_(base_seed) {
    randomize_ternary(state_, init_seed(base_seed), init_scale(in));
  }

  /// The rounding seed of step `step` (see the file comment).
  static constexpr std::uint32_t step_seed(std::uint32_t base_seed, std::int64_t step) {
    return hash_u32(base_seed ^ hash_u32(std::uint32_t(step)));
  }

  /// y [M, out] = x [M, in] W^T.
  void forward(const InputView<memory_space>& x, const OutputView<memory_space>& y) const {
    TernaryCounter::forward(space_, state_, x, y, product_options());
  }

  /// grad_x [M, in] = grad_out [M, out] W with the weights before this step's update.
  void backward_input(const InputView<memory_space>& grad_out,
                      const OutputView<memory_space>& grad_x) const {
    TernaryCounter::backward_input(space_, state_, grad_out, grad_x, product_options());
  }

  /// Any other View types (e.g. LayoutLeft): a compile error per argument saying what is expected.
  template <class In, class Out>
  requires Impl::NotProductViews<In, Out, memory_space>
  void forward(const In&, const Out&) const {
    static_assert(!Impl::NotInputMatrix<In, memory_space>,
                  TERNARYCOUNTER_MATRIX_RULE("TernaryLinear::forward", "x", "const float"));
    static_assert(!Impl::NotOutputMatrix<Out, memory_space>,
                  TERNARYCOUNTER_MATRIX_RULE("TernaryLinear::forward", "y", "float"));
  }
  template <class In, class Out>
  requires Impl::NotProductViews<In, Out, memory_space>
  void backward_input(const In&, const Out&) const {
    static_assert(
        !Impl::NotInputMatrix<In, memory_space>,
        TERNARYCOUNTER_MATRIX_RULE("TernaryLinear::backward_input", "grad_out", "const float"));
    static_assert(!Impl::NotOutputMatrix<Out, memory_space>,
                  TERNARYCOUNTER_MATRIX_RULE("TernaryLinear::backward_input", "grad_x", "float"));
  }
  template <class X, class GradOut>
  requires(Impl::NotInputMatrix<X, memory_space> ||
           Impl::NotInputMatrix<GradOut, memory_space>) UpdateReport
      update_from_io(const X&, const GradOut&) {
    static_assert(!Impl::NotInputMatrix<X, memory_space>,
                  TERNARYCOUNTER_MATRIX_RULE("TernaryLinear::update_from_io", "x", "const float"));
    static_assert(
        !Impl::NotInputMatrix<GradOut, memory_space>,
        TERNARYCOUNTER_MATRIX_RULE("TernaryLinear::update_from_io", "grad_out", "const float"));
    return {};
  }

  /// The step's update from the layer's input x [M, in] and output gradient grad_out [M, out]
  /// with seed step_seed(base_seed, step); then step += 1. On an exception nothing changed.
  UpdateReport update_from_io(const InputView<memory_space>& x,
                              const InputView<memory_space>& grad_out) {
    return step_from_io(x, grad_out);
  }

  /// The three calls with bfloat16 or float16 inputs: the results of the inputs widened to
  /// float, y and grad_x written as float or rounded to the input's type.
  template <class In, class Out>
  requires Impl::HalfProductViews<In, Out, memory_space>
  void forward(const In& x, const Out& y) const {
    TernaryCounter::forward(space_, state_, x, y, product_options());
  }
  template <class In, class Out>
  requires Impl::HalfProductViews<In, Out, memory_space>
  void backward_input(const In& grad_out, const Out& grad_x) const {
    TernaryCounter::backward_input(space_, state_, grad_out, grad_x, product_options());
  }
  template <class X, class GradOut>
  requires Impl::HalfInputPair<X, GradOut, memory_space> UpdateReport
  update_from_io(const X& x, const GradOut& grad_out) {
    return step_from_io(x, grad_out);
  }

  /// The products' options: precision(), and this step's seed for backward_input's
  /// stochastic rounding in int8.
  ProductOptions product_options() const { return {precision_, step_seed(base_seed_, step_)}; }

  const state_type& state() const { return state_; }
  const UpdateParams& params() const { return params_; }
  /// The arithmetic of the layer's products and updates.
  Precision precision() const { return precision_; }
  /// Throws std::invalid_argument (and keeps the layer's) unless fp32 or int8.
  void set_precision(Precision precision) { precision_ = checked(precision); }
  std::uint32_t base_seed() const { return base_seed_; }
  std::int64_t step() const { return step_; }
  /// Sets the step counter (e.g. from a checkpoint); the next update uses step_seed(base, step).
  void set_step(std::int64_t step) {
    if (step < 0) throw std::invalid_argument("TernaryCounter::TernaryLinear: step must be >= 0");
    step_ = step;
  }
  /// Sets the base seed of the step seeds (e.g. from a checkpoint); the state is not redrawn.
  void set_base_seed(std::uint32_t base_seed) { base_seed_ = base_seed; }
  const ExecSpace& space() const { return space_; }

  /// Replaces the update hyper-parameters from the next step on (seed is ignored: each step
  /// derives its own). Throws std::invalid_argument, changing nothing, on invalid params or a
  /// C other than the state's.
  void set_params(const UpdateParams& params) {
    params.validate();
    if (params.C != state_.C) {
      throw std::invalid_argument(
          "TernaryCounter::TernaryLinear::set_params: params.C = " + std::to_string(params.C) +
          " but the layer's state has C = " + std::to_string(state_.C));
    }
    params_ = params;
  }
  /// Sets the counter learning rate from the next step on, e.g. from a schedule; throws
  /// std::invalid_argument, changing nothing, for a value UpdateParams::validate rejects.
  void set_lr(double lr) {
    UpdateParams p = params_;
    p.lr = lr;
    set_params(p);
  }
  /// Sets the row-scale learning rate from the next step on (see set_lr).
  void set_lr_scale(double lr_scale) {
    UpdateParams p = params_;
    p.lr_scale = lr_scale;
    set_params(p);
  }

 private:
  /// This step's update (seed step_seed(base_seed, step)) in the layer's workspace; step += 1.
  template <class X, class GradOut>
  UpdateReport step_from_io(const X& x, const GradOut& grad_out) {
    if (std::int64_t(workspace_.extent(1)) != state_.in() || workspace_.extent(0) == 0) {
      workspace_ = decltype(workspace_)(
          Kokkos::view_alloc(space_, "TernaryCounter::TernaryLinear::workspace",
                             Kokkos::WithoutInitializing),
          from_io_workspace_rows<ExecSpace>(state_.out(), state_.in()), state_.in());
    }
    UpdateParams p = params_;
    p.seed = step_seed(base_seed_, step_);
    const UpdateReport report =
        TernaryCounter::update_from_io(space_, state_, x, grad_out, p, workspace_, precision_);
    ++step_;
    return report;
  }

  static Precision checked(Precision precision) {
    if (precision != Precision::fp32 && precision != Precision::int8) {
      throw std::invalid_argument(
          "TernaryCounter::TernaryLinear: precision = " + std::to_string(int(precision)) +
          " is not Precision::fp32 or Precision::int8");
    }
    return precision;
  }

  ExecSpace space_;
  state_type state_;
  UpdateParams params_;
  Precision precision_ = Precision::fp32;
  std::uint32_t base_seed_ = 0;
  std::int64_t step_ = 0;
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> workspace_;
};

}  // namespace TernaryCounter
