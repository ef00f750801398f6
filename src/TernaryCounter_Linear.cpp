#include "TernaryCounter_Linear.hpp"

#include "impl/TernaryCounter_ExecutionSpaces.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>
#include "impl/TernaryCounter_Validation.hpp"

#include <cstdint>
#include <sstream>
#include <stdexcept>

namespace TernaryCounter {

namespace Impl {

// Rows of x (or grad_out) one thread works on: each decoded group of 4 weights is reused for
// this many samples. It changes which thread computes an element, never the element's order.
inline constexpr int linear_sample_block = 4;

/// t of a valid code without an integer division: t = [k >= lv] + [k >= 2 lv] - 1.
KOKKOS_INLINE_FUNCTION float ternary_value(std::uint32_t word, int lane, int lv) {
  const int k = group_code(word, lane);
  return float(int(k >= lv) + int(k >= 2 * lv) - 1);
}

/// One thread per (block of samples, output row o): the row's groups are decoded once and
/// applied to linear_sample_block rows of x.
template <class ExecSpace>
struct ForwardKernel {
  using memory_space = typename ExecSpace::memory_space;
  static constexpr int MB = linear_sample_block;

  typename PackedState<memory_space>::codes_view codes;
  Kokkos::View<const float*, memory_space> scale;
  InputView<memory_space> x;
  OutputView<memory_space> y;
  int lv;

  KOKKOS_FUNCTION void operator()(std::int64_t index) const {
    const std::int64_t out = codes.extent(0);
    const std::int64_t o = index % out, m0 = (index / out) * MB;
    const std::int64_t M = x.extent(0), groups = std::int64_t(codes.extent(1)) / bytes_per_group;
    const int rows = int(M - m0 < MB ? M - m0 : MB);
    float acc[MB] = {};
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::uint32_t word = load_group(&codes(o, bytes_per_group * g));
      for (int lane = 0; lane < codes_per_group; ++lane) {
        const float t = ternary_value(word, lane, lv);
        const std::int64_t i = codes_per_group * g + lane;
        for (int r = 0; r < MB; ++r) {
          if (r < rows) acc[r] = Kokkos::fma(x(m0 + r, i), t, acc[r]);
        }
      }
    }
    for (int r = 0; r < rows; ++r) y(m0 + r, o) = scale(o) * acc[r];
  }
};

/// One thread per (block of samples, group of 4 input columns): walks the rows o ascending,
/// decoding the group once per row for linear_sample_block samples.
template <class ExecSpace>
struct BackwardInputKernel {
  using memory_space = typename ExecSpace::memory_space;
  static constexpr int MB = linear_sample_block;
  static constexpr int G = codes_per_group;

  typename PackedState<memory_space>::codes_view codes;
  Kokkos::View<const float*, memory_space> scale;
  InputView<memory_space> grad_out;
  OutputView<memory_space> grad_x;
  int lv;

  KOKKOS_FUNCTION void operator()(std::int64_t index) const {
    const std::int64_t groups = std::int64_t(codes.extent(1)) / bytes_per_group;
    const std::int64_t g = index % groups, m0 = (index / groups) * MB;
    const std::int64_t M = grad_out.extent(0), out = codes.extent(0);
    const int rows = int(M - m0 < MB ? M - m0 : MB);
    float acc[MB][G] = {};
    for (std::int64_t o = 0; o < out; ++o) {
      const std::uint32_t word = load_group(&codes(o, bytes_per_group * g));
      float w[G];
      for (int lane = 0; lane < G; ++lane) w[lane] = scale(o) * ternary_value(word, lane, lv);
      for (int r = 0; r < MB; ++r) {
        if (r >= rows) break;
        const float go = grad_out(m0 + r, o);
        for (int lane = 0; lane < G; ++lane) acc[r][lane] = Kokkos::fma(go, w[lane], acc[r][lane]);
      }
    }
    for (int r = 0; r < rows; ++r) {
      for (int lane = 0; lane < G; ++lane) grad_x(m0 + r, G * g + lane) = acc[r][lane];
    }
  }
};

template <class MemorySpace>
void validate_layer(const char* call, const PackedState<MemorySpace>& state) {
  if (state.codes.extent(1) % bytes_per_group != 0) {
    std::ostringstream msg;
    msg << "TernaryCounter::" << call << ": the state's codes have " << state.codes.extent(1)
        << " bytes per row, not a multiple of 3";
    throw std::invalid_argument(msg.str());
  }
  if (state.C < min_counter_depth || state.C > max_counter_depth) {
    std::ostringstream msg;
    msg << "TernaryCounter::" << call << ": state.C = " << state.C << " must be in [2, 11]";
    throw std::invalid_argument(msg.str());
  }
  require_extent(call, "state.scale.extent(0)", state.scale.extent(0), "the state's out",
                 state.out());
}

}  // namespace Impl

template <class ExecSpace>
void forward(const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
             const InputView<typename ExecSpace::memory_space>& x,
             const OutputView<typename ExecSpace::memory_space>& y) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::forward");
  Impl::validate_layer("forward", state);
  Impl::require_extent("forward", "x.extent(1)", x.extent(1), "the state's in", state.in());
  Impl::require_extent("forward", "y.extent(1)", y.extent(1), "the state's out", state.out());
  Impl::require_extent("forward", "y.extent(0) (M)", y.extent(0), "x.extent(0) (M)", x.extent(0));
  const std::int64_t M = x.extent(0), out = state.out();
  const std::int64_t blocks = (M + Impl::linear_sample_block - 1) / Impl::linear_sample_block;
  if (blocks * out == 0) return;
  Kokkos::parallel_for(
      "TernaryCounter::forward",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, blocks * out),
      Impl::ForwardKernel<ExecSpace>{state.codes, state.scale, x, y, counter_levels(state.C)});
}

template <class ExecSpace>
void backward_input(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const InputView<typename ExecSpace::memory_space>& grad_out,
                    const OutputView<typename ExecSpace::memory_space>& grad_x) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::backward_input");
  Impl::validate_layer("backward_input", state);
  Impl::require_extent("backward_input", "grad_out.extent(1)", grad_out.extent(1),
                       "the state's out", state.out());
  Impl::require_extent("backward_input", "grad_x.extent(1)", grad_x.extent(1), "the state's in",
                       state.in());
  Impl::require_extent("backward_input", "grad_x.extent(0) (M)", grad_x.extent(0),
                       "grad_out.extent(0) (M)", grad_out.extent(0));
  const std::int64_t M = grad_out.extent(0), groups = state.in() / codes_per_group;
  const std::int64_t blocks = (M + Impl::linear_sample_block - 1) / Impl::linear_sample_block;
  if (blocks * groups == 0) return;
  Kokkos::parallel_for(
      "TernaryCounter::backward_input",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, blocks * groups),
      Impl::BackwardInputKernel<ExecSpace>{state.codes, state.scale, grad_out, grad_x,
                                           counter_levels(state.C)});
}

#define TERNARYCOUNTER_INSTANTIATE_LINEAR(SPACE)                                             \
  template void forward<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,        \
                               const InputView<SPACE::memory_space>&,                        \
                               const OutputView<SPACE::memory_space>&);                      \
  template void backward_input<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&, \
                                      const InputView<SPACE::memory_space>&,                 \
                                      const OutputView<SPACE::memory_space>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_LINEAR)

}  // namespace TernaryCounter
