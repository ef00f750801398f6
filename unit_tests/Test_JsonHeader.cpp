// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// checkpoint/impl/TernaryCounter_JsonHeader.cpp, the bounded JSON reader of a checkpoint's
// header: the tree it builds, what it refuses and at which byte, its value and depth limits, and
// json_string's escapes read back.
#include "Test_Helpers.hpp"

#include "checkpoint/impl/TernaryCounter_JsonHeader.hpp"

#include <string>

namespace TernaryCounter::Test {
namespace JsonHeaderTest {

using Impl::HeaderValue;

/// The error of a refused text (empty when it parses).
std::string refusal(const std::string& text, std::size_t max_values = 100, int max_depth = 8) {
  HeaderValue root;
  std::string error;
  return Impl::read_json_header(text, max_values, max_depth, root, error) ? std::string() : error;
}

TEST(JsonHeader, ReadsObjectsArraysStringsAndIntegersInFileOrder) {
  HeaderValue root;
  std::string error;
  ASSERT_TRUE(Impl::read_json_header(R"({"b":{"s":"x\u0041","n":[1,18446744073709551615]},"a":[]})",
                                     100, 8, root, error))
      << error;
  ASSERT_TRUE(root.is_object());
  ASSERT_EQ(root.children.size(), 2u);
  EXPECT_EQ(root.children[0].key, "b");  // file order, not sorted
  EXPECT_EQ(root.children[1].key, "a");
  const HeaderValue* b = root.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->find("s")->string, "xA");
  const HeaderValue* n = b->find("n");
  ASSERT_TRUE(n->is_array());
  ASSERT_EQ(n->children.size(), 2u);
  EXPECT_EQ(n->children[0].value.integer, 1u);
  EXPECT_EQ(n->children[1].value.integer, 18446744073709551615u);
  EXPECT_TRUE(root.find("a")->is_array());
  EXPECT_EQ(root.find("c"), nullptr);
}

TEST(JsonHeader, RefusesWhatAHeaderNeverHoldsNamingTheByte) {
  EXPECT_EQ(refusal(R"({"a":null})"), "JSON header: null is not allowed at byte 8");
  EXPECT_EQ(refusal(R"({"a":true})"), "JSON header: true and false are not allowed at byte 8");
  EXPECT_NE(refusal(R"({"a":-1})").find("negative number"), std::string::npos);
  EXPECT_NE(refusal(R"({"a":1.5})").find("non-integer number"), std::string::npos);
  EXPECT_NE(refusal(R"({"a":18446744073709551616})").find("integer out of range"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"k":1,"j":2,"k":3})"), "JSON header: duplicate key \"k\" at byte 18");
  EXPECT_EQ(refusal("\xEF\xBB\xBF{}"), "JSON header: a byte order mark at byte 0");
  EXPECT_NE(refusal(R"({"a":1)").find("JSON header: "), std::string::npos);  // unterminated
  EXPECT_NE(refusal("{\"a\":\"\xC3\"}"), "");                                // invalid UTF-8
}

TEST(JsonHeader, ValueCountAndDepthAreBoundedBeforeStoring) {
  // {"a":[1,2,3]} holds 5 values: the object, the array and its three items (a number is
  // named one byte past its end, where the lexer knows it has ended).
  EXPECT_EQ(refusal(R"({"a":[1,2,3]})", 5), "");
  EXPECT_EQ(refusal(R"({"a":[1,2,3]})", 4), "JSON header: more than 4 values at byte 11");
  // The innermost array of [[[[]]]] is inside 3 others.
  EXPECT_EQ(refusal("[[[[]]]]", 100, 3), "");
  EXPECT_EQ(refusal("[[[[[]]]]]", 100, 3), "JSON header: nesting deeper than 3 at byte 4");
}

TEST(JsonHeader, JsonStringEscapesReadBack) {
  const std::string text = std::string("q\"b\\n\nt\tc") + char(1) + char(0x1f) + "\xC3\xA9";
  const std::string literal = Impl::json_string(text);
  EXPECT_EQ(literal, "\"q\\\"b\\\\n\\nt\\tc\\u0001\\u001f\xC3\xA9\"");
  HeaderValue root;
  std::string error;
  ASSERT_TRUE(Impl::read_json_header("{" + literal + ":" + literal + "}", 10, 2, root, error))
      << error;
  ASSERT_EQ(root.children.size(), 1u);
  EXPECT_EQ(root.children[0].key, text);
  EXPECT_EQ(root.children[0].value.string, text);
}

}  // namespace JsonHeaderTest
}  // namespace TernaryCounter::Test
