#include "data/augment.h"

#include <algorithm>
#include <cmath>

#include "core/hash.h"
#include "data/image.h"

namespace shoal {
namespace {

// A record's random draws: SplitMix64 from a state keyed by (seed, pass, record).
class Draws {
 public:
  Draws(uint64_t seed, uint64_t key, uint64_t pass)
      : state_(Mix64(seed ^ Mix64(key ^ Mix64(pass + 0x51ed27)))) {}
  uint64_t Next() { return Mix64(state_ += 0x9e3779b97f4a7c15ull); }
  double Uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(Next() >> 11) * 0x1.0p-53;
  }
  // An integer in [lo, hi].
  int Between(int lo, int hi) { return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool Coin() { return Next() >> 63; }

 private:
  uint64_t state_;
};

struct Region {
  int x = 0, y = 0, w = 0, h = 0;
};

// torchvision's RandomResizedCrop.get_params, on a width × height image.
Region ResizedCropRegion(const AugmentConfig& c, int width, int height, Draws* draws) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(c.ratio_min), log_hi = std::log(c.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * draws->Uniform(c.scale_min, c.scale_max);
    const double aspect = std::exp(draws->Uniform(log_lo, log_hi));
    const int w = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height)
      return {draws->Between(0, width - w), draws->Between(0, height - h), w, h};
  }
  // Its fallback: the central crop of the image at the nearest allowed ratio.
  const double ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (ratio < c.ratio_min) h = static_cast<int>(std::lround(w / c.ratio_min));
  if (ratio > c.ratio_max) w = static_cast<int>(std::lround(h * c.ratio_max));
  return {(width - w) / 2, (height - h) / 2, w, h};
}

// The shape evaluation gives: the shorter side resized, then the central square.
Status EvalSide(const AugmentConfig& c, const Shape& stored, int* height, int* width) {
  *height = stored[1];
  *width = stored[2];
  if (c.center_crop > 0) {
    *height = *width = c.center_crop;
  } else if (c.resize > 0) {
    return Status::InvalidArgument(
        "data.resize needs data.center_crop: images of different shapes make no batch");
  }
  if (*height == 0 || *width == 0)
    return Status::InvalidArgument(
        "the shards' images differ in size: the job's data section needs a crop (random_resized_crop or "
        "random_crop for training, center_crop for evaluation)");
  return Status::Ok();
}

}  // namespace

Status Augmenter::Make(const AugmentConfig& c, const Manifest& manifest, bool training, uint64_t seed,
                       Augmenter* out) {
  const Shape& stored = manifest.record_shape;
  if (stored.size() != 3 || !manifest.vocabulary.empty())
    return Status::InvalidArgument(
        "the data section's augmentations apply to images, and these records are " + ShapeToString(stored));
  const int channels = stored[0];
  int eval_h = 0, eval_w = 0;
  SHOAL_RETURN_IF_ERROR(EvalSide(c, stored, &eval_h, &eval_w));
  int train_h = eval_h, train_w = eval_w;
  if (c.resized_crop > 0) train_h = train_w = c.resized_crop;
  if (c.random_crop > 0) {
    train_h = train_w = c.random_crop;
    if (stored[1] > 0 &&
        (c.random_crop > stored[1] + 2 * c.crop_pad || c.random_crop > stored[2] + 2 * c.crop_pad))
      return Status::InvalidArgument("data.random_crop " + std::to_string(c.random_crop) +
                                     " is larger than the " + ShapeToString(stored) + " images padded by " +
                                     std::to_string(c.crop_pad));
  }
  if (train_h != eval_h || train_w != eval_w)
    return Status::InvalidArgument("training makes " + std::to_string(train_h) + " × " +
                                   std::to_string(train_w) + " images but evaluation " +
                                   std::to_string(eval_h) + " × " + std::to_string(eval_w) +
                                   ": set data.center_crop to the training crop's size");
  std::vector<double> mean = c.mean.empty() ? manifest.mean : c.mean;
  std::vector<double> dev = c.std.empty() ? manifest.std : c.std;
  if (c.normalize &&
      (mean.size() != static_cast<size_t>(channels) || dev.size() != static_cast<size_t>(channels)))
    return Status::InvalidArgument("data.normalize needs a mean and a std for each of the " +
                                   std::to_string(channels) + " channels (given, or measured by dl-shard)");
  Augmenter a;
  a.config_ = c;
  a.training_ = training;
  a.seed_ = seed;
  a.stored_ = manifest.stored;
  a.stored_shape_ = stored;
  a.shape_ = {channels, train_h, train_w};
  for (int ch = 0; ch < channels; ++ch) {
    if (!c.normalize) {
      a.scale_.push_back(1.0f / 255.0f);
      a.shift_.push_back(0.0f);
      continue;
    }
    if (!(dev[ch] > 0))
      return Status::InvalidArgument(
          "data.normalize: channel " + std::to_string(ch) + " has a std of " + std::to_string(dev[ch]) +
          (c.std.empty() ? " in the shards' manifest.json (one value throughout): give data.std"
                         : " (data.std)"));
    a.scale_.push_back(static_cast<float>(1.0 / (255.0 * dev[ch])));
    a.shift_.push_back(static_cast<float>(-mean[ch] / dev[ch]));
  }
  *out = std::move(a);
  return Status::Ok();
}

Status Augmenter::Apply(const std::vector<uint8_t>& stored, uint64_t key, uint64_t pass, float* out) const {
  const AugmentConfig& c = config_;
  const int channels = shape_[0], out_h = shape_[1], out_w = shape_[2];
  Draws draws(seed_, key, pass);
  Image image, next;
  Region region;       // training's random region, where it draws one
  int ox = 0, oy = 0;  // where the output's window starts in the image
  const bool resized_crop = training_ && c.resized_crop > 0;
  if (stored_ == StoredForm::kRaw) {
    image.channels = stored_shape_[0];
    image.height = stored_shape_[1];
    image.width = stored_shape_[2];
    image.pixels = stored;
    if (resized_crop) region = ResizedCropRegion(c, image.width, image.height, &draws);
  } else {
    int width = 0, height = 0;
    SHOAL_RETURN_IF_ERROR(ImageSize(stored.data(), stored.size(), &width, &height));
    // Decoded no larger than the output needs: libjpeg-turbo shrinks in the DCT.
    int min_w = 0, min_h = 0;
    if (resized_crop) {
      region = ResizedCropRegion(c, width, height, &draws);
      min_w = static_cast<int>(std::ceil(static_cast<double>(out_w) * width / region.w));
      min_h = static_cast<int>(std::ceil(static_cast<double>(out_h) * height / region.h));
    } else if (c.resize > 0) {
      const double scale = static_cast<double>(c.resize) / std::min(width, height);
      min_w = static_cast<int>(std::ceil(width * scale));
      min_h = static_cast<int>(std::ceil(height * scale));
    }
    SHOAL_RETURN_IF_ERROR(DecodeImage(stored.data(), stored.size(), channels, &image, min_w, min_h));
    if (resized_crop && (image.width != width || image.height != height)) {
      const double sx = static_cast<double>(image.width) / width,
                   sy = static_cast<double>(image.height) / height;
      region = {std::min(image.width - 1, static_cast<int>(region.x * sx)),
                std::min(image.height - 1, static_cast<int>(region.y * sy)), 0, 0};
      region.w = std::clamp(static_cast<int>(std::lround(region.w * sx)), 1, image.width - region.x);
      region.h = std::clamp(static_cast<int>(std::lround(region.h * sy)), 1, image.height - region.y);
    }
  }
  if (resized_crop) {
    ResizeRegion(image, region.x, region.y, region.w, region.h, out_w, out_h, &next);
    std::swap(image, next);
  } else if (!(training_ && c.random_crop > 0)) {
    if (c.resize > 0) {
      SHOAL_RETURN_IF_ERROR(ResizeShorterSide(image, c.resize, &next));
      std::swap(image, next);
    }
    // The central window, read below; zeros where the image is smaller.
    if (c.center_crop > 0) {
      ox = CenterOffset(image.width, c.center_crop);
      oy = CenterOffset(image.height, c.center_crop);
    }
  }
  // A random crop reads its window of the padded image; outside it, zeros.
  if (training_ && c.random_crop > 0) {
    if (image.width + 2 * c.crop_pad < out_w || image.height + 2 * c.crop_pad < out_h)
      return Status::InvalidArgument("an image of " + std::to_string(image.width) + " × " +
                                     std::to_string(image.height) + " is smaller than data.random_crop");
    ox = draws.Between(0, image.width + 2 * c.crop_pad - out_w) - c.crop_pad;
    oy = draws.Between(0, image.height + 2 * c.crop_pad - out_h) - c.crop_pad;
  }
  const bool flip = training_ && c.mirror && draws.Coin();
  // Output x reads image column x + ox (flipped: out_w − 1 − x + ox); the
  // columns [x0, x1) of the output read inside the image, the rest is zeros.
  const int plane = out_h * out_w;
  const int lo = std::clamp(flip ? out_w - 1 + ox - (image.width - 1) : -ox, 0, out_w);
  const int hi = std::clamp(flip ? out_w + ox : image.width - ox, lo, out_w);
  for (int ch = 0; ch < channels; ++ch) {
    const float scale = scale_[ch], shift = shift_[ch];
    for (int y = 0; y < out_h; ++y) {
      float* __restrict row = out + static_cast<size_t>(ch) * plane + static_cast<size_t>(y) * out_w;
      const int sy = y + oy;
      if (sy < 0 || sy >= image.height) {
        std::fill(row, row + out_w, shift);
        continue;
      }
      const uint8_t* __restrict src =
          image.pixels.data() + static_cast<size_t>(sy) * image.width * channels + ch;
      std::fill(row, row + lo, shift);
      if (flip)
        for (int x = lo; x < hi; ++x)
          row[x] = src[static_cast<size_t>(out_w - 1 - x + ox) * channels] * scale + shift;
      else if (channels == 1)
        for (int x = lo; x < hi; ++x) row[x] = src[x + ox] * scale + shift;
      else
        for (int x = lo; x < hi; ++x) row[x] = src[static_cast<size_t>(x + ox) * channels] * scale + shift;
      std::fill(row + hi, row + out_w, shift);
    }
  }
  return Status::Ok();
}

}  // namespace shoal
