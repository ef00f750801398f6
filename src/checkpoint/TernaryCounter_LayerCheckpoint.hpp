// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Checkpoints in one call from the objects a program holds: save_layers / load_layers taking
// {name, PackedState} pairs of any memory space (the space is deduced per entry, so
// save_layers("f", {{"fc1", state}}, step) compiles), and {name, TernaryLinear} pairs, which
// also store each layer's base seed, step and update parameters, so that a layer loaded into a
// freshly constructed one continues bit-identically with no metadata kept by the caller.
// The file is the format of TernaryCounter_Checkpoint.hpp; a layer's extra entries are metadata
// "<name>.base_seed", "<name>.step", "<name>.lr", "<name>.lr_scale", "<name>.rms_beta",
// "<name>.rms_eps", "<name>.clip" and "<name>.lagged" (decimal text that reads back exactly).
#pragma once

#include "TernaryCounter_Checkpoint.hpp"
#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Params.hpp"
#include "TernaryCounter_TernaryLinear.hpp"

#include <Kokkos_Core.hpp>

#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace TernaryCounter {

/// One entry of save_layers / load_layers: a name and a PackedState in any memory space (the
/// state's Views are shared, not copied: loading writes into them).
class NamedState {
 public:
  template <class MemorySpace>
  NamedState(std::string name, const PackedState<MemorySpace>& state)
      : name_(std::move(name)),
        out_(state.out()),
        in_(state.in()),
        C_(state.C),
        to_host_(
            [state] { return create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, state); }),
        from_host_([state](const PackedState<Kokkos::HostSpace>& host) {
          TernaryCounter::deep_copy(state, host);
        }) {}

  const std::string& name() const { return name_; }
  std::int64_t out() const { return out_; }
  std::int64_t in() const { return in_; }
  int C() const { return C_; }
  /// A host copy of the state.
  PackedState<Kokkos::HostSpace> to_host() const { return to_host_(); }
  /// Copies `host` (same shape and C) into the state.
  void copy_from(const PackedState<Kokkos::HostSpace>& host) const { from_host_(host); }

 private:
  std::string name_;
  std::int64_t out_ = 0, in_ = 0;
  int C_ = 8;
  std::function<PackedState<Kokkos::HostSpace>()> to_host_;
  std::function<void(const PackedState<Kokkos::HostSpace>&)> from_host_;
};

/// save_layers for states of any memory space (see the template in TernaryCounter_Checkpoint.hpp):
/// writes every state with `step` and the caller's `metadata`. Throws std::invalid_argument for
/// empty or duplicate names, differing C or reserved metadata keys, CheckpointError on I/O
/// errors. Blocks (device states are copied to the host first).
inline void save_layers(const std::string& path, const std::vector<NamedState>& layers,
                        std::int64_t step,
                        const std::map<std::string, std::string>& metadata = {}) {
  Checkpoint checkpoint;
  checkpoint.C = layers.empty() ? 8 : layers.front().C();
  checkpoint.step = step;
  checkpoint.metadata = metadata;
  for (const NamedState& layer : layers)
    checkpoint.layers.push_back({layer.name(), layer.to_host()});
  save_checkpoint(path, checkpoint);
}

namespace Impl {

/// Copies each target's layer of `checkpoint` (read from `path`) into it, once every target is
/// there with the target's shape and C; otherwise throws CheckpointError, changing nothing.
inline void copy_layers(const std::string& path, const Checkpoint& checkpoint,
                        const std::vector<NamedState>& targets) {
  for (const NamedState& target : targets) {
    require_layer(checkpoint, path, target.name(), target.out(), target.in(), target.C());
  }
  for (const NamedState& target : targets) target.copy_from(checkpoint.layer(target.name()).state);
}

}  // namespace Impl

/// load_layers for states of any memory space: reads `path` and copies layer `name` into each
/// target once the whole file is valid and every target exists with the target's shape and C;
/// otherwise throws CheckpointError and no target changes. Returns the checkpoint. Blocks.
inline Checkpoint load_layers(const std::string& path, const std::vector<NamedState>& targets) {
  Checkpoint checkpoint = read_checkpoint(path);
  Impl::copy_layers(path, checkpoint, targets);
  return checkpoint;
}

/// One entry of the TernaryLinear overloads: a name and a layer (of any execution space). The
/// entry refers to the layer, which must outlive the call; a const layer can be saved only.
class NamedLayer {
 public:
  template <class ExecSpace>
  NamedLayer(std::string name, TernaryLinear<ExecSpace>& layer)
      : NamedLayer(std::move(name), std::as_const(layer)) {
    restore_ = [&layer](std::uint32_t base_seed, std::int64_t step, const UpdateParams& params) {
      layer.set_params(params);
      layer.set_base_seed(base_seed);
      layer.set_step(step);
    };
  }
  template <class ExecSpace>
  NamedLayer(std::string name, const TernaryLinear<ExecSpace>& layer)
      : state_(std::move(name), layer.state()),
        base_seed_(layer.base_seed()),
        step_(layer.step()),
        params_(layer.params()) {}

  const NamedState& state() const { return state_; }
  std::uint32_t base_seed() const { return base_seed_; }
  std::int64_t step() const { return step_; }
  const UpdateParams& params() const { return params_; }
  bool restorable() const { return bool(restore_); }
  /// Sets the layer's params, base seed and step (the caller has validated them).
  void restore(std::uint32_t base_seed, std::int64_t step, const UpdateParams& params) const {
    restore_(base_seed, step, params);
  }

 private:
  NamedState state_;
  std::uint32_t base_seed_ = 0;
  std::int64_t step_ = 0;
  UpdateParams params_;
  std::function<void(std::uint32_t, std::int64_t, const UpdateParams&)> restore_;
};

namespace Impl {

/// The metadata fields of a saved TernaryLinear, in the order they are written.
inline const char* const layer_fields[] = {"base_seed", "step",    "lr",   "lr_scale",
                                           "rms_beta",  "rms_eps", "clip", "lagged"};

inline std::string exact_text(double value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

template <class T>
T parse_field(const std::string& path, const std::string& key, const std::string& text) {
  T value{};
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc() || result.ptr != text.data() + text.size()) {
    throw CheckpointError("TernaryCounter::load_layers: " + path + " metadata \"" + key +
                          "\" is \"" + text + "\", not a number");
  }
  return value;
}

}  // namespace Impl

/// Saves TernaryLinear layers: each one's state, base seed, step and update parameters (see the
/// file comment), the checkpoint's step being the first layer's, plus the caller's `metadata`.
/// Throws std::invalid_argument for empty or duplicate names, layers of differing C, or metadata
/// keys that are reserved or a layer's; CheckpointError on I/O errors. Blocks.
inline void save_layers(const std::string& path, const std::vector<NamedLayer>& layers,
                        const std::map<std::string, std::string>& metadata = {}) {
  std::map<std::string, std::string> entries = metadata;
  std::vector<NamedState> states;
  for (const NamedLayer& layer : layers) {
    const std::string& name = layer.state().name();
    const UpdateParams& p = layer.params();
    const std::string values[] = {std::to_string(layer.base_seed()),
                                  std::to_string(layer.step()),
                                  Impl::exact_text(p.lr),
                                  Impl::exact_text(p.lr_scale),
                                  Impl::exact_text(p.rms_beta),
                                  Impl::exact_text(p.rms_eps),
                                  Impl::exact_text(p.clip),
                                  p.lagged ? "1" : "0"};
    for (std::size_t f = 0; f < std::size(Impl::layer_fields); ++f) {
      const std::string key = name + "." + Impl::layer_fields[f];
      if (!entries.emplace(key, values[f]).second) {
        throw std::invalid_argument("TernaryCounter::save_layers: metadata key \"" + key +
                                    "\" is layer \"" + name + "\"'s (given twice)");
      }
    }
    states.push_back(layer.state());
  }
  save_layers(path, states, layers.empty() ? 0 : layers.front().step(), entries);
}

/// Loads TernaryLinear layers saved by the overload above: each target gets the state, base
/// seed, step and update parameters saved under its name (its other parameters, such as
/// team_size, are kept), so training continues as if never interrupted. Nothing changes unless
/// the whole file is valid, every layer is there with the target's shape and C, and its saved
/// fields are complete and valid: otherwise throws CheckpointError. Throws std::invalid_argument
/// for a const target. Returns the checkpoint (its metadata includes the layers' entries). Blocks.
inline Checkpoint load_layers(const std::string& path, const std::vector<NamedLayer>& targets) {
  for (const NamedLayer& target : targets) {
    if (!target.restorable()) {
      throw std::invalid_argument("TernaryCounter::load_layers: layer \"" + target.state().name() +
                                  "\" is const: it cannot be loaded");
    }
  }
  const Checkpoint checkpoint = read_checkpoint(path);
  struct Restored {
    std::uint32_t base_seed;
    std::int64_t step;
    UpdateParams params;
  };
  std::vector<Restored> restored;
  std::vector<NamedState> states;
  for (const NamedLayer& target : targets) {
    const std::string& name = target.state().name();
    std::string text[std::size(Impl::layer_fields)];
    for (std::size_t f = 0; f < std::size(Impl::layer_fields); ++f) {
      const std::string key = name + "." + Impl::layer_fields[f];
      const auto found = checkpoint.metadata.find(key);
      if (found == checkpoint.metadata.end()) {
        throw CheckpointError("TernaryCounter::load_layers: " + path + " has no metadata \"" + key +
                              "\" (was layer \"" + name + "\" saved from a TernaryLinear?)");
      }
      text[f] = found->second;
    }
    Restored r{Impl::parse_field<std::uint32_t>(path, name + ".base_seed", text[0]),
               Impl::parse_field<std::int64_t>(path, name + ".step", text[1]), target.params()};
    r.params.lr = Impl::parse_field<double>(path, name + ".lr", text[2]);
    r.params.lr_scale = Impl::parse_field<double>(path, name + ".lr_scale", text[3]);
    r.params.rms_beta = Impl::parse_field<double>(path, name + ".rms_beta", text[4]);
    r.params.rms_eps = Impl::parse_field<double>(path, name + ".rms_eps", text[5]);
    r.params.clip = Impl::parse_field<double>(path, name + ".clip", text[6]);
    r.params.lagged = Impl::parse_field<int>(path, name + ".lagged", text[7]) != 0;
    try {
      r.params.validate();
      if (r.step < 0) throw std::invalid_argument("step = " + text[1] + " must be >= 0");
    } catch (const std::invalid_argument& e) {
      throw CheckpointError("TernaryCounter::load_layers: " + path + " layer \"" + name +
                            "\": " + e.what());
    }
    restored.push_back(r);
    states.push_back(target.state());
  }
  // Checks every state's presence, shape and C before it copies any; nothing below throws.
  Impl::copy_layers(path, checkpoint, states);
  for (std::size_t l = 0; l < targets.size(); ++l) {
    targets[l].restore(restored[l].base_seed, restored[l].step, restored[l].params);
  }
  return checkpoint;
}

}  // namespace TernaryCounter
