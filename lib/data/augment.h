// What the loader does to each image record before the net reads it (the
// job's data section, docs/job-file.md): decode (JPEG records), crop,
// mirror, scale to [0, 1] and normalise, into channels × height × width
// floats. Every random draw is a function of (seed, pass, record) alone, so
// that which worker, thread or restart computes a batch never changes it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "data/shard.h"

namespace shoal {

struct AugmentConfig {
  // Training: a random size × size square of the image padded by `pad`
  // zeros on each side (torchvision's RandomCrop(size, padding=pad)).
  int random_crop = 0;
  int crop_pad = 0;
  // Training: a random region of [scale_min, scale_max] of the area and an
  // aspect ratio in [ratio_min, ratio_max], scaled to size × size
  // (torchvision's RandomResizedCrop).
  int resized_crop = 0;
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  bool mirror = false;  // training: a horizontal flip, half the time
  // Evaluation (and training without a random crop): the shorter side
  // scaled to `resize` (0: kept), then the central square of `center_crop`
  // (0: the image as it is).
  int resize = 0;
  int center_crop = 0;
  // (x − mean) / std per channel after scaling to [0, 1]; the means and
  // deviations given, or (empty) the manifest's.
  bool normalize = false;
  std::vector<double> mean, std;

  bool any() const { return random_crop || resized_crop || mirror || resize || center_crop || normalize; }
};

// Turns stored image records into the net's input for training or for
// evaluation.
class Augmenter {
 public:
  // Checks `config` against the manifest's images: InvalidArgument naming
  // the field where it cannot apply (a crop larger than the images, a mean
  // of another count of channels, raw images of varying sizes with no crop,
  // a training and an evaluation shape that differ). *out is unchanged then.
  static Status Make(const AugmentConfig& config, const Manifest& manifest, bool training, uint64_t seed,
                     Augmenter* out);
  // The floats of one record: channels × height × width.
  const Shape& output_shape() const { return shape_; }
  // Record `stored` (as ShardReader::ReadRecord gives it), known as `key`
  // (its shard and index), in pass `pass`: written to `out`
  // (output_shape()'s floats). Corruption for an image that does not decode,
  // InvalidArgument for one too large to decode or smaller than the random
  // crop; `out` is untouched on error.
  Status Apply(const std::vector<uint8_t>& stored, uint64_t key, uint64_t pass, float* out) const;

 private:
  AugmentConfig config_;
  bool training_ = false;
  uint64_t seed_ = 0;
  StoredForm stored_ = StoredForm::kRaw;
  Shape stored_shape_;                // [C, H, W] of the records (H, W 0 where they vary)
  Shape shape_;                       // [C, H, W] given to the net
  std::vector<float> scale_, shift_;  // per channel: out = pixel · scale + shift
};

}  // namespace shoal
