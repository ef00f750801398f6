// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The command line of the teacher task (--dataset teacher) and the settings a checkpoint stores
// so that --resume continues the same run.
#pragma once

#include <TernaryCounter_Precision.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace TernaryCounter::Train {

struct Options {
  std::int64_t steps = 1200;
  std::uint32_t seed = 1;
  std::string exec = "default";
  std::string save, resume;
  std::int64_t in = 32, hidden = 128, classes = 4, teacher_hidden = 16, batch = 256;
  std::int64_t eval = 2048, log_every = 50;
  Precision precision = Precision::fp32;  ///< the student layers' arithmetic (SPEC §3 or §6)
  std::map<std::string, bool> given;      // which of seed / sizes were on the command line
};

/// The teacher task's usage text.
extern const char* const teacher_usage;

/// Sizes fit MPI's int counts; arrays of more than 2^40 values are refused before any View is
/// made (their sizes cannot wrap, and an allocation that large fails cleanly).
inline constexpr std::int64_t max_size = INT32_MAX;
inline constexpr std::int64_t max_buffer_values = std::int64_t(1) << 40;
/// The steps whose data the trainer makes at once.
inline constexpr std::int64_t data_steps = 64;

/// The rules of the command line, for its values and a checkpoint's metadata alike; throws
/// std::invalid_argument starting with `source`.
void validate_teacher_options(const Options& o, const std::string& source);

/// Parses argv[1..argc) (without --dataset / --data-dir); throws std::invalid_argument for an
/// unknown flag or a bad value.
Options parse_teacher_options(int argc, char** argv);

/// The settings the data and the weights depend on: stored in checkpoints, checked on resume.
std::map<std::string, std::string> teacher_run_metadata(const Options& o);

/// Takes seed and sizes from a checkpoint's metadata; an explicit command-line value must agree
/// (std::runtime_error otherwise) and the stored values obey the command line's rules.
void adopt_teacher_metadata(Options& o, const std::map<std::string, std::string>& meta,
                            const std::string& path);

/// Every option's value by name: what all ranks of a run must share.
std::vector<std::pair<std::string, std::string>> teacher_settings(const Options& o);

}  // namespace TernaryCounter::Train
