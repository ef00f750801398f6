// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Buffers kept across calls (workspaces of layers and of the data-parallel phases): reallocated
// only when the call's shape changes.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace TernaryCounter::Impl {

/// `view` with these extents: the view itself when it has them, else a new uninitialized one
/// labelled "TernaryCounter::<label>" (the old contents are dropped). Returns the view.
template <class View, class... Extents>
View sized(View& view, const std::string& label, Extents... extents) {
  const std::int64_t want[] = {std::int64_t(extents)...};
  bool same = true;
  for (std::size_t d = 0; d < sizeof...(Extents); ++d) {
    same = same && std::int64_t(view.extent(d)) == want[d];
  }
  if (!same) {
    view = View(Kokkos::view_alloc("TernaryCounter::" + label, Kokkos::WithoutInitializing),
                extents...);
  }
  return view;
}

}  // namespace TernaryCounter::Impl
