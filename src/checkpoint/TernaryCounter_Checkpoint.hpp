// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Checkpoints: the packed states of one or more layers in one safetensors file
// (docs/CHECKPOINT_FORMAT.md). Per layer <name>.state (U8 [out, 3*in/4]), <name>.scale and
// <name>.v (F32 [out, 1]); the header's "__metadata__" holds C, step and format_version plus
// any caller entries. Host-side file I/O; device states go through load_checkpoint's copies.
#pragma once

#include "TernaryCounter_PackedState.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace TernaryCounter {

/// A checkpoint file that cannot be written, read or accepted; what() says why.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The version save_checkpoint writes: 2 has CRC-32C checksums of the header and of every
/// tensor. Version 1 files (no checksums) still load, with a warning on stderr.
inline constexpr int checkpoint_format_version = 2;
inline constexpr int checkpoint_unchecked_format_version = 1;

/// The row scales a checkpoint may hold: the range the update clamps them to. v must be finite
/// and >= 0.
inline constexpr float checkpoint_min_scale = 1e-5f;
inline constexpr float checkpoint_max_scale = 10.0f;

/// What a checkpoint header may be (docs/CHECKPOINT_FORMAT.md): parse_checkpoint refuses more,
/// before allocating anything they bound, and serialize_checkpoint never writes more. Values are
/// the document, every object member and every array item; depth counts enclosing containers.
inline constexpr std::uint64_t checkpoint_max_header_bytes = std::uint64_t(100) << 20;
inline constexpr std::size_t checkpoint_max_header_values = std::size_t(1) << 18;
inline constexpr int checkpoint_max_header_depth = 8;

struct CheckpointLayer {
  std::string name;
  PackedState<Kokkos::HostSpace> state;
};

struct Checkpoint {
  int C = 8;                                    ///< counter depth of every layer
  std::int64_t step = 0;                        ///< training steps done
  std::map<std::string, std::string> metadata;  ///< caller entries (not C, step, format_version)
  std::vector<CheckpointLayer> layers;          ///< read_checkpoint returns them sorted by name

  /// The layer called `name`; throws CheckpointError when there is none.
  const CheckpointLayer& layer(const std::string& name) const;
};

/// The file's bytes: 8-byte little-endian header length, JSON header padded with spaces to a
/// multiple of 8, then the tensors (F32 ones first, so they are 4-byte aligned); the metadata
/// holds the CRC-32C of every tensor and of the header. Throws std::invalid_argument for
/// empty/duplicate names, a layer whose C differs from checkpoint.C, a scale outside
/// [checkpoint_min_scale, checkpoint_max_scale] or a v that is negative or not finite, or
/// metadata that uses a reserved key (C, step, format_version, header_crc32c, crc32c.*).
std::string serialize_checkpoint(const Checkpoint& checkpoint);

/// Parses and validates a whole file image. Throws CheckpointError (naming `source`) for a
/// truncated or oversized image, a header that does not parse, unknown or missing tensors,
/// wrong dtypes or shapes, overlapping or gapped data offsets, a bad format_version, C or step,
/// a missing or wrong checksum (format 2), codes that are not valid for C, or a scale or v that
/// no update produces.
Checkpoint parse_checkpoint(std::string_view bytes, const std::string& source = "checkpoint");

/// Writes `checkpoint` to `path` crash-safely: a temporary file in the same folder is written,
/// flushed and fsync'ed, then renamed over `path` (and the folder fsync'ed), so `path` is
/// always either the old file or the complete new one. Temporary files of `path` that an
/// interrupted save left behind (<path>.tmp-XXXXXX) are removed first. Throws CheckpointError on
/// I/O errors, for an empty path, and when `path` exists but is not a regular file (a symbolic
/// link, a device, a FIFO, a folder): those are never replaced.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

/// The bytes of the checkpoint file `path`, opened once: it must be a regular file (a FIFO or
/// device is refused without blocking), its header length within the limit and its size the
/// one its header describes, all checked before the data is read. Throws CheckpointError.
std::string read_checkpoint_bytes(const std::string& path);

/// Reads and validates `path`: parse_checkpoint(read_checkpoint_bytes(path), path).
Checkpoint read_checkpoint(const std::string& path);

/// Saves the given (possibly device) layers with `step` and extra `metadata`. All layers must
/// share one C.
template <class MemorySpace>
void save_layers(const std::string& path,
                 const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& layers,
                 std::int64_t step, const std::map<std::string, std::string>& metadata = {}) {
  Checkpoint checkpoint;
  checkpoint.C = layers.empty() ? 8 : layers.front().second.C;
  checkpoint.step = step;
  checkpoint.metadata = metadata;
  for (const auto& [name, state] : layers) {
    checkpoint.layers.push_back(
        {name, create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, state)});
  }
  save_checkpoint(path, checkpoint);
}

namespace Impl {
/// Throws CheckpointError unless `checkpoint` (read from `source`) has layer `name` with this
/// shape and C.
inline void require_layer(const Checkpoint& checkpoint, const std::string& source,
                          const std::string& name, std::int64_t out, std::int64_t in, int C) {
  const CheckpointLayer& layer = checkpoint.layer(name);
  if (checkpoint.C != C) {
    throw CheckpointError("TernaryCounter::load_layers: " + source +
                          " has C = " + std::to_string(checkpoint.C) + " but layer \"" + name +
                          "\" has C = " + std::to_string(C));
  }
  if (layer.state.out() != out || layer.state.in() != in) {
    throw CheckpointError("TernaryCounter::load_layers: " + source + " layer \"" + name + "\" is " +
                          std::to_string(layer.state.out()) + "x" +
                          std::to_string(layer.state.in()) + " but the target is " +
                          std::to_string(out) + "x" + std::to_string(in));
  }
}
}  // namespace Impl

/// Copies layer `name` of `checkpoint` (read from `source`) into each target state, but only
/// once every target exists with the target's shape and C: otherwise it throws CheckpointError
/// and no target changes.
template <class MemorySpace>
void copy_layers(const Checkpoint& checkpoint, const std::string& source,
                 const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& targets) {
  for (const auto& [name, target] : targets) {
    Impl::require_layer(checkpoint, source, name, target.out(), target.in(), target.C);
  }
  for (const auto& [name, target] : targets) {
    TernaryCounter::deep_copy(target, checkpoint.layer(name).state);
  }
}

/// Reads `path` and copies layer `name` into each target state, but only once the whole file
/// is valid and every target exists with the target's shape and C: on any error it throws
/// CheckpointError and no target changes. Returns the checkpoint (its layers included).
template <class MemorySpace>
Checkpoint load_layers(
    const std::string& path,
    const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& targets) {
  Checkpoint checkpoint = read_checkpoint(path);
  copy_layers(checkpoint, path, targets);
  return checkpoint;
}

}  // namespace TernaryCounter
