// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Which tiles a product of the tile engine (TernaryCounter_TileGemm.hpp) launches with: the
// backend's full-size tiles, its small tiles when full-size ones would leave multiprocessors or
// cores idle, or, in a build without architecture flags on a CPU with AVX-512, the tiles of the
// AVX-512 copy.
#pragma once

#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_TileGemm.hpp"
#include "engines/TernaryCounter_Tiling.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>

namespace TernaryCounter::Impl {

template <class ExecSpace, class Product, class Tiles>
void run_tile_gemm_with(const ExecSpace& space, const Product& product, const char* label) {
#if TERNARYCOUNTER_HOST_ISA_DISPATCH
  if constexpr (!Tiles::register_accumulators) {
    if (host_runs_avx512()) {
      TileGemm<ExecSpace, Product, Avx512Tiles<Tiles>>{product}.run(space, label);
      return;
    }
  }
#endif
  TileGemm<ExecSpace, Product, Tiles>{product}.run(space, label);
}

/// Tile-GEMM teams that run at once on `space`: one launch of that many tiles is one full wave.
template <class ExecSpace>
std::int64_t tile_team_slots(const ExecSpace& space) {
  using T = Tiling<ExecSpace>;
  return std::max<std::int64_t>(1, std::int64_t(space.concurrency()) /
                                       T::threads_per_multiprocessor * T::teams_per_multiprocessor);
}

/// Runs `product` on `space`, with the small-tile variant when the full-size tiles would leave
/// multiprocessors (GPUs) or cores (hosts) idle; in a build without architecture flags on a CPU
/// with AVX-512, with the tiles of its AVX-512 copy.
template <class ExecSpace, class Product>
void run_tile_gemm(const ExecSpace& space, const Product& product, const char* label) {
  using T = Tiling<ExecSpace>;
  if constexpr (requires { typename T::Small; }) {
    const std::int64_t multiprocessors = tile_team_slots(space) / T::teams_per_multiprocessor;
    if (TileGemm<ExecSpace, Product>::tile_count(product.rows(), product.cols()) <
        multiprocessors) {
      run_tile_gemm_with<ExecSpace, Product, typename T::Small>(space, product, label);
      return;
    }
  }
  run_tile_gemm_with<ExecSpace, Product, T>(space, product, label);
}

}  // namespace TernaryCounter::Impl
