// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// SPEC §3 step 10 and the decoding of the old codes as lookups, for the row update's GPU
// teams. Step 10 is integer compares, selects and multiplies by C on values that take few
// distinct values: the old code has 64, the counter sum cc of step 9 has 6C + 1 ([-3C, 3C]). A
// team fills this table in shared memory once per row (team scratch; on CUDA a static __shared__
// variable, RowUpdateKernel::team_table), a few entries per thread, from RowMath's own functions,
// so the results are those of RowMath::updated_code by construction, and then spends a load per
// weight where it spent about 25 instructions.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "core/TernaryCounter_RowMath.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

struct CodeUpdateTable {
  static constexpr int code_values = 64;                      ///< every 6-bit code
  static constexpr int max_sums = 6 * max_counter_depth + 1;  ///< cc in [-3C, 3C]

  /// What step 9 needs of an old code: its counter as a float, and where its ternary's row of
  /// new codes starts (offset so that adding cc indexes it).
  struct alignas(8) OldCode {  // one 8-byte load
    float counter;
    int first;
  };
  OldCode old_code[code_values];
  float ternary[code_values];           ///< t of each code, as a float (the row sums of step 2)
  std::uint8_t new_code[3 * max_sums];  ///< [t + 1][cc + 3C]: the code after step 10

  /// Entries e = start, start + stride, ... of the table for counter depth C (a team passes its
  /// rank and size; it must synchronize before reading).
  KOKKOS_INLINE_FUNCTION void fill(int C, int start, int stride) {
    const int sums = 6 * C + 1, count = code_values + 3 * sums;
    for (int e = start; e < count; e += stride) {
      if (e < code_values) {
        old_code[e] = {float(decode_counter(e, C)), (decode_ternary(e, C) + 1) * sums + 3 * C};
        ternary[e] = ternary_float(e, counter_levels(C));
      } else {
        const int q = e - code_values, t = q / sums - 1, cc = q % sums - 3 * C;
        new_code[q] = std::uint8_t(RowMath::code_after(t, cc, C));
      }
    }
  }

  /// The code after step 10 of a weight whose old code is `old` and whose counter sum is cc.
  KOKKOS_INLINE_FUNCTION int next(const OldCode& old, int cc) const {
    return new_code[old.first + cc];
  }
};

}  // namespace TernaryCounter::Impl
