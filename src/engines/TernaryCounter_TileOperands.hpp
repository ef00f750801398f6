// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The operands of the tile GEMM engine (TernaryCounter_TileGemm.hpp). An operand is read as
// elements (k, j): k runs along the product's depth (the summed index), j along the tile's rows
// (operand A) or columns (operand B). load(k, j) returns four consecutive elements, either along
// the depth (k .. k+3 of one j: along_depth) or across (j .. j+3 of one k), and zero past the
// operand's edges (the engine never sums those: past the depth it stops early, past the rows and
// columns it stores nothing). load = expand(fetch): fetch does the memory reads and returns what
// a GPU thread keeps in registers while it prefetches (raw_type), expand turns it into floats.
// fetch_inside is fetch without the edge tests and slow paths, for the tiles that covers(j0, W, D)
// says lie wholly inside (most tiles of a large product: the tests would be a quarter of
// the instructions of a GPU step).
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "engines/TernaryCounter_Float4.hpp"
#include "engines/TernaryCounter_HostVectorCodes.hpp"
#include "engines/TernaryCounter_Unroll.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace TernaryCounter::Impl {

/// Hosts: starts loading the cache line at `address` (tiles fetch the next step's slices while
/// they stage this one's: on CPUs a slice's first touch of each line otherwise waits for memory).
KOKKOS_INLINE_FUNCTION void prefetch_line([[maybe_unused]] const void* address) {
#if defined(__GNUC__) || defined(__clang__)
  KOKKOS_IF_ON_HOST((__builtin_prefetch(address);))
#endif
}

/// A float matrix: element (k, j) is view(k, first + j), or view(j, k) when AlongDepth (the
/// depth is then the matrix's contiguous index).
template <class MemorySpace, bool AlongDepth>
struct MatrixOperand {
  static constexpr bool along_depth = AlongDepth;
  using view_type = Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>;

  view_type view;
  std::int64_t first = 0;  ///< offset of j = 0 (a chunk of the matrix's columns)
  std::int64_t depth = 0;  ///< valid k < depth
  std::int64_t width = 0;  ///< valid j < width
  bool vector = false;     ///< four-element runs may be read as one aligned 16-byte load

  MatrixOperand() = default;
  MatrixOperand(const view_type& v, std::int64_t first_, std::int64_t depth_, std::int64_t width_)
      : view(v), first(first_), depth(depth_), width(width_) {
    vector = reinterpret_cast<std::uintptr_t>(v.data()) % 16 == 0 && v.stride(0) % 4 == 0 &&
             first % 4 == 0;
  }

  using raw_type = Float4;
  KOKKOS_INLINE_FUNCTION Float4 fetch(std::int64_t k, std::int64_t j) const { return load(k, j); }

  /// Whether the engine compiles the edge-test-free path for this operand. Not for runs across:
  /// their test is one predicate, and the second path would cost the gradient product (both
  /// operands across) registers and time.
  static constexpr bool inside_path = AlongDepth;

  /// Every run of the slices [k0, k0 + D) x [j0, j0 + W), k0 < depth, is one aligned vector load.
  KOKKOS_INLINE_FUNCTION bool covers(std::int64_t j0, int W, int D) const {
    return vector && j0 + W <= width && depth % D == 0;
  }
  KOKKOS_INLINE_FUNCTION Float4 fetch_inside(std::int64_t k, std::int64_t j) const {
    if constexpr (AlongDepth) {
      return *reinterpret_cast<const Float4*>(&view(j, k));
    } else {
      return *reinterpret_cast<const Float4*>(&view(k, first + j));
    }
  }
  KOKKOS_INLINE_FUNCTION Float4 expand(const Float4& raw) const { return raw; }
  /// prefetch_line of element (k, j), which lies inside the matrix.
  KOKKOS_INLINE_FUNCTION void prefetch(std::int64_t k, std::int64_t j) const {
    prefetch_line(AlongDepth ? &view(j, k) : &view(k, first + j));
  }
  /// Element e of a fetched run: expand(raw).v[e].
  KOKKOS_INLINE_FUNCTION float element(const Float4& raw, int e) const { return raw.v[e]; }

  KOKKOS_INLINE_FUNCTION Float4 load(std::int64_t k, std::int64_t j) const {
    Float4 q;
    if constexpr (AlongDepth) {
      if (vector && j < width && k + 3 < depth)
        return *reinterpret_cast<const Float4*>(&view(j, k));
      for (int e = 0; e < 4; ++e) q.v[e] = (j < width && k + e < depth) ? view(j, k + e) : 0.0f;
    } else {
      if (vector && k < depth && j + 3 < width) {
        return *reinterpret_cast<const Float4*>(&view(k, first + j));
      }
      for (int e = 0; e < 4; ++e) {
        q.v[e] = (k < depth && j + e < width) ? view(k, first + j + e) : 0.0f;
      }
    }
    return q;
  }
};

/// The two aligned words that hold a group of codes, as loaded. Extracting the group waits for
/// the loads, so a kernel that prefetches keeps this until it stages; the group starts at bit
/// TernaryOperand::group_shift of them, which depends on the column only. Runs across the depth
/// carry their row's scale too.
struct LoadedGroup {
  std::uint32_t low = 0, high = 0;

  /// The group in bits 0..23; bits 24..31 are the bytes after it, which TernaryOperand::element
  /// shifts out (no mask).
  KOKKOS_INLINE_FUNCTION std::uint32_t word(int shift) const {
    return std::uint32_t(((std::uint64_t(high) << 32) | low) >> shift);
  }
};
struct ScaledLoadedGroup {
  LoadedGroup group;
  float scale = 0.0f;
};

/// The packed weights, decoded while they are staged: a four-element run is one 3-byte group of
/// codes. Element (k, j) is t[j, k] when AlongDepth (forward: the depth is the input column),
/// else scale[k] * t[k, j] (backward_input: the depth is the output row; scale * t is exact).
/// Prefetched runs stay packed (one word, and the row's scale) until they are staged.
template <class MemorySpace, bool AlongDepth>
struct TernaryOperand {
  static constexpr bool along_depth = AlongDepth;
  using codes_view = Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, MemorySpace>;
  struct Raw {
    std::uint32_t word;
    float scale;
  };
  using raw_type = std::conditional_t<AlongDepth, std::uint32_t, Raw>;

  static constexpr bool inside_path = true;

  codes_view codes;                               ///< [out, 3 in / 4]
  Kokkos::View<const float*, MemorySpace> scale;  ///< [out]
  int lv = 0;                                     ///< counter levels 2C - 1
  std::uint32_t zero_group = 0;                   ///< four codes of t = 0 (past the edges)
  bool word_loads = false;  ///< every row starts 4-byte aligned: groups load as aligned words

  TernaryOperand() = default;
  TernaryOperand(const codes_view& c, const Kokkos::View<const float*, MemorySpace>& s, int C)
      : codes(c), scale(s), lv(counter_levels(C)) {
    zero_group = make_group(lv, lv, lv, lv);
    word_loads = reinterpret_cast<std::uintptr_t>(c.data()) % 4 == 0 && c.stride(0) % 4 == 0;
  }

  KOKKOS_INLINE_FUNCTION std::int64_t rows() const { return codes.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const {
    return std::int64_t(codes.extent(1)) / bytes_per_group * codes_per_group;
  }

  /// The group of codes starting at `bytes`, in bits 0..23 (above them: the next bytes, or
  /// zeros): one or two aligned word loads (the group's three
  /// bytes are inside the row, so the second word is too), else three byte loads. The second
  /// load is a select, not a branch: threads of a warp sit at different byte offsets.
  KOKKOS_INLINE_FUNCTION std::uint32_t group_at(const std::uint8_t* bytes) const {
    return word_loads ? aligned_group_at(bytes) : load_group(bytes);
  }
  KOKKOS_INLINE_FUNCTION static std::uint32_t aligned_group_at(const std::uint8_t* bytes) {
    return loaded_words(bytes).word(8 * int(reinterpret_cast<std::uintptr_t>(bytes) & 3));
  }
  KOKKOS_INLINE_FUNCTION static LoadedGroup loaded_words(const std::uint8_t* bytes) {
    const std::uint32_t* words = aligned_word(bytes);
    return {words[0], (reinterpret_cast<std::uintptr_t>(bytes) & 3) > 1 ? words[1] : 0u};
  }
  /// The aligned word that holds the byte at `bytes`.
  KOKKOS_INLINE_FUNCTION static const std::uint32_t* aligned_word(const std::uint8_t* bytes) {
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(bytes);
    return reinterpret_cast<const std::uint32_t*>(address & ~std::uintptr_t(3));
  }

  /// The first byte of the group that holds code (row, col), which lies inside the codes (no
  /// View indexing; the unsigned column makes the division a shift).
  KOKKOS_INLINE_FUNCTION const std::uint8_t* group_bytes(std::int64_t row, std::int64_t col) const {
    return codes.data() + row * std::int64_t(codes.stride(0)) +
           bytes_per_group * (std::uint64_t(col) / codes_per_group);
  }

  /// Every run of the slices [k0, k0 + D) x [j0, j0 + W), k0 < depth, is inside the codes and
  /// word-loadable.
  KOKKOS_INLINE_FUNCTION bool covers(std::int64_t j0, int W, int D) const {
    const std::int64_t width = AlongDepth ? rows() : cols(), depth = AlongDepth ? cols() : rows();
    return word_loads && j0 + W <= width && depth % D == 0;
  }
  KOKKOS_INLINE_FUNCTION raw_type fetch_inside(std::int64_t k, std::int64_t j) const {
    const std::int64_t row = AlongDepth ? j : k, col = AlongDepth ? k : j;
    const std::uint32_t word = aligned_group_at(group_bytes(row, col));
    if constexpr (AlongDepth) {
      return word;
    } else {
      return Raw{word, scale(row)};
    }
  }

  /// prefetch_line of element (k, j)'s group, which lies inside the codes.
  KOKKOS_INLINE_FUNCTION void prefetch(std::int64_t k, std::int64_t j) const {
    const std::int64_t row = AlongDepth ? j : k, col = AlongDepth ? k : j;
    prefetch_line(group_bytes(row, col));
  }

  // Runs start at multiples of 4 along the columns, so a run is exactly one group.
  KOKKOS_INLINE_FUNCTION raw_type fetch(std::int64_t k, std::int64_t j) const {
    const std::int64_t row = AlongDepth ? j : k, col = AlongDepth ? k : j;
    const bool inside = row < rows() && col < cols();
    const std::uint32_t word =
        inside ? group_at(&codes(row, bytes_per_group * (col / codes_per_group))) : zero_group;
    if constexpr (AlongDepth) {
      return word;
    } else {
      return Raw{word, inside ? scale(row) : 0.0f};
    }
  }

  /// fetch, with the group left as loaded (expand(loaded, group_shift(k, j)) decodes it).
  using loaded_type = std::conditional_t<AlongDepth, LoadedGroup, ScaledLoadedGroup>;
  KOKKOS_INLINE_FUNCTION loaded_type fetch_loaded(std::int64_t k, std::int64_t j) const {
    const std::int64_t row = AlongDepth ? j : k, col = AlongDepth ? k : j;
    LoadedGroup g;
    const bool inside = row < rows() && col < cols();
    if (inside) {
      const std::uint8_t* bytes = &codes(row, bytes_per_group * (col / codes_per_group));
      g = word_loads ? loaded_words(bytes) : LoadedGroup{load_group(bytes), 0u};
    } else {  // t = 0, placed where group_shift expects a group
      const std::uint64_t zero = std::uint64_t(zero_group) << group_shift(k, j);
      g = {std::uint32_t(zero), std::uint32_t(zero >> 32)};
    }
    if constexpr (AlongDepth) {
      return g;
    } else {
      return {g, inside ? scale(row) : 0.0f};
    }
  }
  /// Two consecutive runs of one row of codes, (k, j) and the next (k + 4 along the depth, else
  /// j + 4), the first at a code column that is a multiple of 8, inside the codes and
  /// word-loadable: their 6 bytes start 4-byte aligned or 2 bytes past, so they lie in two
  /// aligned words (each holding a byte of the row: loads inside the codes), kept as loaded
  /// with, across the depth, the row's scale. expand_pair decodes each run. TileGemm's inside
  /// tiles prefetch so, which keeps the words' loads off the fmas' path.
  KOKKOS_INLINE_FUNCTION loaded_type fetch_pair_inside(std::int64_t k, std::int64_t j) const {
    const std::int64_t row = AlongDepth ? j : k, col = AlongDepth ? k : j;
    const std::uint32_t* words = aligned_word(group_bytes(row, col));
    const LoadedGroup g{words[0], words[1]};
    if constexpr (AlongDepth) {
      return g;
    } else {
      return {g, scale(row)};
    }
  }
  /// Run r (0 or 1) of a pair fetched at (k, j).
  KOKKOS_INLINE_FUNCTION Float4 expand_pair(const loaded_type& pair, std::int64_t k, std::int64_t j,
                                            int r) const {
    return expand(pair, group_shift(k, j) + 24 * r);
  }
  /// Where the group of element (k, j) starts in its loaded words (bits): by column only.
  KOKKOS_INLINE_FUNCTION int group_shift(std::int64_t k, std::int64_t j) const {
    const std::int64_t col = AlongDepth ? k : j;
    return word_loads ? 8 * int((bytes_per_group * (col / codes_per_group)) & 3) : 0;
  }
  KOKKOS_INLINE_FUNCTION Float4 expand(const LoadedGroup& loaded, int shift) const {
    static_assert(AlongDepth);
    return expand(loaded.word(shift));
  }
  KOKKOS_INLINE_FUNCTION Float4 expand(const ScaledLoadedGroup& loaded, int shift) const {
    static_assert(!AlongDepth);
    return expand(Raw{loaded.group.word(shift), loaded.scale});
  }

  KOKKOS_INLINE_FUNCTION Float4 expand(const raw_type& raw) const {
    Float4 q;
    for (int e = 0; e < 4; ++e) q.v[e] = element(raw, e);
    return q;
  }
  /// Element e of a fetched run: expand(raw).v[e] (code e of the group shifted to bits 26..31;
  /// the group's later codes fall off the word).
  KOKKOS_INLINE_FUNCTION float element(const raw_type& raw, int e) const {
    if constexpr (AlongDepth) {
      return value_at_top(raw << (26 - 6 * e), run_values(0.0f));
    } else {
      return value_at_top(raw.word << (26 - 6 * e), run_values(raw.scale));
    }
  }

  KOKKOS_INLINE_FUNCTION Float4 load(std::int64_t k, std::int64_t j) const {
    return expand(fetch(k, j));
  }

  /// Four code words read as one 16-byte load.
  struct alignas(16) Words4 {
    std::uint32_t w[4];
  };
  /// Sixteen consecutive codes of one row (four groups in three words) and, across the depth, the
  /// row's scale: what a kernel loads per run when whole runs lie inside word-aligned rows.
  static constexpr int run_codes = 16;
  struct CodeRun {
    std::uint32_t word[3];
    float scale;
  };
  /// The run of element (k, j), which starts a run: its code column is a multiple of 16, so its
  /// 12 bytes are three aligned words (word_loads), inside the codes (covers).
  KOKKOS_INLINE_FUNCTION CodeRun fetch_run(std::int64_t k, std::int64_t j) const {
    const std::int64_t row = AlongDepth ? j : k, col = AlongDepth ? k : j;
    const auto* words = reinterpret_cast<const std::uint32_t*>(group_bytes(row, col));
    return {{words[0], words[1], words[2]}, AlongDepth ? 0.0f : scale(row)};
  }
  /// Two consecutive runs of one row (32 codes, 24 bytes) in two vector loads, for a kernel whose
  /// lanes each take half of a 64-code slice of a row: the runs at code columns col and col + 16
  /// of element (k, j)'s row, col a multiple of 32 in a row that starts 16-byte aligned (the 24
  /// bytes then start 16-byte aligned or 8 bytes past, and load as 16 + 8 or 8 + 16 bytes).
  /// A warp's load then touches each of its 32 rows once per instruction, not once per word.
  KOKKOS_INLINE_FUNCTION void fetch_run_pair(std::int64_t k, std::int64_t j,
                                             CodeRun (&runs)[2]) const {
    struct alignas(8) Words2 {
      std::uint32_t w[2];
    };
    const std::int64_t row = AlongDepth ? j : k, col = AlongDepth ? k : j;
    const std::uint8_t* bytes = group_bytes(row, col);
    std::uint32_t w[6];
    if (reinterpret_cast<std::uintptr_t>(bytes) % 16 == 0) {
      const Words4 a = *reinterpret_cast<const Words4*>(bytes);
      const Words2 b = *reinterpret_cast<const Words2*>(bytes + 16);
      w[0] = a.w[0], w[1] = a.w[1], w[2] = a.w[2], w[3] = a.w[3], w[4] = b.w[0], w[5] = b.w[1];
    } else {
      const Words2 a = *reinterpret_cast<const Words2*>(bytes);
      const Words4 b = *reinterpret_cast<const Words4*>(bytes + 8);
      w[0] = a.w[0], w[1] = a.w[1], w[2] = b.w[0], w[3] = b.w[1], w[4] = b.w[2], w[5] = b.w[3];
    }
    const float s = AlongDepth ? 0.0f : scale(row);
    runs[0] = {{w[0], w[1], w[2]}, s};
    runs[1] = {{w[3], w[4], w[5]}, s};
  }
  /// Four consecutive runs of one row (64 codes, 48 bytes) in three 16-byte loads: the runs at
  /// code columns col .. col + 63 of element (k, j)'s row, col a multiple of 64 in a row that
  /// starts 16-byte aligned (pair_aligned), so the 48 bytes start 16-byte aligned too. The words
  /// go to the runs as loaded: no select between layouts, so nothing waits for the loads here.
  KOKKOS_INLINE_FUNCTION void fetch_run_quad(std::int64_t k, std::int64_t j,
                                             CodeRun (&runs)[4]) const {
    const std::int64_t row = AlongDepth ? j : k, col = AlongDepth ? k : j;
    const auto* words = reinterpret_cast<const Words4*>(group_bytes(row, col));
    const Words4 a = words[0], b = words[1], c = words[2];
    const float s = AlongDepth ? 0.0f : scale(row);
    runs[0] = {{a.w[0], a.w[1], a.w[2]}, s};
    runs[1] = {{a.w[3], b.w[0], b.w[1]}, s};
    runs[2] = {{b.w[2], b.w[3], c.w[0]}, s};
    runs[3] = {{c.w[1], c.w[2], c.w[3]}, s};
  }
  /// Whether fetch_run_pair may serve runs of this operand's covered slices: rows start 16-byte
  /// aligned (covers() with a 64-deep slice already makes the row length a multiple of 48).
  KOKKOS_INLINE_FUNCTION bool pair_aligned() const {
    return reinterpret_cast<std::uintptr_t>(codes.data()) % 16 == 0 && codes.stride(0) % 16 == 0;
  }

  /// The three values an element takes: t, or scale * t (exact; scale of the element's row).
  struct RunValues {
    float minus, zero, plus;
  };
  KOKKOS_INLINE_FUNCTION static RunValues run_values([[maybe_unused]] float scale) {
    if constexpr (AlongDepth) {
      return {-1.0f, 0.0f, 1.0f};
    } else {
      return {scale * -1.0f, scale * 0.0f, scale * 1.0f};
    }
  }
  /// The value of the code in bits 26..31 of `high` (any bits below it): one unsigned compare
  /// with lv << 26 tests code >= lv, so decoding is a shift, two compares and two selects, with
  /// no extraction, integer select or conversion.
  KOKKOS_INLINE_FUNCTION float value_at_top(std::uint32_t high, const RunValues& v) const {
    const std::uint32_t zero_from = std::uint32_t(lv) << 26;
    const std::uint32_t plus_from = std::uint32_t(2 * lv) << 26;
    if constexpr (AlongDepth) {
      // t's bits by integer selects: given float selects among the constants -1, 0 and +1, nvcc
      // selects 0 or -1 as an integer and converts it (I2FP, a quarter-rate instruction).
      return Kokkos::bit_cast<float>(high >= plus_from ? 0x3F800000u
                                                       : (high >= zero_from ? 0u : 0xBF800000u));
    } else {
      return high >= plus_from ? v.plus : (high >= zero_from ? v.zero : v.minus);
    }
  }
  /// The run's 16 elements, t or scale * t as expand gives them.
  KOKKOS_INLINE_FUNCTION void expand_run(const CodeRun& run, float (&w)[run_codes]) const {
#if TERNARYCOUNTER_HOST_VECTOR_EXTENSIONS
    expand_run_vector(run, w);
#else
    const RunValues v = run_values(run.scale);
    TERNARYCOUNTER_UNROLL
    for (int e = 0; e < run_codes; ++e) {
      const int bit = 6 * e, word = bit / 32, offset = bit % 32;
      const std::uint32_t high =
          offset <= 26
              ? run.word[word] << (26 - offset)
              : std::uint32_t(((std::uint64_t(run.word[word + 1]) << 32) | run.word[word]) >>
                              (offset - 26));
      w[e] = value_at_top(high, v);
    }
#endif
  }

#if TERNARYCOUNTER_HOST_VECTOR_EXTENSIONS
  /// expand_run as one 16-lane vector (hosts stage whole runs of 16): the run's codes by
  /// unpack_run_vector, then the same three values by selects; about 25 vector instructions
  /// instead of 100 scalar ones.
  void expand_run_vector(const CodeRun& run, float (&w)[run_codes]) const {
    u32x16 code;
    unpack_run_vector(run.word[0], run.word[1], run.word[2], code);
    const RunValues v = run_values(run.scale);
    const f32x16 plus_v = v.plus - f32x16{}, zero_v = v.zero - f32x16{},
                 minus_v = v.minus - f32x16{};
    const f32x16 t =
        code >= std::uint32_t(2 * lv) ? plus_v : (code >= std::uint32_t(lv) ? zero_v : minus_v);
    std::memcpy(w, &t, sizeof t);
  }
#endif
};

}  // namespace TernaryCounter::Impl
