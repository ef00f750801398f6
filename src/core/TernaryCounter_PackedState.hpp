// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The packed training state of one layer (SPEC §1): 0.75 byte per weight + two floats per row.
#pragma once

#include "TernaryCounter_Codes.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace TernaryCounter {

/// Codes [out][3*in/4] (4 codes in 3 bytes), scale[out], v[out] and the counter depth C.
template <class MemorySpace>
struct PackedState {
  using memory_space = MemorySpace;
  using codes_view = Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, MemorySpace>;
  using row_view = Kokkos::View<float*, MemorySpace>;

  codes_view codes;
  row_view scale;
  row_view v;
  int C = 8;

  PackedState() = default;

  /// A layer of `out` x `in` weights with every code t = 0, c = 0, scale 1 and v 0. Such a layer
  /// does not learn (every gradient through it is zero): draw it with randomize_ternary, or use a
  /// TernaryLinear, which does so from its seed.
  PackedState(const std::string& label, std::int64_t out, std::int64_t in, int counter_depth)
      : C(counter_depth) {
    check_shape(out, in, counter_depth);
    // Allocations carry the library's prefix so that Kokkos Tools attribute them to it.
    const std::string prefix = "TernaryCounter::" + label;
    codes = codes_view(Kokkos::view_alloc(prefix + ".codes", Kokkos::WithoutInitializing), out,
                       in / codes_per_group * bytes_per_group);
    scale = row_view(prefix + ".scale", out);
    v = row_view(prefix + ".v", out);
    fill_codes(codes, encode(0, 0, C));
    Kokkos::deep_copy(scale, 1.0f);
  }

  /// Rows [first, last) as a state of its own that shares this state's memory: how a caller
  /// updates a shard or tile of a layer (with UpdateParams::row_offset = first).
  PackedState row_range(std::int64_t first, std::int64_t last) const {
    if (first < 0 || last < first || last > out()) {
      std::ostringstream msg;
      msg << "TernaryCounter::PackedState::row_range: [" << first << ", " << last
          << ") is not a range of the state's " << out() << " rows";
      throw std::invalid_argument(msg.str());
    }
    const std::pair<std::int64_t, std::int64_t> rows(first, last);
    PackedState part;
    part.C = C;
    part.codes = Kokkos::subview(codes, rows, Kokkos::ALL);
    part.scale = Kokkos::subview(scale, rows);
    part.v = Kokkos::subview(v, rows);
    return part;
  }

  std::int64_t out() const { return std::int64_t(codes.extent(0)); }
  std::int64_t in() const {
    return std::int64_t(codes.extent(1)) / bytes_per_group * codes_per_group;
  }

  /// Sets every code of `codes` to `code`.
  static void fill_codes(const codes_view& codes, int code) {
    std::uint8_t bytes[bytes_per_group];
    store_group(make_group(code, code, code, code), bytes);
    const std::uint8_t b0 = bytes[0], b1 = bytes[1], b2 = bytes[2];
    Kokkos::parallel_for(
        "TernaryCounter::PackedState::fill_codes",
        Kokkos::MDRangePolicy<typename MemorySpace::execution_space, Kokkos::Rank<2>>(
            {0, 0}, {codes.extent(0), codes.extent(1) / bytes_per_group}),
        KOKKOS_LAMBDA(std::size_t o, std::size_t g) {
          codes(o, bytes_per_group * g) = b0;
          codes(o, bytes_per_group * g + 1) = b1;
          codes(o, bytes_per_group * g + 2) = b2;
        });
  }

  /// Throws std::invalid_argument for a shape or C the packed format cannot hold.
  static void check_shape(std::int64_t out, std::int64_t in, int counter_depth) {
    std::ostringstream msg;
    if (out < 0 || in < 0) {
      msg << "TernaryCounter::PackedState: out = " << out << " and in = " << in << " must be >= 0";
    } else if (in % codes_per_group != 0) {
      msg << "TernaryCounter::PackedState: in = " << in
          << " must be a multiple of 4 (4 codes pack into 3 bytes)";
    } else if (counter_depth < min_counter_depth || counter_depth > max_counter_depth) {
      msg << "TernaryCounter::PackedState: C = " << counter_depth << " must be in [2, 11]";
    } else {
      return;
    }
    throw std::invalid_argument(msg.str());
  }
};

/// A copy of `src` in `Space`'s memory (always new allocations, same C).
template <class Space, class SrcSpace>
PackedState<typename Space::memory_space> create_mirror_and_copy(const Space&,
                                                                 const PackedState<SrcSpace>& src) {
  using Dst = PackedState<typename Space::memory_space>;
  Dst dst;
  dst.C = src.C;
  dst.codes =
      typename Dst::codes_view(Kokkos::view_alloc(src.codes.label(), Kokkos::WithoutInitializing),
                               src.codes.extent(0), src.codes.extent(1));
  dst.scale = typename Dst::row_view(
      Kokkos::view_alloc(src.scale.label(), Kokkos::WithoutInitializing), src.scale.extent(0));
  dst.v = typename Dst::row_view(Kokkos::view_alloc(src.v.label(), Kokkos::WithoutInitializing),
                                 src.v.extent(0));
  Kokkos::deep_copy(dst.codes, src.codes);
  Kokkos::deep_copy(dst.scale, src.scale);
  Kokkos::deep_copy(dst.v, src.v);
  return dst;
}

/// Copies the contents of `src` into `dst`; throws std::invalid_argument when shapes or C differ.
template <class DstSpace, class SrcSpace>
void deep_copy(const PackedState<DstSpace>& dst, const PackedState<SrcSpace>& src) {
  if (dst.out() != src.out() || dst.in() != src.in() || dst.C != src.C) {
    std::ostringstream msg;
    msg << "TernaryCounter::deep_copy: destination is " << dst.out() << "x" << dst.in()
        << " C=" << dst.C << " but source is " << src.out() << "x" << src.in() << " C=" << src.C;
    throw std::invalid_argument(msg.str());
  }
  Kokkos::deep_copy(dst.codes, src.codes);
  Kokkos::deep_copy(dst.scale, src.scale);
  Kokkos::deep_copy(dst.v, src.v);
}

/// Host state from unpacked codes [out][in] (each < 3*(2C-1)), scale[out] and v[out].
/// Throws std::invalid_argument for bad shapes, sizes or codes.
inline PackedState<Kokkos::HostSpace> pack_state(
    const std::string& label, Kokkos::View<const std::uint8_t**, Kokkos::HostSpace> codes,
    Kokkos::View<const float*, Kokkos::HostSpace> scale,
    Kokkos::View<const float*, Kokkos::HostSpace> v, int C) {
  const std::int64_t out = codes.extent(0), in = codes.extent(1);
  PackedState<Kokkos::HostSpace> state(label, out, in, C);
  if (std::int64_t(scale.extent(0)) != out || std::int64_t(v.extent(0)) != out) {
    std::ostringstream msg;
    msg << "TernaryCounter::pack_state: codes have " << out << " rows but scale has "
        << scale.extent(0) << " and v has " << v.extent(0);
    throw std::invalid_argument(msg.str());
  }
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      if (codes(o, i) >= code_count(C)) {
        std::ostringstream msg;
        msg << "TernaryCounter::pack_state: code " << int(codes(o, i)) << " at (" << o << ", " << i
            << ") is not below 3*(2C-1) = " << code_count(C) << " for C = " << C;
        throw std::invalid_argument(msg.str());
      }
    }
    for (std::int64_t g = 0; g < in / codes_per_group; ++g) {
      const std::int64_t i = codes_per_group * g;
      store_group(make_group(codes(o, i), codes(o, i + 1), codes(o, i + 2), codes(o, i + 3)),
                  &state.codes(o, bytes_per_group * g));
    }
    state.scale(o) = scale(o);
    state.v(o) = v(o);
  }
  return state;
}

/// Unpacked codes [out][in] of a host state.
inline Kokkos::View<std::uint8_t**, Kokkos::HostSpace> unpack_codes(
    const PackedState<Kokkos::HostSpace>& state) {
  Kokkos::View<std::uint8_t**, Kokkos::HostSpace> codes(
      Kokkos::view_alloc("TernaryCounter::unpacked_codes", Kokkos::WithoutInitializing),
      state.out(), state.in());
  for (std::int64_t o = 0; o < state.out(); ++o) {
    for (std::int64_t g = 0; g < state.in() / codes_per_group; ++g) {
      const std::uint32_t word = load_group(&state.codes(o, bytes_per_group * g));
      for (int lane = 0; lane < codes_per_group; ++lane) {
        codes(o, codes_per_group * g + lane) = std::uint8_t(group_code(word, lane));
      }
    }
  }
  return codes;
}

/// Host state from ternary values t[out][in] in {-1, 0, +1} with every counter 0.
inline PackedState<Kokkos::HostSpace> pack_ternary_state(
    const std::string& label, Kokkos::View<const std::int8_t**, Kokkos::HostSpace> ternary,
    Kokkos::View<const float*, Kokkos::HostSpace> scale,
    Kokkos::View<const float*, Kokkos::HostSpace> v, int C) {
  PackedState<Kokkos::HostSpace>::check_shape(ternary.extent(0), ternary.extent(1), C);
  Kokkos::View<std::uint8_t**, Kokkos::HostSpace> codes("TernaryCounter::ternary_codes",
                                                        ternary.extent(0), ternary.extent(1));
  for (std::size_t o = 0; o < ternary.extent(0); ++o) {
    for (std::size_t i = 0; i < ternary.extent(1); ++i) {
      const int t = ternary(o, i);
      if (t < -1 || t > 1) {
        std::ostringstream msg;
        msg << "TernaryCounter::pack_ternary_state: value " << t << " at (" << o << ", " << i
            << ") is not in {-1, 0, +1}";
        throw std::invalid_argument(msg.str());
      }
      codes(o, i) = std::uint8_t(encode(t, 0, C));
    }
  }
  return pack_state(label, codes, scale, v, C);
}

}  // namespace TernaryCounter
