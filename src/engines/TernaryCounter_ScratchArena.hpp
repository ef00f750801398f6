// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Per-call scratch kept between calls (the integer path's quantized operands and decoded blocks
// of W; 16-bit inputs widened to float): one buffer per purpose and execution-space instance,
// shared by every layer, grown when a call needs more and freed when Kokkos finalizes. On GPUs an
// allocation and its free each fence the device, which cost more than a whole int8 product at the
// sizes that matter; a kept buffer costs nothing per call.
//
// A call holds its instance's buffer (a lock) while it enqueues its kernels: the calls of several
// host threads on one instance then reach the stream one after another, and each call's kernels
// finish with the buffer before the next call's kernels, later in the same stream, reuse it.
#pragma once

#include <Kokkos_Core.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace TernaryCounter::Impl {

/// Bytes of n elements of T in the arena (each piece starts on a 256-byte boundary).
template <class T>
constexpr std::size_t scratch_bytes(std::int64_t n) {
  return (std::size_t(n) * sizeof(T) + 255) / 256 * 256;
}

/// The purposes of the arenas: a call may hold one arena of each at once.
struct Int8Scratch {
  static constexpr const char* label = "TernaryCounter::int8_scratch";
};
struct WideningScratch {
  static constexpr const char* label = "TernaryCounter::widening_scratch";
};

template <class ExecSpace, class Purpose = Int8Scratch>
class ScratchArena {
  using Mem = typename ExecSpace::memory_space;
  struct Buffer {
    std::mutex mutex;
    Kokkos::View<char*, Mem> bytes;
    std::atomic<std::size_t> size{0};  ///< bytes' length, read without the buffer's lock
  };
  struct Registry {
    std::mutex mutex;
    std::map<std::uint32_t, std::unique_ptr<Buffer>> by_instance;
    bool hooked = false;
  };
  static Registry& registry() {
    static Registry* r = new Registry;  // never destroyed: the finalize hook empties it
    return *r;
  }
  static Buffer& buffer_of(const ExecSpace& space) {
    Registry& r = registry();
    const std::lock_guard<std::mutex> lock(r.mutex);
    std::unique_ptr<Buffer>& b = r.by_instance[space.impl_instance_id()];
    if (!b) b = std::make_unique<Buffer>();
    if (!r.hooked) {
      r.hooked = true;
      Kokkos::push_finalize_hook([] {
        Registry& all = registry();
        const std::lock_guard<std::mutex> all_lock(all.mutex);
        all.by_instance.clear();
        all.hooked = false;
      });
    }
    return *b;
  }

  std::unique_lock<std::mutex> lock_;
  char* base_ = nullptr;
  std::size_t size_ = 0, used_ = 0;

 public:
  /// Holds the instance's buffer, at least `bytes` long, until destroyed.
  ScratchArena(const ExecSpace& space, std::size_t bytes) {
    Buffer& b = buffer_of(space);
    lock_ = std::unique_lock<std::mutex>(b.mutex);
    if (b.bytes.extent(0) < bytes) {
      space.fence(
          "TernaryCounter::ScratchArena::grow");  // earlier calls' kernels may still read it
      b.size = 0;
      b.bytes = {};
      b.bytes = Kokkos::View<char*, Mem>(
          Kokkos::view_alloc(std::string(Purpose::label), Kokkos::WithoutInitializing), bytes);
      b.size = bytes;
    }
    base_ = b.bytes.data();
    size_ = bytes;
  }

  /// Bytes of this purpose's buffers of every instance (scratch_bytes_held): a sum of sizes
  /// that waits for no call in flight.
  static std::size_t bytes_held() {
    Registry& r = registry();
    const std::lock_guard<std::mutex> lock(r.mutex);
    std::size_t total = 0;
    for (const auto& [instance, buffer] : r.by_instance) total += buffer->size;
    return total;
  }

  /// The next n elements of T (see scratch_bytes).
  template <class T>
  T* take(std::int64_t n) {
    const std::size_t bytes = scratch_bytes<T>(n);
    if (used_ + bytes > size_) {
      throw std::logic_error("TernaryCounter::ScratchArena: a call took more than it asked for");
    }
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += bytes;
    return p;
  }
};

}  // namespace TernaryCounter::Impl
