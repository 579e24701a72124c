// Tests for lib/data/image: JPEG and PNG decode what their encoders wrote,
// headers out of bounds are refused before pixels are allocated, damaged
// files are errors, and the geometric operations keep their sizes.
#include "data/image.h"

#include <doctest/doctest.h>
#include <png.h>

#include <random>
#include <string>

#include "test_util.h"

namespace shoal {
namespace {

Image Gradient(int width, int height, int channels) {
  Image image{width, height, channels, {}};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) image.pixels.push_back(static_cast<uint8_t>(2 * x + y + 40 * c));
  return image;
}

std::string Png(const Image& image) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = image.width;
  png.height = image.height;
  png.format = image.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), 0, nullptr);
  std::string bytes(size, '\0');
  REQUIRE(png_image_write_to_memory(&png, bytes.data(), &size, 0, image.pixels.data(), 0, nullptr));
  bytes.resize(size);
  return bytes;
}

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

TEST_CASE("a PNG decodes to the pixels it was written from, gray or RGB") {
  for (int channels : {1, 3}) {
    const Image original = Gradient(7, 5, channels);
    const std::string png = Png(original);
    Image back;
    REQUIRE(DecodeImage(Bytes(png), png.size(), 0, &back).ok());
    CHECK(back.width == 7);
    CHECK(back.height == 5);
    CHECK(back.channels == channels);
    CHECK(back.pixels == original.pixels);
    // Asked for the other channel count, it converts.
    REQUIRE(DecodeImage(Bytes(png), png.size(), 4 - channels, &back).ok());
    CHECK(back.channels == 4 - channels);
  }
}

TEST_CASE("a JPEG decodes close to what it encoded, and at a smaller DCT scale when asked") {
  const Image original = Gradient(64, 48, 3);
  std::string jpeg;
  REQUIRE(EncodeJpeg(original, 95, &jpeg).ok());
  Image back;
  REQUIRE(DecodeImage(Bytes(jpeg), jpeg.size(), 3, &back).ok());
  REQUIRE(back.width == 64);
  REQUIRE(back.height == 48);
  int worst = 0;
  for (size_t i = 0; i < back.pixels.size(); ++i)
    worst = std::max(worst, std::abs(back.pixels[i] - original.pixels[i]));
  CHECK(worst <= 12);
  int width = 0, height = 0;
  REQUIRE(ImageSize(Bytes(jpeg), jpeg.size(), &width, &height).ok());
  CHECK(width == 64);
  CHECK(height == 48);
  // At least 16 × 12: a quarter of each side is the smallest scale that keeps it.
  REQUIRE(DecodeImage(Bytes(jpeg), jpeg.size(), 3, &back, 16, 12).ok());
  CHECK(back.width == 16);
  CHECK(back.height == 12);
  // At least 40 × 30, which 5/8 would give, it decodes whole: only halves shrink in the DCT.
  REQUIRE(DecodeImage(Bytes(jpeg), jpeg.size(), 3, &back, 40, 30).ok());
  CHECK(back.width == 64);
  CHECK(back.height == 48);
}

TEST_CASE("damaged and foreign bytes are errors, never a crash") {
  const Image original = Gradient(32, 32, 3);
  std::string jpeg;
  REQUIRE(EncodeJpeg(original, 90, &jpeg).ok());
  Image out;
  Status s = DecodeImage(Bytes(jpeg), jpeg.size() / 2, 3, &out);  // truncated
  INFO(s.ToString());
  CHECK(s.IsCorruption());
  s = DecodeImage(nullptr, 0, 0, &out);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "an empty file");
  const std::string text = "GIF89a not an image";
  CHECK(DecodeImage(Bytes(text), text.size(), 0, &out).message() == "neither a JPEG nor a PNG");
  const std::string png = Png(Gradient(4, 4, 1));
  CHECK(DecodeImage(Bytes(png), png.size() / 2, 0, &out).IsCorruption());
  CHECK(!DecodeImage(Bytes(png), png.size(), 2, &out).ok());  // two channels are not an image here
}

TEST_CASE("a PNG header claiming 100000 × 100000 pixels is refused before its pixels are allocated") {
  std::string png = Png(Gradient(4, 4, 1));
  // IHDR's width and height follow the 8-byte signature, the chunk's length and type.
  for (int at : {16, 20}) {
    png[at] = 0, png[at + 1] = 0x01, png[at + 2] = static_cast<char>(0x86),
    png[at + 3] = static_cast<char>(0xa0);
  }
  // The chunk's CRC is left wrong on purpose: libpng or the size check must refuse it either way.
  Image out;
  Status s = DecodeImage(Bytes(png), png.size(), 0, &out);
  CHECK(!s.ok());
  CHECK(out.pixels.size() < (1u << 20));
}

TEST_CASE("resizing keeps the aspect of the shorter side, crops take the centre") {
  const Image wide = Gradient(100, 50, 3);
  Image out;
  REQUIRE(ResizeShorterSide(wide, 20, &out).ok());
  CHECK(out.width == 40);
  CHECK(out.height == 20);
  REQUIRE(ResizeShorterSide(Gradient(30, 90, 1), 10, &out).ok());
  CHECK(out.width == 10);
  CHECK(out.height == 30);
  // A long, thin image scaled up would be larger than any image read: refused, not allocated.
  const Status s = ResizeShorterSide(Gradient(4096, 1, 1), 4096, &out);
  CHECK(s.message() ==
        "an image of 4096 × 1 scaled to a shorter side of 4096 would hold more than 134217728 pixels");
  CenterCrop(wide, 10, 10, &out);
  CHECK(out.width == 10);
  CHECK(out.height == 10);
  // The crop's top-left is the source's (45, 20).
  CHECK(out.pixels[0] == wide.pixels[(20 * 100 + 45) * 3]);
  ResizeRegion(wide, 0, 0, 100, 50, 100, 50, &out);
  CHECK(out.pixels == wide.pixels);
}

TEST_CASE("shrinking stripes as fine as the pixels leaves their mean, not a moire, at any ratio") {
  // Columns alternate 0 and 255: each output pixel must average several of them.
  Image stripes;
  stripes.width = 480;
  stripes.height = 6;
  stripes.channels = 1;
  stripes.pixels.resize(stripes.bytes());
  for (size_t i = 0; i < stripes.pixels.size(); ++i) stripes.pixels[i] = (i % 480) % 2 ? 255 : 0;
  // Rows kept, shrunk by less than half, by half or more, or grown.
  for (const int out_h : {6, 4, 2, 9}) {
    for (const int out_w : {400, 330, 300, 260, 240, 150}) {
      CAPTURE(out_h);
      CAPTURE(out_w);
      Image out;
      ResizeRegion(stripes, 0, 0, 480, 6, out_w, out_h, &out);
      REQUIRE(out.width == out_w);
      REQUIRE(out.height == out_h);
      int lo = 255, hi = 0;
      for (int x = 1; x < out_w - 1; ++x) {
        lo = std::min<int>(lo, out.pixels[out_w + x]);
        hi = std::max<int>(hi, out.pixels[out_w + x]);
      }
      // Area averaging's own spread at the worst ratio here (1.2) is 42 to 212;
      // bilinear interpolation alone leaves 26 to 229.
      CHECK(lo >= 40);
      CHECK(hi <= 215);
    }
  }
}

TEST_CASE("a centre crop larger than the image pads it with zeros, as torchvision's CenterCrop") {
  // 5 wide, 3 high into 8 × 2: 1 zero column left of it, 2 right (torchvision pads (8 − 5) / 2
  // before), and rows 0 and 1 of it (round((3 − 2) / 2) = 0, half to even).
  const Image small = Gradient(5, 3, 3);
  Image out;
  CenterCrop(small, 8, 2, &out);
  REQUIRE(out.width == 8);
  REQUIRE(out.height == 2);
  REQUIRE(out.channels == 3);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 8; ++x)
      for (int ch = 0; ch < 3; ++ch) {
        const bool inside = x >= 1 && x < 6;
        const uint8_t want = inside ? small.pixels[(y * 5 + x - 1) * 3 + ch] : 0;
        INFO("x " << x << " y " << y << " channel " << ch);
        CHECK(out.pixels[(y * 8 + x) * 3 + ch] == want);
      }
  CHECK(CenterOffset(5, 8) == -1);
  CHECK(CenterOffset(3, 2) == 0);
}

}  // namespace
}  // namespace shoal
