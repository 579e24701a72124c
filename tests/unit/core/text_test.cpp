// Tests for lib/core/text: UTF-8 checked, outside text quoted safely.
#include "core/text.h"

#include <doctest/doctest.h>

#include <string>

namespace shoal {
namespace {

TEST_CASE("UTF-8: well-formed sequences pass; stray, overlong, surrogate and cut sequences do not") {
  CHECK(IsUtf8(""));
  CHECK(IsUtf8("plain"));
  CHECK(IsUtf8("α·x − c ✓ 😀"));
  CHECK(!IsUtf8("\xff"));
  CHECK(!IsUtf8("\xc0\xaf"));          // overlong '/'
  CHECK(!IsUtf8("\xed\xa0\x80"));      // a surrogate
  CHECK(!IsUtf8("\xe2\x82"));          // cut short
  CHECK(!IsUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST_CASE("plain names: letters, digits, _ . - only, 1 to 128 of them") {
  CHECK(IsPlainName("conv1", 128));
  CHECK(IsPlainName("inception_3a-1x1.weight", 128));
  CHECK(IsPlainName(std::string(128, 'a'), 128));
  CHECK_FALSE(IsPlainName("", 128));
  CHECK_FALSE(IsPlainName(std::string(129, 'a'), 128));
  CHECK_FALSE(IsPlainName("../x", 128));
  CHECK_FALSE(IsPlainName("a b", 128));
  CHECK_FALSE(IsPlainName("fc\"1", 128));
  CHECK_FALSE(IsPlainName(std::string("fc\0", 3), 128));
  CHECK_FALSE(IsPlainName("α", 128));
}

TEST_CASE("Quoted puts text in single quotes, escapes what is not printable UTF-8 and cuts it short") {
  CHECK(Quoted("fc1") == "'fc1'");
  CHECK(Quoted("a\nb\xff") == "'a\\x0Ab\\xFF'");
  CHECK(Quoted("α") == "'α'");
  const std::string long_text(1000, 'x');
  const std::string q = Quoted(long_text, 10);
  CHECK(q == "'" + std::string(10, 'x') + "...'");
}

}  // namespace
}  // namespace shoal
