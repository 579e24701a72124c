#include "data/image.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace shoal {
namespace {

// One TurboJPEG handle of each kind per thread: a handle is not thread-safe,
// and making one allocates.
struct TjHandle {
  explicit TjHandle(tjhandle h) : handle(h) {}
  ~TjHandle() {
    if (handle) tjDestroy(handle);
  }
  tjhandle handle;
};

// A thread's decompressor; `fresh` replaces it (after a failed decode, which
// can leave a handle's state half-way).
tjhandle Decompressor(bool fresh = false) {
  thread_local TjHandle h(tjInitDecompress());
  if (fresh) {
    if (h.handle) tjDestroy(h.handle);
    h.handle = tjInitDecompress();
  }
  return h.handle;
}

tjhandle Compressor() {
  thread_local TjHandle h(tjInitCompress());
  return h.handle;
}

Status CheckSize(int width, int height) {
  if (width < 1 || height < 1 || width > kMaxImageSide || height > kMaxImageSide ||
      static_cast<int64_t>(width) * height > kMaxImagePixels)
    return Status::InvalidArgument("an image of " + std::to_string(width) + " × " + std::to_string(height) +
                                   " pixels: at most " + std::to_string(kMaxImageSide) + " a side and " +
                                   std::to_string(kMaxImagePixels) + " in all are read");
  return Status::Ok();
}

Status JpegHeader(const uint8_t* data, size_t size, int* width, int* height, int* colorspace) {
  tjhandle tj = Decompressor();
  if (!tj) return Status::IOError("cannot start libjpeg-turbo");
  int subsampling = 0;
  if (tjDecompressHeader3(tj, data, static_cast<unsigned long>(size), width, height, &subsampling,
                          colorspace) != 0) {
    const Status s = Status::Corruption(std::string("not a readable JPEG: ") + tjGetErrorStr2(tj));
    Decompressor(/*fresh=*/true);
    return s;
  }
  // A header cut short reads as an image of no pixels.
  if (*width == 0 || *height == 0) return Status::Corruption("not a readable JPEG: its header ends early");
  return CheckSize(*width, *height);
}

// The smallest DCT scale of 1/2, 1/4 or 1/8 that keeps the image at least
// min_width × min_height. libjpeg-turbo has vector code for those scales only:
// at 3/4 or 7/8 the decode takes longer than at full size.
tjscalingfactor JpegScale(int width, int height, int min_width, int min_height) {
  tjscalingfactor best{1, 1};
  if (min_width <= 0 && min_height <= 0) return best;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  for (int i = 0; i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num != 1) continue;
    if (TJSCALED(width, f) < min_width || TJSCALED(height, f) < min_height) continue;
    if (f.num * best.denom < best.num * f.denom) best = f;
  }
  return best;
}

Status DecodeJpeg(const uint8_t* data, size_t size, int channels, Image* out, int min_width, int min_height) {
  int width = 0, height = 0, colorspace = 0;
  SHOAL_RETURN_IF_ERROR(JpegHeader(data, size, &width, &height, &colorspace));
  if (channels == 0) channels = colorspace == TJCS_GRAY ? 1 : 3;
  const tjscalingfactor scale = JpegScale(width, height, min_width, min_height);
  out->width = TJSCALED(width, scale);
  out->height = TJSCALED(height, scale);
  out->channels = channels;
  out->pixels.resize(out->bytes());
  tjhandle tj = Decompressor();
  // A warning (a truncated file, a corrupt segment) fails the decode: a
  // record of half an image is worse than none.
  if (tjDecompress2(tj, data, static_cast<unsigned long>(size), out->pixels.data(), out->width, 0,
                    out->height, channels == 1 ? TJPF_GRAY : TJPF_RGB, TJFLAG_STOPONWARNING) != 0) {
    const Status s = Status::Corruption(std::string("a JPEG that does not decode: ") + tjGetErrorStr2(tj));
    Decompressor(/*fresh=*/true);
    return s;
  }
  return Status::Ok();
}

Status DecodePng(const uint8_t* data, size_t size, int channels, Image* out) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, data, size)) {
    const std::string why = png.message;
    png_image_free(&png);
    return Status::Corruption("not a readable PNG: " + why);
  }
  std::unique_ptr<png_image, void (*)(png_image*)> guard(&png, png_image_free);
  SHOAL_RETURN_IF_ERROR(CheckSize(static_cast<int>(png.width), static_cast<int>(png.height)));
  if (channels == 0) channels = (png.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
  png.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  out->width = static_cast<int>(png.width);
  out->height = static_cast<int>(png.height);
  out->channels = channels;
  out->pixels.resize(out->bytes());
  if (!png_image_finish_read(&png, nullptr, out->pixels.data(), 0, nullptr))
    return Status::Corruption(std::string("a PNG that does not decode: ") + png.message);
  return Status::Ok();
}

cv::Mat Wrap(const Image& image) {
  return cv::Mat(image.height, image.width, CV_8UC(image.channels),
                 const_cast<uint8_t*>(image.pixels.data()));
}

}  // namespace

Status SniffCodec(const uint8_t* data, size_t size, ImageCodec* codec) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) {
    *codec = ImageCodec::kJpeg;
    return Status::Ok();
  }
  if (size >= 8 && std::equal(kPng, kPng + 8, data)) {
    *codec = ImageCodec::kPng;
    return Status::Ok();
  }
  return Status::InvalidArgument(size == 0 ? "an empty file" : "neither a JPEG nor a PNG");
}

Status DecodeImage(const uint8_t* data, size_t size, int channels, Image* out, int min_width,
                   int min_height) {
  if (channels != 0 && channels != 1 && channels != 3)
    return Status::InvalidArgument("images have 1 or 3 channels, not " + std::to_string(channels));
  ImageCodec codec;
  SHOAL_RETURN_IF_ERROR(SniffCodec(data, size, &codec));
  return codec == ImageCodec::kJpeg ? DecodeJpeg(data, size, channels, out, min_width, min_height)
                                    : DecodePng(data, size, channels, out);
}

Status ImageSize(const uint8_t* data, size_t size, int* width, int* height) {
  ImageCodec codec;
  SHOAL_RETURN_IF_ERROR(SniffCodec(data, size, &codec));
  if (codec == ImageCodec::kJpeg) {
    int colorspace = 0;
    return JpegHeader(data, size, width, height, &colorspace);
  }
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  const bool read = png_image_begin_read_from_memory(&png, data, size);
  const std::string why = read ? "" : png.message;
  *width = static_cast<int>(png.width);
  *height = static_cast<int>(png.height);
  png_image_free(&png);
  if (!read) return Status::Corruption("not a readable PNG: " + why);
  return CheckSize(*width, *height);
}

Status EncodeJpeg(const Image& image, int quality, std::string* out) {
  if (quality < 1 || quality > 100)
    return Status::InvalidArgument("JPEG quality " + std::to_string(quality) + ": from 1 to 100");
  tjhandle tj = Compressor();
  if (!tj) return Status::IOError("cannot start libjpeg-turbo");
  unsigned char* jpeg = nullptr;
  unsigned long jpeg_size = 0;
  const bool gray = image.channels == 1;
  if (tjCompress2(tj, image.pixels.data(), image.width, 0, image.height, gray ? TJPF_GRAY : TJPF_RGB, &jpeg,
                  &jpeg_size, gray ? TJSAMP_GRAY : TJSAMP_420, quality, 0) != 0) {
    tjFree(jpeg);
    return Status::IOError(std::string("libjpeg-turbo cannot encode: ") + tjGetErrorStr2(tj));
  }
  out->assign(reinterpret_cast<const char*>(jpeg), jpeg_size);
  tjFree(jpeg);
  return Status::Ok();
}

void ResizeRegion(const Image& in, int x, int y, int w, int h, int out_w, int out_h, Image* out) {
  const double rx = static_cast<double>(w) / out_w, ry = static_cast<double>(h) / out_h;
  if ((rx < 1 && ry > 1) || (rx > 1 && ry < 1)) {
    // One side grows and the other shrinks: shrunk first, then grown.
    Image shrunk;
    ResizeRegion(in, x, y, w, h, rx > 1 ? out_w : w, ry > 1 ? out_h : h, &shrunk);
    return ResizeRegion(shrunk, 0, 0, shrunk.width, shrunk.height, out_w, out_h, out);
  }
  out->width = out_w;
  out->height = out_h;
  out->channels = in.channels;
  out->pixels.resize(out->bytes());
  const cv::Mat region = Wrap(in)(cv::Rect(x, y, w, h));
  cv::Mat dst(out_h, out_w, CV_8UC(in.channels), out->pixels.data());
  if (out_w == w && out_h == h) {
    region.copyTo(dst);
    return;
  }
  if (rx <= 1 && ry <= 1) {
    cv::resize(region, dst, dst.size(), 0, 0, cv::INTER_LINEAR);
    return;
  }
  if (rx >= 2 || ry >= 2) {
    // Shrinking by half or more averages each output pixel's area, which
    // leaves nothing to alias.
    cv::resize(region, dst, dst.size(), 0, 0, cv::INTER_AREA);
    return;
  }
  // Shrinking by less than half, OpenCV's area averaging runs scalar code.
  // Instead each source pixel becomes the mean of the r × r box around it
  // (three taps a side, the outer two weighted by the box's overhang), and
  // bilinear interpolation reads the output between them: both vectorised,
  // and they alias no more than area averaging.
  const auto box = [](double r) {
    const float edge = static_cast<float>((r - 1) / 2 / r), centre = static_cast<float>(1 / r);
    return cv::Mat_<float>({3, 1}, {edge, centre, edge});
  };
  // Kept from call to call: fresh pages for every image cost more than the resize.
  thread_local std::vector<uint8_t> kept;
  kept.resize(static_cast<size_t>(w) * h * in.channels);
  cv::Mat averaged(h, w, region.type(), kept.data());
  cv::sepFilter2D(region, averaged, -1, box(rx), box(ry), cv::Point(-1, -1), 0,
                  cv::BORDER_REPLICATE | cv::BORDER_ISOLATED);
  cv::resize(averaged, dst, dst.size(), 0, 0, cv::INTER_LINEAR);
}

Status ResizeShorterSide(const Image& in, int side, Image* out) {
  const bool wide = in.width >= in.height;
  const double scale = static_cast<double>(side) / (wide ? in.height : in.width);
  // As torchvision's Resize(side): the longer side scaled and truncated.
  const double longer = std::max(1.0, std::floor((wide ? in.width : in.height) * scale));
  if (longer * side > static_cast<double>(kMaxImagePixels))
    return Status::InvalidArgument("an image of " + std::to_string(in.width) + " × " +
                                   std::to_string(in.height) + " scaled to a shorter side of " +
                                   std::to_string(side) + " would hold more than " +
                                   std::to_string(kMaxImagePixels) + " pixels");
  const int w = wide ? static_cast<int>(longer) : side, h = wide ? side : static_cast<int>(longer);
  ResizeRegion(in, 0, 0, in.width, in.height, w, h, out);
  return Status::Ok();
}

int CenterOffset(int side, int crop) {
  if (side < crop) return -((crop - side) / 2);
  return static_cast<int>(std::nearbyint((side - crop) / 2.0));  // the default rounding: half to even
}

void CenterCrop(const Image& in, int width, int height, Image* out) {
  const int ox = CenterOffset(in.width, width), oy = CenterOffset(in.height, height);
  if (ox >= 0 && oy >= 0) return ResizeRegion(in, ox, oy, width, height, width, height, out);
  // The window reaches past the image: what it covers, among zeros.
  out->width = width;
  out->height = height;
  out->channels = in.channels;
  out->pixels.assign(out->bytes(), 0);
  const int x0 = std::max(ox, 0), x1 = std::min(in.width, ox + width);
  const size_t pixel = in.channels;
  for (int y = std::max(oy, 0); y < std::min(in.height, oy + height); ++y)
    std::memcpy(out->pixels.data() + ((static_cast<size_t>(y - oy) * width) + (x0 - ox)) * pixel,
                in.pixels.data() + (static_cast<size_t>(y) * in.width + x0) * pixel, (x1 - x0) * pixel);
}

void ConvertChannels(const Image& in, int channels, Image* out) {
  if (in.channels == channels) {
    *out = in;
    return;
  }
  out->width = in.width;
  out->height = in.height;
  out->channels = channels;
  out->pixels.resize(out->bytes());
  cv::Mat dst(in.height, in.width, CV_8UC(channels), out->pixels.data());
  cv::cvtColor(Wrap(in), dst, channels == 1 ? cv::COLOR_RGB2GRAY : cv::COLOR_GRAY2RGB);
}

void UseOneResamplerThread() { cv::setNumThreads(0); }

}  // namespace shoal
