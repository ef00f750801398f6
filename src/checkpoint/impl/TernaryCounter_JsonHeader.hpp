// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The bounded JSON reader of a checkpoint's header: objects, arrays, strings and non-negative
// integers into a tree whose size and depth are bounded before anything is stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace TernaryCounter::Impl {

// The header's JSON: objects (members in file order), arrays, strings, non-negative integers.
// A tree of our own rather than nlohmann::json, whose destructor allocates (it flattens nested
// values onto a heap stack): a std::bad_alloc there, while a refused header is unwound, would
// be std::terminate instead of a CheckpointError. Destroying this tree allocates nothing.
struct HeaderMember;

struct HeaderValue {
  enum class Kind { Object, Array, String, Integer };
  Kind kind = Kind::Object;
  std::string string;
  std::uint64_t integer = 0;
  // Object members (with keys) or array items (keys empty). HeaderMember rather than
  // std::pair<std::string, HeaderValue>: std::pair's traits need the complete HeaderValue,
  // which clang with libstdc++ refuses inside HeaderValue itself.
  std::vector<HeaderMember> children;

  bool is_object() const { return kind == Kind::Object; }
  bool is_array() const { return kind == Kind::Array; }
  bool is_string() const { return kind == Kind::String; }
  bool is_integer() const { return kind == Kind::Integer; }
  /// The member called `key` of an object (linear: the objects looked up are small), or null.
  const HeaderValue* find(std::string_view key) const;
};

struct HeaderMember {
  std::string key;
  HeaderValue value;
};

/// Parses the JSON `text` into `root`: at most `max_values` values, nested at most `max_depth`
/// deep; null, booleans, negative and non-integer numbers, duplicate keys and a byte order mark
/// are refused. On failure `error` says why and at which byte of `text`.
bool read_json_header(std::string_view text, std::size_t max_values, int max_depth,
                      HeaderValue& root, std::string& error);

/// `s` as a JSON string literal (quotes, backslashes and control characters escaped).
std::string json_string(const std::string& s);

}  // namespace TernaryCounter::Impl
