// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ImageOptions.hpp"

#include <CommandLine.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>
#include <stdexcept>

namespace TernaryCounter::Train {

const char* const image_usage =
    "usage: ternary-counter-train [--dataset fashion-mnist] [--data-dir DIR] [--epochs N]\n"
    "         [--stop-after E] [--batch N] [--hidden W1,W2,...] [--C N] [--lr X] [--lr-scale X]\n"
    "         [--rms-beta X] [--decay-lr-scale 0|1] [--seed S] [--train-limit N] [--test-limit N]\n"
    "         [--precision fp32|int8] [--exec default|serial] [--save FILE] [--resume FILE]\n"
    "         [--fp32-baseline] [--adam-lr X]\n"
    "  Trains a ternary MLP 784-<hidden>-10 on Fashion-MNIST (DIR: the four IDX files, plain or\n"
    "  .gz; default /usr/share/datasets/fashion-mnist) with a cosine decay of lr over --epochs;\n"
    "  prints one line per epoch and a final: line. --save writes a checkpoint after every epoch;\n"
    "  --resume continues one (its settings come from the checkpoint). --fp32-baseline trains the\n"
    "  same MLP with float weights and Adam instead. --precision int8 runs every layer's products\n"
    "  and weight gradients on the integer path (docs/SPEC.md §6).";

namespace {

using CommandLine::parse_integer;

double parse_real(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(value) || value < 0) {
    throw std::invalid_argument(flag + " needs a finite number >= 0, got '" + text + "'");
  }
  return value;
}

// "512,256" -> {512, 256}; each a positive multiple of 4 (a ternary layer's input width).
std::vector<std::int64_t> parse_widths(const std::string& text) {
  std::vector<std::int64_t> widths;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) {
    const std::int64_t w = parse_integer("--hidden", item, 1, image_max_size);
    if (w % 4 != 0) throw std::invalid_argument("--hidden widths must be multiples of 4");
    widths.push_back(w);
  }
  if (widths.empty()) throw std::invalid_argument("--hidden needs at least one width");
  return widths;
}

std::string join(const std::vector<std::int64_t>& widths) {
  std::string text;
  for (std::size_t k = 0; k < widths.size(); ++k) {
    text += (k ? "," : "") + std::to_string(widths[k]);
  }
  return text;
}

// A double as text that reads back to the same double.
std::string exact(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

// The settings stored in a checkpoint: name -> (write, read).
struct Setting {
  std::function<std::string(const ImageOptions&)> write;
  std::function<void(ImageOptions&, const std::string&)> read;
};

const std::map<std::string, Setting>& stored_settings() {
  static const std::map<std::string, Setting> settings = {
      {"seed",
       {[](const ImageOptions& o) { return std::to_string(o.seed); },
        [](ImageOptions& o, const std::string& v) {
          o.seed = std::uint32_t(parse_integer("seed", v, 0, UINT32_MAX));
        }}},
      {"hidden",
       {[](const ImageOptions& o) { return join(o.hidden); },
        [](ImageOptions& o, const std::string& v) { o.hidden = parse_widths(v); }}},
      {"epochs",
       {[](const ImageOptions& o) { return std::to_string(o.epochs); },
        [](ImageOptions& o, const std::string& v) {
          o.epochs = parse_integer("epochs", v, 1, image_max_size);
        }}},
      {"batch",
       {[](const ImageOptions& o) { return std::to_string(o.batch); },
        [](ImageOptions& o, const std::string& v) {
          o.batch = parse_integer("batch", v, 1, image_max_size);
        }}},
      {"train-limit",
       {[](const ImageOptions& o) { return std::to_string(o.train_limit); },
        [](ImageOptions& o, const std::string& v) {
          o.train_limit = parse_integer("train-limit", v, 0, image_max_size);
        }}},
      {"C",
       {[](const ImageOptions& o) { return std::to_string(o.params.C); },
        [](ImageOptions& o, const std::string& v) {
          o.params.C = int(parse_integer("C", v, 0, 1000));
        }}},
      {"lr",
       {[](const ImageOptions& o) { return exact(o.params.lr); },
        [](ImageOptions& o, const std::string& v) { o.params.lr = parse_real("lr", v); }}},
      {"lr-scale",
       {[](const ImageOptions& o) { return exact(o.params.lr_scale); },
        [](ImageOptions& o, const std::string& v) {
          o.params.lr_scale = parse_real("lr-scale", v);
        }}},
      {"rms-beta",
       {[](const ImageOptions& o) { return exact(o.params.rms_beta); },
        [](ImageOptions& o, const std::string& v) {
          o.params.rms_beta = parse_real("rms-beta", v);
        }}},
      {"precision",
       {[](const ImageOptions& o) { return std::string(precision_name(o.precision)); },
        [](ImageOptions& o, const std::string& v) {
          if (v != "fp32" && v != "int8") {
            throw std::invalid_argument("--precision must be fp32 or int8, got '" + v + "'");
          }
          o.precision = v == "int8" ? Precision::int8 : Precision::fp32;
        }}},
      {"decay-lr-scale",
       {[](const ImageOptions& o) { return std::to_string(o.decay_lr_scale); },
        [](ImageOptions& o, const std::string& v) {
          o.decay_lr_scale = parse_integer("decay-lr-scale", v, 0, 1) != 0;
        }}},
  };
  return settings;
}

}  // namespace

ImageOptions parse_image_options(const std::vector<std::string>& args) {
  ImageOptions o;
  // Defaults for batches of 256: fewer, larger steps (half the per-step update epilogues, larger
  // GEMMs) than batches of 128, with lr 0.003 making up for half the steps.
  o.params.C = 8;
  o.params.lr = 0.003;
  o.params.lr_scale = 2e-2;
  o.params.rms_beta = 0.99;
  for (std::size_t a = 0; a < args.size(); ++a) {
    const std::string& arg = args[a];
    if (arg == "--fp32-baseline") {
      o.fp32_baseline = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || a + 1 >= args.size()) {
      throw std::invalid_argument(arg + " is unknown or needs a value");
    }
    const std::string name = arg.substr(2), value = args[++a];
    if (stored_settings().count(name)) {
      stored_settings().at(name).read(o, value);
    } else if (name == "stop-after") {
      o.stop_after = parse_integer(arg, value, 0, image_max_size);
    } else if (name == "test-limit") {
      o.test_limit = parse_integer(arg, value, 0, image_max_size);
    } else if (name == "adam-lr") {
      o.adam.lr = parse_real(arg, value);
    } else if (name == "exec") {
      if (value != "default" && value != "serial") {
        throw std::invalid_argument("--exec must be default or serial, got '" + value + "'");
      }
      o.exec = value;
    } else if (name == "save" || name == "resume") {
      if (value.empty()) throw std::invalid_argument(arg + " needs a file name, got ''");
      (name == "save" ? o.save : o.resume) = value;
    } else {
      throw std::invalid_argument("unknown option " + arg);
    }
    o.given.insert(name);
  }
  o.params.validate();
  if (o.fp32_baseline && (!o.save.empty() || !o.resume.empty())) {
    throw std::invalid_argument("--save and --resume are for the ternary model, not the baseline");
  }
  return o;
}

std::vector<std::pair<std::string, std::string>> image_settings(const ImageOptions& o) {
  std::vector<std::pair<std::string, std::string>> settings;
  for (const auto& [name, setting] : stored_settings()) {
    settings.emplace_back("--" + name, setting.write(o));
  }
  settings.insert(settings.end(), {{"--stop-after", std::to_string(o.stop_after)},
                                   {"--test-limit", std::to_string(o.test_limit)},
                                   {"--adam-lr", exact(o.adam.lr)},
                                   {"--exec", o.exec},
                                   {"--save", o.save},
                                   {"--resume", o.resume},
                                   {"--fp32-baseline", std::to_string(o.fp32_baseline)}});
  return settings;
}

std::map<std::string, std::string> image_run_metadata(const ImageOptions& o) {
  std::map<std::string, std::string> meta;
  for (const auto& [name, setting] : stored_settings()) meta[name] = setting.write(o);
  meta.erase("C");  // the checkpoint stores C itself (a reserved key)
  return meta;
}

void adopt_image_metadata(ImageOptions& o, const std::map<std::string, std::string>& meta,
                          const std::string& path) {
  for (const auto& [name, setting] : stored_settings()) {
    // Checkpoints written before the integer path store no precision: they trained in fp32.
    if (name == "precision" && !meta.count(name)) continue;
    if (!meta.count(name)) throw std::runtime_error(path + " has no metadata \"" + name + "\"");
    const std::string stored = meta.at(name);
    if (o.given.count(name) && setting.write(o) != stored) {
      throw std::runtime_error("--" + name + " " + setting.write(o) + " differs from the " +
                               stored + " " + path + " was trained with");
    }
    setting.read(o, stored);
  }
  o.params.validate();
}

}  // namespace TernaryCounter::Train
