// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// libFuzzer target: the main job's option and checkpoint-metadata parsing (both tasks). The
// input is a mode byte (0 teacher options, 1 image options, 2 teacher metadata, 3 image
// metadata) and NUL-separated strings. A parse either throws std::invalid_argument or
// std::runtime_error, or its result passes the same rules again: what the command line accepts
// is valid, and a run's metadata read back gives the same settings.
#include "ImageOptions.hpp"
#include "TeacherOptions.hpp"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace TernaryCounter::Train;

void check(bool ok) {
  if (!ok) std::abort();  // a finding: the fuzzer reports the input
}

void teacher_round_trip(const Options& o) {
  validate_teacher_options(o, "");  // throws (a finding) when the result breaks a rule
  Options back;
  adopt_teacher_metadata(back, teacher_run_metadata(o), "metadata");
  check(teacher_run_metadata(back) == teacher_run_metadata(o));
}

void image_round_trip(const ImageOptions& o) {
  o.params.validate();
  std::map<std::string, std::string> meta = image_run_metadata(o);
  meta["C"] = std::to_string(o.params.C);
  ImageOptions back;
  adopt_image_metadata(back, meta, "metadata");
  check(image_run_metadata(back) == image_run_metadata(o));
  check(o.batch >= 1 && o.batch <= image_max_size && o.seed == back.seed);
}

// Parses; a refusal ends the input. The round trip runs outside the try: any exception there
// (or an abort) is a finding.
template <class Parse, class RoundTrip>
void parse_then(Parse parse, RoundTrip round_trip) {
  decltype(parse()) result;
  try {
    result = parse();
  } catch (const std::invalid_argument&) {
    return;
  } catch (const std::runtime_error&) {
    return;
  }
  round_trip(result);
}

void run(int mode, const std::vector<std::string>& strings) {
  std::map<std::string, std::string> meta;
  for (std::size_t k = 0; k + 1 < strings.size(); k += 2) meta[strings[k]] = strings[k + 1];
  std::vector<char*> argv{const_cast<char*>("train")};
  for (const std::string& s : strings) argv.push_back(const_cast<char*>(s.c_str()));
  switch (mode) {
    case 0:
      parse_then([&] { return parse_teacher_options(int(argv.size()), argv.data()); },
                 teacher_round_trip);
      break;
    case 1:
      parse_then([&] { return parse_image_options(strings); }, image_round_trip);
      break;
    case 2:
      parse_then(
          [&] {
            Options o;
            adopt_teacher_metadata(o, meta, "metadata");
            return o;
          },
          teacher_round_trip);
      break;
    default:
      parse_then(
          [&] {
            ImageOptions o;
            adopt_image_metadata(o, meta, "metadata");
            return o;
          },
          image_round_trip);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 4096) return 0;
  std::vector<std::string> strings(1);
  for (std::size_t k = 1; k < size; ++k) {
    if (data[k] == 0) {
      strings.emplace_back();
    } else {
      strings.back() += char(data[k]);
    }
  }
  if (size == 1) strings.clear();
  run(data[0] % 4, strings);
  return 0;
}
