// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TeacherOptions.hpp"

#include <CommandLine.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace TernaryCounter::Train {

const char* const teacher_usage =
    "usage: ternary-counter-train [--steps N] [--seed S] [--exec default|serial] [--save FILE]\n"
    "                             [--resume FILE] [--in N] [--hidden N] [--classes N]\n"
    "                             [--teacher-hidden N] [--batch N] [--eval N] [--log-every N]\n"
    "                             [--precision fp32|int8]\n"
    "  in, hidden and teacher-hidden must be multiples of 4. --resume continues the checkpoint's\n"
    "  step count for --steps more steps; seed and sizes come from the checkpoint.";

using CommandLine::parse_integer;

void validate_teacher_options(const Options& o, const std::string& source) {
  for (const auto& [name, v] :
       {std::pair{"in", o.in}, std::pair{"hidden", o.hidden}, std::pair{"classes", o.classes},
        std::pair{"teacher-hidden", o.teacher_hidden}, std::pair{"batch", o.batch},
        std::pair{"eval", o.eval}, std::pair{"log-every", o.log_every}}) {
    if (v < 1 || v > max_size) {
      throw std::invalid_argument(source + name + " " + std::to_string(v) + " is not in [1, " +
                                  std::to_string(max_size) + "]");
    }
  }
  for (const auto& [name, v] : {std::pair{"in", o.in}, std::pair{"hidden", o.hidden},
                                std::pair{"teacher-hidden", o.teacher_hidden}}) {
    if (v % 4 != 0) throw std::invalid_argument(source + name + " must be a multiple of 4");
  }
  if (o.classes < 2) throw std::invalid_argument(source + "classes must be >= 2");
  const std::int64_t widest = std::max({o.in, o.hidden, o.teacher_hidden, o.classes});
  for (const auto& [rows, cols] :
       {std::pair{data_steps * o.batch, widest}, std::pair{o.eval, widest},
        std::pair{o.hidden, o.in}, std::pair{o.classes, o.hidden},
        std::pair{o.teacher_hidden, o.in}, std::pair{o.classes, o.teacher_hidden}}) {
    if (rows > max_buffer_values / cols) {
      throw std::invalid_argument(source + "batch, eval and the widths make an array of " +
                                  std::to_string(rows) + " x " + std::to_string(cols) +
                                  " values, more than 2^40");
    }
  }
}

Options parse_teacher_options(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (a + 1 >= argc) throw std::invalid_argument(arg + " needs a value (or is unknown)");
    const std::string value = argv[++a];
    const std::map<std::string, std::int64_t*> sizes = {{"--in", &o.in},
                                                        {"--hidden", &o.hidden},
                                                        {"--classes", &o.classes},
                                                        {"--batch", &o.batch},
                                                        {"--eval", &o.eval},
                                                        {"--teacher-hidden", &o.teacher_hidden},
                                                        {"--log-every", &o.log_every}};
    if (arg == "--steps") {
      o.steps = parse_integer(arg, value, 0, INT64_MAX / 4);
    } else if (arg == "--seed") {
      o.seed = std::uint32_t(parse_integer(arg, value, 0, UINT32_MAX));
      o.given["seed"] = true;
    } else if (arg == "--exec") {
      if (value != "default" && value != "serial") {
        throw std::invalid_argument("--exec must be default or serial, got '" + value + "'");
      }
      o.exec = value;
    } else if (arg == "--precision") {
      if (value != "fp32" && value != "int8") {
        throw std::invalid_argument("--precision must be fp32 or int8, got '" + value + "'");
      }
      o.precision = value == "int8" ? Precision::int8 : Precision::fp32;
      o.given["precision"] = true;
    } else if (arg == "--save" || arg == "--resume") {
      if (value.empty()) throw std::invalid_argument(arg + " needs a file name, got ''");
      (arg == "--save" ? o.save : o.resume) = value;
    } else if (sizes.count(arg)) {
      *sizes.at(arg) = parse_integer(arg, value, 1, max_size);
      o.given[arg.substr(2)] = true;
    } else {
      throw std::invalid_argument("unknown option " + arg);
    }
  }
  validate_teacher_options(o, "--");
  return o;
}

std::map<std::string, std::string> teacher_run_metadata(const Options& o) {
  return {{"seed", std::to_string(o.seed)},
          {"in", std::to_string(o.in)},
          {"hidden", std::to_string(o.hidden)},
          {"classes", std::to_string(o.classes)},
          {"teacher-hidden", std::to_string(o.teacher_hidden)},
          {"batch", std::to_string(o.batch)},
          {"precision", precision_name(o.precision)}};
}

void adopt_teacher_metadata(Options& o, const std::map<std::string, std::string>& meta,
                            const std::string& path) {
  const std::map<std::string, std::int64_t*> fields = {{"in", &o.in},
                                                       {"hidden", &o.hidden},
                                                       {"classes", &o.classes},
                                                       {"teacher-hidden", &o.teacher_hidden},
                                                       {"batch", &o.batch}};
  const auto read = [&](const std::string& key, std::int64_t lo, std::int64_t hi) {
    if (!meta.count(key)) throw std::runtime_error(path + " has no metadata \"" + key + "\"");
    return parse_integer(path + " metadata " + key, meta.at(key), lo, hi);
  };
  const auto check = [&](const std::string& key, std::int64_t current, std::int64_t stored) {
    if (o.given.count(key) && current != stored) {
      throw std::runtime_error("--" + key + " " + std::to_string(current) + " differs from the " +
                               std::to_string(stored) + " " + path + " was trained with");
    }
  };
  const std::int64_t seed = read("seed", 0, UINT32_MAX);
  check("seed", o.seed, seed);
  o.seed = std::uint32_t(seed);
  for (const auto& [key, field] : fields) {
    const std::int64_t stored = read(key, 1, max_size);
    check(key, *field, stored);
    *field = stored;
  }
  // Checkpoints written before the integer path store no precision: they trained in fp32.
  const std::string precision = meta.count("precision") ? meta.at("precision") : "fp32";
  if (precision != "fp32" && precision != "int8") {
    throw std::runtime_error(path + " metadata precision '" + precision + "' is not fp32 or int8");
  }
  if (o.given.count("precision") && precision != precision_name(o.precision)) {
    throw std::runtime_error(std::string("--precision ") + precision_name(o.precision) +
                             " differs from the " + precision + " " + path + " was trained with");
  }
  o.precision = precision == "int8" ? Precision::int8 : Precision::fp32;
  validate_teacher_options(o, path + " metadata ");
}

std::vector<std::pair<std::string, std::string>> teacher_settings(const Options& o) {
  std::vector<std::pair<std::string, std::string>> s = {
      {"--dataset", "teacher"},
      {"--steps", std::to_string(o.steps)},
      {"--exec", o.exec},
      {"--save", o.save},
      {"--resume", o.resume},
      {"--eval", std::to_string(o.eval)},
      {"--log-every", std::to_string(o.log_every)}};
  for (const auto& [key, value] : teacher_run_metadata(o)) s.emplace_back("--" + key, value);
  return s;
}

}  // namespace TernaryCounter::Train
