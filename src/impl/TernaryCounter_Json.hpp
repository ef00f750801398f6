// A small strict JSON reader, just enough for safetensors headers: objects, arrays, strings
// (UTF-8, all escapes) and non-negative integers. Anything else (floats, negative numbers,
// true/false/null, duplicate keys, trailing bytes other than spaces, nesting deeper than 8,
// more than max_values values) is rejected with a message giving the byte offset. Host only.
//
// Its cost is bounded by the input, whatever the input: time O(n log n) in the text's length
// (duplicate keys are found by sorting each object's keys once), memory the text's length plus
// at most max_values values, each counted before it is stored.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace TernaryCounter::Impl {

struct JsonMember;

struct JsonValue {
  enum class Kind { Object, Array, String, Integer };
  Kind kind = Kind::Object;
  std::string string;
  std::uint64_t integer = 0;
  // JsonMember rather than std::pair<std::string, JsonValue>: std::pair's traits need the
  // complete JsonValue, which clang with libstdc++ refuses inside JsonValue itself.
  std::vector<JsonMember> members;  ///< object members, in file order
  std::vector<JsonValue> items;     ///< array items

  const JsonValue* find(std::string_view key) const;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

inline const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

class JsonReader {
 public:
  /// Values (object members and array items, the document included) one text may hold.
  static constexpr std::size_t max_values = std::size_t(1) << 18;

  explicit JsonReader(std::string_view text) : text_(text) {}

  /// Parses the whole text as one value followed only by spaces (safetensors pads with them).
  JsonValue parse_document() {
    skip_space();
    JsonValue value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected bytes after the JSON value");
    return value;
  }

 private:
  static constexpr int max_depth = 8;
  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON header: " + what + " at byte " + std::to_string(pos_));
  }
  bool at_end() const { return pos_ >= text_.size(); }
  unsigned char peek() const { return at_end() ? 0 : static_cast<unsigned char>(text_[pos_]); }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      ++pos_;
    }
  }
  void expect(char c) {
    if (at_end() || text_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  JsonValue parse_value(int depth) {
    if (depth > max_depth) fail("nesting deeper than 8");
    if (++values_ > max_values) fail("more than " + std::to_string(max_values) + " values");
    const unsigned char c = peek();
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') {
      JsonValue v;
      v.kind = JsonValue::Kind::String;
      v.string = parse_string();
      return v;
    }
    if (c >= '0' && c <= '9') return parse_integer();
    fail(at_end() ? "unexpected end" : "unsupported or invalid value");
  }

  JsonValue parse_object(int depth) {
    JsonValue v;
    v.kind = JsonValue::Kind::Object;
    expect('{');
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return v;
    }
    while (true) {
      skip_space();
      if (peek() != '"') fail("expected a string key");
      std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      JsonValue member = parse_value(depth + 1);
      v.members.push_back(JsonMember{std::move(key), std::move(member)});
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      reject_duplicate_keys(v);
      return v;
    }
  }

  // Comparing each key with the earlier ones would be quadratic in the number of keys.
  void reject_duplicate_keys(const JsonValue& object) const {
    std::vector<std::string_view> keys;
    keys.reserve(object.members.size());
    for (const auto& [k, member] : object.members) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    const auto twin = std::adjacent_find(keys.begin(), keys.end());
    if (twin != keys.end()) fail("duplicate key \"" + std::string(*twin) + "\"");
  }

  JsonValue parse_array(int depth) {
    JsonValue v;
    v.kind = JsonValue::Kind::Array;
    expect('[');
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return v;
    }
    while (true) {
      skip_space();
      v.items.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return v;
    }
  }

  JsonValue parse_integer() {
    JsonValue v;
    v.kind = JsonValue::Kind::Integer;
    const std::size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      const std::uint64_t digit = peek() - '0';
      if (v.integer > (UINT64_MAX - digit) / 10) fail("integer out of range");
      v.integer = v.integer * 10 + digit;
      ++pos_;
    }
    if (pos_ - start > 1 && text_[start] == '0') fail("integer with a leading zero");
    if (peek() == '.' || peek() == 'e' || peek() == 'E') fail("non-integer number");
    return v;
  }

  unsigned hex4() {
    unsigned value = 0;
    for (int k = 0; k < 4; ++k) {
      const unsigned char c = peek();
      unsigned d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        fail("bad \\u escape");
      value = value * 16 + d;
      ++pos_;
    }
    return value;
  }

  static void append_utf8(std::string& s, std::uint32_t cp) {
    if (cp < 0x80) {
      s += char(cp);
    } else if (cp < 0x800) {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += char(0xE0 | (cp >> 12));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    } else {
      s += char(0xF0 | (cp >> 18));
      s += char(0x80 | ((cp >> 12) & 0x3F));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    }
  }

  // One UTF-8 sequence starting at pos_ (well formed: no overlongs, surrogates or > U+10FFFF).
  void copy_utf8(std::string& s) {
    const unsigned char lead = peek();
    int extra;
    std::uint32_t cp, min;
    if (lead >= 0xC2 && lead <= 0xDF)
      extra = 1, cp = lead & 0x1F, min = 0x80;
    else if (lead >= 0xE0 && lead <= 0xEF)
      extra = 2, cp = lead & 0x0F, min = 0x800;
    else if (lead >= 0xF0 && lead <= 0xF4)
      extra = 3, cp = lead & 0x07, min = 0x10000;
    else
      fail("invalid UTF-8");
    const std::size_t start = pos_++;
    for (int k = 0; k < extra; ++k) {
      if ((peek() & 0xC0) != 0x80) fail("invalid UTF-8");
      cp = cp << 6 | (peek() & 0x3F);
      ++pos_;
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid UTF-8");
    s.append(text_.substr(start, pos_ - start));
  }

  std::string parse_string() {
    expect('"');
    std::string s;
    while (true) {
      if (at_end()) fail("unterminated string");
      const unsigned char c = peek();
      if (c == '"') {
        ++pos_;
        return s;
      }
      if (c < 0x20) fail("control character in a string");
      if (c >= 0x80) {
        copy_utf8(s);
        continue;
      }
      ++pos_;
      if (c != '\\') {
        s += char(c);
        continue;
      }
      const unsigned char e = peek();
      ++pos_;
      switch (e) {
        case '"':
          s += '"';
          break;
        case '\\':
          s += '\\';
          break;
        case '/':
          s += '/';
          break;
        case 'b':
          s += '\b';
          break;
        case 'f':
          s += '\f';
          break;
        case 'n':
          s += '\n';
          break;
        case 'r':
          s += '\r';
          break;
        case 't':
          s += '\t';
          break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (peek() != '\\') fail("lone high surrogate");
            ++pos_;
            if (peek() != 'u') fail("lone high surrogate");
            ++pos_;
            const std::uint32_t low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(s, cp);
          break;
        }
        default:
          --pos_;
          fail("bad escape");
      }
    }
  }
};

}  // namespace TernaryCounter::Impl
