// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Minimal JSON text output for the benchmark report (no dependency for a handful of fields).
#pragma once

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace TernaryCounter::Perf {

/// `s` as a quoted JSON string: quotes, backslashes and control characters escaped.
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

/// A number with 9 significant digits; JSON has no NaN or infinity, so those become null.
inline std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  std::ostringstream os;
  os.precision(9);
  os << x;
  return os.str();
}

inline std::string json_numbers(const std::vector<double>& xs) {
  std::string out = "[";
  for (std::size_t k = 0; k < xs.size(); ++k) out += (k ? ", " : "") + json_number(xs[k]);
  return out + "]";
}

/// Builds one JSON object field by field, in insertion order.
class JsonObject {
 public:
  JsonObject& raw(const std::string& key, const std::string& json_value) {
    fields_.push_back(json_string(key) + ": " + json_value);
    return *this;
  }
  JsonObject& str(const std::string& key, const std::string& value) {
    return raw(key, json_string(value));
  }
  JsonObject& num(const std::string& key, double value) { return raw(key, json_number(value)); }
  JsonObject& integer(const std::string& key, long long value) {
    return raw(key, std::to_string(value));
  }

  std::string text(const std::string& indent = "") const {
    std::string out = "{";
    for (std::size_t k = 0; k < fields_.size(); ++k) {
      out += (k ? ",\n" : "\n") + indent + "  " + fields_[k];
    }
    return out + "\n" + indent + "}";
  }

 private:
  std::vector<std::string> fields_;
};

}  // namespace TernaryCounter::Perf
