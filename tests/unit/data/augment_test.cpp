// Tests for lib/data/augment: records become channels × height × width
// floats, every draw is a function of (seed, pass, record) alone, crops pad
// with zeros as torchvision's do, and a data section that cannot apply to
// the records is refused naming the field.
#include "data/augment.h"

#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "data/image.h"
#include "test_util.h"

namespace shoal {
namespace {

Manifest Raw(int channels, int height, int width) {
  Manifest m;
  m.record_shape = {channels, height, width};
  m.classes = 2;
  m.mean.assign(channels, 0.5);
  m.std.assign(channels, 0.25);
  return m;
}

// A record whose pixel (y, x, c) is 10·y + x + 100·c (HWC, as shards store it).
std::vector<uint8_t> Pixels(int channels, int height, int width) {
  std::vector<uint8_t> p;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) p.push_back(static_cast<uint8_t>(10 * y + x + 100 * c));
  return p;
}

std::vector<float> Apply(const Augmenter& a, const std::vector<uint8_t>& record, uint64_t key,
                         uint64_t pass) {
  std::vector<float> out(NumElements(a.output_shape()));
  REQUIRE(a.Apply(record, key, pass, out.data()).ok());
  return out;
}

TEST_CASE("without augmentation, a record's pixels scaled to [0, 1], channels first") {
  Augmenter a;
  REQUIRE(Augmenter::Make(AugmentConfig(), Raw(3, 2, 4), true, 1, &a).ok());
  CHECK(a.output_shape() == Shape{3, 2, 4});
  const std::vector<float> out = Apply(a, Pixels(3, 2, 4), 0, 0);
  CHECK(out[0] == 0.0f);
  CHECK(out[1] == 1.0f * (1.0f / 255.0f));
  CHECK(out[8] == 100.0f * (1.0f / 255.0f));  // channel 1's plane
  CHECK(out[4] == 10.0f * (1.0f / 255.0f));   // row 1
}

TEST_CASE("normalize subtracts each channel's mean and divides by its deviation") {
  AugmentConfig c;
  c.normalize = true;
  Augmenter a;
  REQUIRE(Augmenter::Make(c, Raw(1, 1, 2), false, 1, &a).ok());
  const std::vector<float> out = Apply(a, {0, 255}, 0, 0);
  CHECK(out[0] == doctest::Approx(-2.0));
  CHECK(out[1] == doctest::Approx(2.0));
  c.mean = {0.0};
  c.std = {1.0};
  REQUIRE(Augmenter::Make(c, Raw(1, 1, 2), false, 1, &a).ok());
  CHECK(Apply(a, {0, 255}, 0, 0)[1] == doctest::Approx(1.0));
}

TEST_CASE("random crops and flips are a function of the seed, the pass and the record alone") {
  AugmentConfig c;
  c.random_crop = 4;
  c.crop_pad = 2;
  c.mirror = true;
  c.center_crop = 4;  // evaluation's shape must be training's
  Augmenter a, b, other;
  REQUIRE(Augmenter::Make(c, Raw(1, 6, 6), true, 7, &a).ok());
  REQUIRE(Augmenter::Make(c, Raw(1, 6, 6), true, 7, &b).ok());
  REQUIRE(Augmenter::Make(c, Raw(1, 6, 6), true, 8, &other).ok());
  const std::vector<uint8_t> record = Pixels(1, 6, 6);
  CHECK(Apply(a, record, 3, 1) == Apply(b, record, 3, 1));
  std::set<std::vector<float>> seen;
  for (uint64_t key = 0; key < 20; ++key) seen.insert(Apply(a, record, key, 0));
  CHECK(seen.size() > 5);  // many crops and flips
  int differ = 0;
  for (uint64_t key = 0; key < 20; ++key) differ += Apply(a, record, key, 0) != Apply(other, record, key, 0);
  CHECK(differ > 10);
  CHECK(Apply(a, record, 3, 0) != Apply(a, record, 3, 1));
  // Padding reads as a zero pixel: with an offset into the pad, a row or column of zeros.
  bool zeros = false;
  for (const std::vector<float>& out : seen) zeros = zeros || out[0] == 0.0f;
  CHECK(zeros);
  // Evaluation draws nothing: the central 4 × 4.
  Augmenter eval;
  REQUIRE(Augmenter::Make(c, Raw(1, 6, 6), false, 7, &eval).ok());
  CHECK(Apply(eval, record, 1, 0) == Apply(eval, record, 2, 5));
  CHECK(Apply(eval, record, 1, 0)[0] == 11.0f * (1.0f / 255.0f));  // the centre's top-left is (1, 1)
}

TEST_CASE("every random crop of a padded image, flipped or not, is its window with zeros outside") {
  for (const int channels : {1, 3}) {
    CAPTURE(channels);
    AugmentConfig c;
    c.random_crop = 4;
    c.crop_pad = 3;  // windows reaching past the image on either side, wholly outside some rows
    c.mirror = true;
    c.center_crop = 4;
    Augmenter a;
    REQUIRE(Augmenter::Make(c, Raw(channels, 5, 6), true, 3, &a).ok());
    const std::vector<uint8_t> record = Pixels(channels, 5, 6);
    // The window at (ox, oy), flipped or not, as the crop defines it pixel by pixel.
    auto window = [&](int ox, int oy, bool flip) {
      std::vector<float> w;
      for (int ch = 0; ch < channels; ++ch)
        for (int y = 0; y < 4; ++y)
          for (int x = 0; x < 4; ++x) {
            const int sx = (flip ? 3 - x : x) + ox, sy = y + oy;
            const bool inside = sx >= 0 && sx < 6 && sy >= 0 && sy < 5;
            w.push_back(inside ? record[(sy * 6 + sx) * channels + ch] * (1.0f / 255.0f) : 0.0f);
          }
      return w;
    };
    std::set<std::vector<int>> found;
    for (uint64_t key = 0; key < 200; ++key) {
      const std::vector<float> out = Apply(a, record, key, 0);
      bool matched = false;
      for (int ox = -3; ox <= 5 && !matched; ++ox)
        for (int oy = -3; oy <= 4 && !matched; ++oy)
          for (const bool flip : {false, true})
            if (window(ox, oy, flip) == out) {
              found.insert({ox, oy, flip});
              matched = true;
              break;
            }
      CHECK_MESSAGE(matched, "record key " << key);
    }
    CHECK(found.size() > 40);  // the edges' windows among them
  }
}

TEST_CASE(
    "a random resized crop of a JPEG record gives size × size, decoded at a smaller scale when it can") {
  Image image{96, 64, 3, std::vector<uint8_t>(96 * 64 * 3, 80)};
  std::string jpeg;
  REQUIRE(EncodeJpeg(image, 90, &jpeg).ok());
  Manifest m = Raw(3, 0, 0);
  m.stored = StoredForm::kJpeg;
  AugmentConfig c;
  c.resized_crop = 24;
  c.resize = 32;
  c.center_crop = 24;
  Augmenter train, eval;
  REQUIRE(Augmenter::Make(c, m, true, 1, &train).ok());
  REQUIRE(Augmenter::Make(c, m, false, 1, &eval).ok());
  CHECK(train.output_shape() == Shape{3, 24, 24});
  const std::vector<uint8_t> record(jpeg.begin(), jpeg.end());
  for (uint64_t key = 0; key < 10; ++key) {
    const std::vector<float> out = Apply(train, record, key, 0);
    CHECK(out[0] == doctest::Approx(80.0 / 255.0).epsilon(0.05));
  }
  CHECK(Apply(eval, record, 0, 0) == Apply(eval, record, 9, 9));
  std::vector<float> out(3 * 24 * 24);
  const std::vector<uint8_t> broken(record.begin(), record.begin() + 100);
  const Status s = train.Apply(broken, 0, 0, out.data());
  INFO(s.ToString());
  CHECK(s.IsCorruption());
}

TEST_CASE("a centre crop larger than the image pads it with zeros around, as torchvision's CenterCrop") {
  // Fashion-MNIST's 28 × 28 in ResNet-20's 32 × 32: two zeros a side.
  AugmentConfig c;
  c.center_crop = 8;
  Augmenter a;
  REQUIRE(Augmenter::Make(c, Raw(1, 5, 4), false, 1, &a).ok());
  CHECK(a.output_shape() == Shape{1, 8, 8});
  const std::vector<float> out = Apply(a, Pixels(1, 5, 4), 0, 0);
  // torchvision pads (8 − 4) / 2 = 2 columns on the left, and (8 − 5) / 2 = 1 row on top.
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) {
      const int sy = y - 1, sx = x - 2;
      const bool inside = sy >= 0 && sy < 5 && sx >= 0 && sx < 4;
      CAPTURE(y);
      CAPTURE(x);
      CHECK(out[y * 8 + x] == (inside ? (10.0f * sy + sx) * (1.0f / 255.0f) : 0.0f));
    }
}

TEST_CASE("a centre crop's offset rounds half to even, as torchvision's round() does") {
  CHECK(CenterOffset(33, 32) == 0);  // 0.5
  CHECK(CenterOffset(35, 32) == 2);  // 1.5
  CHECK(CenterOffset(37, 32) == 2);  // 2.5
  CHECK(CenterOffset(36, 32) == 2);
  CHECK(CenterOffset(28, 32) == -2);
  CHECK(CenterOffset(27, 32) == -2);  // torchvision pads 2 before, 3 after
}

TEST_CASE("a data section that cannot apply to the records is refused, naming the field") {
  Augmenter a;
  AugmentConfig c;
  c.random_crop = 40;
  CHECK(Contains(Augmenter::Make(c, Raw(1, 28, 28), true, 1, &a).message(), "data.random_crop 40 is larger"));
  c = AugmentConfig();
  c.random_crop = 24;
  CHECK(Contains(Augmenter::Make(c, Raw(1, 28, 28), true, 1, &a).message(), "set data.center_crop"));
  c = AugmentConfig();
  c.normalize = true;
  Manifest unmeasured = Raw(3, 8, 8);
  unmeasured.mean.clear();
  CHECK(Contains(Augmenter::Make(c, unmeasured, true, 1, &a).message(), "data.normalize needs a mean"));
  Manifest varied = Raw(3, 0, 0);
  varied.stored = StoredForm::kJpeg;
  CHECK(Contains(Augmenter::Make(AugmentConfig(), varied, true, 1, &a).message(), "differ in size"));
  Manifest text;
  text.record_shape = {51};
  text.vocabulary = {97, 98};
  CHECK(Contains(Augmenter::Make(AugmentConfig(), text, true, 1, &a).message(), "apply to images"));
}

}  // namespace
}  // namespace shoal
