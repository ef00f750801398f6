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

inline constexpr int checkpoint_format_version = 1;

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
/// multiple of 8, then the tensors (F32 ones first, so they are 4-byte aligned). Throws
/// std::invalid_argument for empty/duplicate names, a layer whose C differs from checkpoint.C,
/// or metadata that uses a reserved key.
std::string serialize_checkpoint(const Checkpoint& checkpoint);

/// Parses and validates a whole file image. Throws CheckpointError (naming `source`) for a
/// truncated or oversized image, a header that does not parse, unknown or missing tensors,
/// wrong dtypes or shapes, overlapping or gapped data offsets, a bad format_version, C or step,
/// or codes that are not valid for C.
Checkpoint parse_checkpoint(std::string_view bytes, const std::string& source = "checkpoint");

/// Writes `checkpoint` to `path` crash-safely: a temporary file in the same folder is written,
/// flushed and fsync'ed, then renamed over `path` (and the folder fsync'ed), so `path` is
/// always either the old file or the complete new one. Throws CheckpointError on I/O errors.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

/// Reads and validates `path` (see parse_checkpoint).
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

/// Reads `path` and copies layer `name` into each target state, but only once the whole file
/// is valid and every target exists with the target's shape and C: on any error it throws
/// CheckpointError and no target changes. Returns the checkpoint (its layers included).
template <class MemorySpace>
Checkpoint load_layers(
    const std::string& path,
    const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& targets) {
  Checkpoint checkpoint = read_checkpoint(path);
  for (const auto& [name, target] : targets) {
    const CheckpointLayer& layer = checkpoint.layer(name);
    if (checkpoint.C != target.C) {
      throw CheckpointError("TernaryCounter::load_layers: " + path +
                            " has C = " + std::to_string(checkpoint.C) + " but layer \"" + name +
                            "\" has C = " + std::to_string(target.C));
    }
    if (layer.state.out() != target.out() || layer.state.in() != target.in()) {
      throw CheckpointError("TernaryCounter::load_layers: " + path + " layer \"" + name + "\" is " +
                            std::to_string(layer.state.out()) + "x" +
                            std::to_string(layer.state.in()) + " but the target is " +
                            std::to_string(target.out()) + "x" + std::to_string(target.in()));
    }
  }
  for (const auto& [name, target] : targets) {
    TernaryCounter::deep_copy(target, checkpoint.layer(name).state);
  }
  return checkpoint;
}

}  // namespace TernaryCounter
