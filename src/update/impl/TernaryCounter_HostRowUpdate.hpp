// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// RowUpdateKernel's row on a host thread that owns it (RowUpdateKernel::host_rows): SPEC §3 steps
// 2-11 a canonical block at a time, in loops over contiguous columns that compilers vectorize.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "TernaryCounter_Hash.hpp"
#include "TernaryCounter_Params.hpp"
#include "core/TernaryCounter_RowMath.hpp"
#include "engines/TernaryCounter_HostVectorCodes.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace TernaryCounter::Impl {

/// The codes of a row's first n columns (n a multiple of 4), one per byte, and their ternaries
/// as floats: on hosts with vector extensions 16 at a time (unpack_run_vector), the rest a
/// group at a time.
KOKKOS_INLINE_FUNCTION void unpack_row_codes(const std::uint8_t* bytes, std::int64_t n, int lv,
                                             std::uint8_t* code, float* ternary) {
  std::int64_t first = 0;
#if TERNARYCOUNTER_HOST_VECTOR_EXTENSIONS
  constexpr int run = 16;
  for (; first + run <= n; first += run) {
    const std::uint8_t* p = bytes + first / codes_per_group * bytes_per_group;
    std::uint32_t w0, w1, w2;  // three loads (a copy to an array went through the stack)
    std::memcpy(&w0, p, 4);
    std::memcpy(&w1, p + 4, 4);
    std::memcpy(&w2, p + 8, 4);
    u32x16 unpacked;
    unpack_run_vector(w0, w1, w2, unpacked);
    const u8x16 run_codes = __builtin_convertvector(unpacked, u8x16);
    std::memcpy(code + first, &run_codes, sizeof run_codes);
    const f32x16 plus = 1.0f - f32x16{}, zero = 0.0f - f32x16{}, minus = -1.0f - f32x16{};
    const f32x16 run_ternaries =
        unpacked >= std::uint32_t(2 * lv) ? plus : (unpacked >= std::uint32_t(lv) ? zero : minus);
    std::memcpy(ternary + first, &run_ternaries, sizeof run_ternaries);
  }
#endif
  for (std::int64_t q = first / codes_per_group; q < n / codes_per_group; ++q) {
    const std::uint32_t word = load_group(bytes + bytes_per_group * q);
    for (int pos = 0; pos < codes_per_group; ++pos) {
      const int c = group_code(word, pos);
      code[codes_per_group * q + pos] = std::uint8_t(c);
      ternary[codes_per_group * q + pos] = ternary_float(c, lv);
    }
  }
}

/// Steps 2-11 for one row by one host thread, a canonical block of 256 columns at a time. In a
/// block, lane j's chain runs over columns j, j + 32, ...: every 32 consecutive columns add
/// the next term of all 32 chains, so both passes are loops over contiguous columns (the
/// work units serve GPU threads; on the host they cost 10 scalar instructions per weight for
/// the row sums alone). The row is unpacked once, into `scratch`: its ternaries as floats for
/// the row sums, then its codes as bytes for the update (scratch_bytes).
template <class Kernel>
KOKKOS_INLINE_FUNCTION void host_row_update(const Kernel& kernel, std::int64_t row,
                                            float* scratch) {
  using RowMath::LanePartial;
  const UpdateConstants& k = kernel.k;
  const auto& grad = kernel.grad;
  const auto& codes = kernel.codes;
  const auto& v = kernel.v;
  const auto& scale = kernel.scale;
  const auto& skipped = kernel.skipped;
  constexpr int B = RowMath::sum_block, L = RowMath::sum_lanes;
  const std::int64_t in = k.in;
  const float* g = grad.data() + row * std::int64_t(grad.stride(0));
  std::uint8_t* bytes = codes.data() + row * std::int64_t(codes.stride(0));
  const UpdateConstants kc = k;  // flat copies: GCC vectorizes no loop that reads members
  const float* ternary = scratch;
  std::uint8_t* code = reinterpret_cast<std::uint8_t*>(scratch + in);
  unpack_row_codes(bytes, in, counter_levels(kc.C), code, scratch);

  LanePartial sums{};
  for (std::int64_t start = 0; start < in; start += B) {
    const int n = int(Kokkos::min<std::int64_t>(B, in - start));
    float gg[L] = {}, gt[L] = {};
    const auto add_columns = [&](int r, int m) {
      const float* gr = g + start + r;
      const float* tr = ternary + start + r;
      for (int j = 0; j < m; ++j) {
        const float t = tr[j];
        gg[j] = Kokkos::fma(gr[j], gr[j], gg[j]);
        gt[j] = Kokkos::fma(gr[j], t, gt[j]);
      }
    };
    int r = 0;
    for (; r + L <= n; r += L) add_columns(r, L);  // a constant width: the lanes stay in registers
    if (r < n) add_columns(r, n - r);
    // The fold on the two lane arrays (not through LanePartial structs): vector adds.
    RowMath::fold_tree([&](int j, int from) {
      gg[j] = gg[j] + gg[from];
      gt[j] = gt[j] + gt[from];
    });
    RowMath::add_block(sums, LanePartial{gg[0], gt[0]}, start == 0);
  }
  const RowMath::RowScalars rs = RowMath::row_scalars(kc, sums, v(row), scale(row));
  if (rs.skip) {
    Kokkos::atomic_add(&skipped(), std::int64_t(1));
    return;
  }

  const std::uint32_t row_base = element_index(kc.row_offset + row, in, 0);
  for (std::int64_t start = 0; start < in; start += B) {
    const int n = int(Kokkos::min<std::int64_t>(B, in - start));
    std::uint8_t* block_bytes = bytes + start / codes_per_group * bytes_per_group;
    const std::uint8_t* cb = code + start;
    const float* gb = g + start;
    const std::uint32_t first = row_base + std::uint32_t(start);
    int next[B];
    for (int i = 0; i < n; ++i) {
      next[i] = RowMath::updated_code(kc, rs, cb[i], gb[i], uniform01(kc.seed, first + i));
    }
    for (int q = 0; q < n / codes_per_group; ++q) {
      const int* c = next + codes_per_group * q;
      store_group(make_group(c[0], c[1], c[2], c[3]), block_bytes + bytes_per_group * q);
    }
  }
  v(row) = rs.v_new;
  scale(row) = rs.s_new;
}

}  // namespace TernaryCounter::Impl
