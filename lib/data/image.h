// Images as bytes: decoding JPEG (libjpeg-turbo) and PNG (libpng), encoding
// JPEG, and the geometric operations sharding and augmentation need, by
// OpenCV's resampler (antialiased by area when shrinking, bilinear when
// growing). Pixels are uint8, height × width × channels (HWC), channels 1
// (gray) or 3 (RGB). docs/design.md says why these libraries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace shoal {

struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;  // height × width × channels

  size_t bytes() const { return static_cast<size_t>(width) * height * channels; }
};

// The largest image any reader decodes: a side of at most kMaxImageSide and
// at most kMaxImagePixels in all, checked from the header before a byte of
// pixels is allocated.
inline constexpr int kMaxImageSide = 1 << 15;
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 27;

enum class ImageCodec { kJpeg, kPng };

// The codec of encoded bytes, by their magic numbers; InvalidArgument for
// anything else.
Status SniffCodec(const uint8_t* data, size_t size, ImageCodec* codec);

// Decodes JPEG or PNG bytes into `channels` channels (1 or 3; 0: 1 for a
// gray image, 3 for any other). A JPEG is decoded at the smallest of
// libjpeg-turbo's DCT scales 1/8, 1/4, 1/2 and 1 that keeps it at least `min_width` ×
// `min_height` (0: full size). InvalidArgument for a header out of bounds
// (kMaxImageSide, kMaxImagePixels), Corruption for bytes the codec cannot
// decode (a truncated or corrupt file). Also InvalidArgument for `channels`
// not 0, 1 or 3 and for bytes neither JPEG nor PNG, and IOError where
// libjpeg-turbo cannot start. *out may be part-filled on error.
Status DecodeImage(const uint8_t* data, size_t size, int channels, Image* out, int min_width = 0,
                   int min_height = 0);

// The image's width and height from its header alone. Fails as DecodeImage
// does for a header; *width and *height may be set on error.
Status ImageSize(const uint8_t* data, size_t size, int* width, int* height);

// `image` as a JPEG of `quality` (1..100), 4:2:0 chroma for colour.
// InvalidArgument for another quality, IOError where libjpeg-turbo cannot
// start or encode; *out is unchanged on error.
Status EncodeJpeg(const Image& image, int quality, std::string* out);

// `in` scaled so that its shorter side is `side`, the aspect kept. Fails,
// naming both sizes, where the result would hold more than kMaxImagePixels
// (a long, thin image scaled up): InvalidArgument, *out unchanged.
Status ResizeShorterSide(const Image& in, int side, Image* out);

// Where a centred window of `crop` starts along a side of `side`, as
// torchvision's center_crop places it: the offset rounded half to even (as
// Python's round) where the window fits, and where it does not, minus the
// zeros torchvision pads the side with before it (half the difference,
// rounded down).
int CenterOffset(int side, int crop);

// The central `width` × `height` of `in`, as torchvision's CenterCrop: where
// `in` is smaller, it sits in the middle of zeros (CenterOffset).
void CenterCrop(const Image& in, int width, int height, Image* out);

// The rectangle (x, y, w, h) of `in` scaled to `out_w` × `out_h`: antialiased
// where it shrinks, bilinear where it grows.
void ResizeRegion(const Image& in, int x, int y, int w, int h, int out_w, int out_h, Image* out);

// `in` with `channels` channels (1 or 3): gray repeated, or colour averaged
// by the ITU-R BT.601 weights, as libjpeg does.
void ConvertChannels(const Image& in, int channels, Image* out);

// Makes OpenCV's resampler run on the calling thread only: its callers
// (dl-shard's and the loader's threads) split the work themselves.
void UseOneResamplerThread();

}  // namespace shoal
