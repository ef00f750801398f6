// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "checkpoint/impl/TernaryCounter_JsonHeader.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string>
#include <utility>

namespace TernaryCounter::Impl {

const HeaderValue* HeaderValue::find(std::string_view key) const {
  for (const HeaderMember& m : children) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

namespace {

// Reads a header with nlohmann_json's SAX parser (its lexer checks the JSON grammar, UTF-8,
// escapes and surrogates) into a HeaderValue. Only objects, arrays, strings and non-negative
// integers are allowed, and duplicate keys are refused (nlohmann's own DOM would keep the last).
// Every limit is checked before what it bounds is stored: a value is counted, and its depth
// checked, before it enters the tree, so the tree holds at most max_values values at most
// max_depth deep whatever the header says, and a header past a
// limit is refused as soon as the limit is reached. Besides the tree, the parser holds one token
// at a time (at most the header's size, which the caller bounds). Duplicate keys are found
// by sorting each object's keys once: O(n log n).
class HeaderReader final : public nlohmann::json_sax<nlohmann::json> {
 public:
  // Parses `text`; on failure `error` says why and where (a byte offset in the header).
  static bool read(std::string_view text, std::size_t max_values, int max_depth, HeaderValue& root,
                   std::string& error) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") {
      error = "JSON header: a byte order mark at byte 0";  // nlohmann would skip it silently
      return false;
    }
    HeaderReader reader(max_values, max_depth);
    const ByteIterator first(text.data(), text.data(), &reader.bytes_read_);
    const ByteIterator last(text.data() + text.size(), text.data(), nullptr);
    if (!nlohmann::json::sax_parse(first, last, &reader)) {
      error = std::move(reader.error_);
      return false;
    }
    root = std::move(reader.root_);
    return true;
  }

  bool null() override { return refuse("null is not allowed"); }
  bool boolean(bool) override { return refuse("true and false are not allowed"); }
  bool number_integer(number_integer_t) override { return refuse("negative number"); }
  bool number_unsigned(number_unsigned_t n) override {
    HeaderValue* const v = place(HeaderValue::Kind::Integer);
    if (v) v->integer = n;
    return v != nullptr;
  }
  bool number_float(number_float_t, const string_t& text) override {
    // nlohmann reads an integer beyond 2^64 - 1 as a float.
    const bool integral = text.find_first_of(".eE") == string_t::npos;
    return refuse(integral ? "integer out of range" : "non-integer number");
  }
  bool string(string_t& s) override {
    HeaderValue* const v = place(HeaderValue::Kind::String);
    if (v) v->string = std::move(s);
    return v != nullptr;
  }
  bool binary(binary_t&) override { return refuse("binary value"); }
  bool start_object(std::size_t) override { return open(HeaderValue::Kind::Object); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    // Comparing each key with the earlier ones would be quadratic in the number of keys.
    const std::vector<HeaderMember>& members = stack_.back()->children;
    std::vector<std::string_view> keys;
    keys.reserve(members.size());
    for (const HeaderMember& m : members) keys.push_back(m.key);
    std::sort(keys.begin(), keys.end());
    const auto twin = std::adjacent_find(keys.begin(), keys.end());
    if (twin != keys.end()) return refuse("duplicate key \"" + std::string(*twin) + "\"");
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return open(HeaderValue::Kind::Array); }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::json::exception& e) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 7: syntax error ... ;
    // last read: '...'": keep the part after the position, whose last token can be as long as
    // the header, cut short.
    std::string what = e.what();
    const std::size_t at = what.find(": ", what.find("parse error"));
    if (at != std::string::npos) what = what.substr(at + 2);
    if (what.size() > 200) what = what.substr(0, 200) + "...";
    error_ = "JSON header: " + what + " at byte " + std::to_string(position ? position - 1 : 0);
    return false;
  }

 private:
  // A pointer into the header that publishes how far nlohmann's lexer has read, so that a value
  // this reader refuses can be named by its byte offset. A forward iterator, whose operator++(int)
  // the lexer never calls: nvcc would warn that it is never referenced (#177-D).
#if defined(__NVCC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 177
#endif
  class ByteIterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;
    ByteIterator() = default;
    ByteIterator(const char* at, const char* begin, std::size_t* read)
        : at_(at), begin_(begin), read_(read) {}
    reference operator*() const { return *at_; }
    ByteIterator& operator++() {
      ++at_;
      if (read_) *read_ = std::size_t(at_ - begin_);
      return *this;
    }
    ByteIterator operator++(int) {
      ByteIterator before = *this;
      ++*this;
      return before;
    }
    // C++20 writes != from == (with both declared, == was never referenced).
    bool operator==(const ByteIterator& other) const { return at_ == other.at_; }

   private:
    const char* at_ = nullptr;
    const char* begin_ = nullptr;
    std::size_t* read_ = nullptr;
  };
#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif

  HeaderValue root_;
  std::vector<HeaderValue*> stack_;  // the open objects and arrays, outermost first
  std::string key_;                  // the key of the member being read
  std::size_t values_ = 0;
  std::size_t bytes_read_ = 0;
  std::string error_;

  std::size_t max_values_;
  int max_depth_;

  HeaderReader(std::size_t max_values, int max_depth)
      : max_values_(max_values), max_depth_(max_depth) {
    stack_.reserve(std::size_t(max_depth) + 1);
  }

  bool refuse(const std::string& why) {
    // The lexer has read the refused token's last byte (a number's, one byte further).
    error_ =
        "JSON header: " + why + " at byte " + std::to_string(bytes_read_ ? bytes_read_ - 1 : 0);
    return false;
  }
  // Counts a value and checks its depth, then adds it to the tree: the document, an item of the
  // innermost array or the member named key_ of the innermost object. Null when refused.
  HeaderValue* place(HeaderValue::Kind kind) {
    if (stack_.size() > std::size_t(max_depth_)) {
      refuse("nesting deeper than " + std::to_string(max_depth_));
      return nullptr;
    }
    if (++values_ > max_values_) {
      refuse("more than " + std::to_string(max_values_) + " values");
      return nullptr;
    }
    HeaderValue* value = &root_;
    if (!stack_.empty()) {
      HeaderValue& parent = *stack_.back();
      // An open container is its parent's last child, so the parent does not grow (and move
      // its children) until that container is closed.
      parent.children.push_back(
          HeaderMember{parent.is_object() ? std::move(key_) : std::string(), HeaderValue()});
      value = &parent.children.back().value;
    }
    value->kind = kind;
    return value;
  }
  bool open(HeaderValue::Kind kind) {
    HeaderValue* const placed = place(kind);
    if (!placed) return false;
    stack_.push_back(placed);
    return true;
  }
};

}  // namespace

bool read_json_header(std::string_view text, std::size_t max_values, int max_depth,
                      HeaderValue& root, std::string& error) {
  return HeaderReader::read(text, max_values, max_depth, root, error);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      static const char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace TernaryCounter::Impl
