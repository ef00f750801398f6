// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The library's own memory between calls: the scratch its calls keep (the int8 path's quantized
// operands and decoded blocks of W, 16-bit inputs widened to float), one buffer per purpose and
// execution-space instance, shared by every layer, grown to the largest call and held until Kokkos
// finalizes. A framework's memory counters (torch.cuda.memory_allocated, say) do not see it.
#pragma once

#include <cstdint>

namespace TernaryCounter {

/// Bytes of scratch the library holds in `MemorySpace` (Kokkos::HostSpace, or a GPU backend's
/// memory space): every buffer of every execution-space instance whose memory it is. Safe from
/// any thread; waits for no call in flight; 0 after Kokkos finalizes.
template <class MemorySpace>
std::int64_t scratch_bytes_held();

}  // namespace TernaryCounter
