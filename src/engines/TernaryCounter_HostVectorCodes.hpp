// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host code compiled by GCC or Clang unpacks runs of 16 codes with their vector extensions: no ISA
// intrinsics, so AVX-512, AVX2 and baseline builds all get vector code (each as wide as it can).
// Used where host loops decode codes in bulk: the tile engine's staging of packed weights and the
// row update's rows.
#pragma once

#include <cstdint>

#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    !defined(__SYCL_DEVICE_ONLY__)
#define TERNARYCOUNTER_HOST_VECTOR_EXTENSIONS 1
#else
#define TERNARYCOUNTER_HOST_VECTOR_EXTENSIONS 0
#endif

#if TERNARYCOUNTER_HOST_VECTOR_EXTENSIONS
namespace TernaryCounter::Impl {

using u32x16 = std::uint32_t __attribute__((vector_size(64)));
using u8x16 = std::uint8_t __attribute__((vector_size(16)));
using f32x16 = float __attribute__((vector_size(64)));

/// The 16 codes of a run (four groups in three little-endian words) as one 16-lane vector: lane e
/// takes the word that holds code e's low bits and the next one, and shifts its code to bits
/// 0..5. The vector is an out-parameter: returned by value, a 64-byte vector's ABI differs between
/// builds with and without AVX-512 (GCC's -Wpsabi note in baseline builds).
inline void unpack_run_vector(std::uint32_t w0, std::uint32_t w1, std::uint32_t w2, u32x16& code) {
  // Codes 0..5 start in word 0 (code 5 ends in word 1), 6..10 in word 1, 11..15 in word 2.
#if defined(__AVX512F__)
  // Broadcast words under constant lane masks (three broadcasts from memory).
  constexpr std::uint32_t all = ~0u;
  const u32x16 in_word0 = {all, all, all, all, all, all, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const u32x16 in_word1 = {0, 0, 0, 0, 0, 0, all, all, all, all, all, 0, 0, 0, 0, 0};
  const u32x16 word0 = w0 + u32x16{}, word1 = w1 + u32x16{}, word2 = w2 + u32x16{};
  const u32x16 low = (word0 & in_word0) | (word1 & in_word1) | (word2 & ~(in_word0 | in_word1));
  const u32x16 high = (word1 & in_word0) | (word2 & ~in_word0);
#else
  // Two constant shuffles of the three words: AVX2 would build a 16-lane broadcast through the
  // stack, which more than doubles the dense update's time in the generic build's AVX2 copy.
  const u32x16 words = {w0, w1, w2};
#if defined(__clang__)
  const u32x16 low =
      __builtin_shufflevector(words, words, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2);
  const u32x16 high =
      __builtin_shufflevector(words, words, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2);
#else
  const u32x16 low =
      __builtin_shuffle(words, u32x16{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2});
  const u32x16 high =
      __builtin_shuffle(words, u32x16{1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2});
#endif
#endif
  const u32x16 shift = {0, 6, 12, 18, 24, 30, 4, 10, 16, 22, 28, 2, 8, 14, 20, 26};  // 6e % 32
  // (high << 1) << (31 - shift): high's bits above a straddling code's low part, no shift by 32.
  code = ((low >> shift) | ((high << 1) << (31 - shift))) & 63u;
}

}  // namespace TernaryCounter::Impl
#endif
