// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The command line of the image task (--dataset fashion-mnist) and the settings a checkpoint
// stores so that --resume continues the same run.
#pragma once

#include "AdamParams.hpp"

#include <TernaryCounter_Params.hpp>
#include <TernaryCounter_Precision.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace TernaryCounter::Train {

struct ImageOptions {
  std::string data_dir;
  std::vector<std::int64_t> hidden{512, 256};  ///< hidden widths; input 784, output 10
  std::int64_t epochs = 8;                     ///< the length of the schedule
  std::int64_t stop_after = 0;                 ///< stop after this epoch (0: after the last)
  std::int64_t batch = 256;
  std::int64_t train_limit = 0;  ///< use the first N training images (0: all)
  std::int64_t test_limit = 0;   ///< evaluate on the first N test images (0: all)
  std::uint32_t seed = 1;
  UpdateParams params;                    ///< C, lr, lr_scale, rms_beta at the schedule's start
  Precision precision = Precision::fp32;  ///< the layers' arithmetic (SPEC §3 or §6)
  bool decay_lr_scale = false;            ///< the schedule also decays lr_scale
  bool fp32_baseline = false;
  AdamParams adam;
  std::string exec = "default", save, resume;
  std::set<std::string> given;  ///< the flags (without --) that were on the command line
};

/// The largest batch, width, epoch count and limit: sizes fit MPI's int counts.
inline constexpr std::int64_t image_max_size = INT32_MAX;

/// The image task's usage text.
extern const char* const image_usage;

/// Parses `args` (the program's arguments without --dataset / --data-dir); throws
/// std::invalid_argument for an unknown flag or a bad value.
ImageOptions parse_image_options(const std::vector<std::string>& args);

/// Every option's value by name ("--batch" -> "256"): what all ranks of a run must share.
std::vector<std::pair<std::string, std::string>> image_settings(const ImageOptions& o);

/// The settings the trained weights depend on, as checkpoint metadata (all but C, which the
/// checkpoint stores itself).
std::map<std::string, std::string> image_run_metadata(const ImageOptions& o);

/// Takes those settings from a checkpoint's metadata (with "C" added from the checkpoint); a
/// flag given on the command line must agree with it (std::runtime_error otherwise).
void adopt_image_metadata(ImageOptions& o, const std::map<std::string, std::string>& meta,
                          const std::string& path);

}  // namespace TernaryCounter::Train
