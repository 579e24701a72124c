#include "data/image_sharder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <thread>

#include "core/mutex.h"
#include "data/image.h"
#include "data/shard_file.h"
#include "data/shard_writer.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

// Records a thread takes at once, and how many such chunks may wait to be
// written per thread: what bounds the memory in flight.
constexpr uint64_t kChunk = 16;
constexpr uint64_t kChunksAhead = 4;

enum class Split { kTrain, kVal, kTest };

// Where a record comes from and where it goes, in the order it is written.
struct Slot {
  const RecordSource* source;
  uint64_t index;
  Split split;
  int shard;  // kTrain's
};

// A record made ready for its shard.
struct Made {
  Status status;
  std::string bytes;  // raw pixels or an encoded image
  int32_t label = 0;
  std::vector<uint64_t> sum, squares;  // per channel, of the pixels' bytes: exact
  uint64_t pixels = 0;                 // per channel
};

// What every record must come to: its channels and, for raw records, its size.
struct Form {
  int channels = 0;
  int width = 0, height = 0;
};

// The slots: the train source's records in the seeded shuffled order, dealt
// to the shards (the held-out validation and, without a test source, test
// records taken from the order's end), then the test records in index order.
std::vector<Slot> Arrange(const RecordSource& train, const RecordSource* test, const ImageShardOptions& o) {
  const uint64_t n = train.size();
  const std::vector<uint64_t> order = ShuffledOrder(n, o.seed);
  const uint64_t tested = test ? 0 : static_cast<uint64_t>(std::ceil(o.test_fraction * n));
  const uint64_t rest = n - std::min(tested, n);
  const uint64_t held = static_cast<uint64_t>(std::ceil(o.val_fraction * rest));
  const uint64_t kept = rest - std::min(held, rest);
  std::vector<Slot> slots;
  slots.reserve(n + (test ? test->size() : 0));
  for (uint64_t i = 0; i < kept; ++i)
    slots.push_back({&train, order[i], Split::kTrain, static_cast<int>(i % static_cast<uint64_t>(o.shards))});
  for (uint64_t i = kept; i < rest; ++i) slots.push_back({&train, order[i], Split::kVal, 0});
  std::vector<uint64_t> tail(order.begin() + static_cast<std::ptrdiff_t>(rest), order.end());
  std::sort(tail.begin(), tail.end());
  for (uint64_t index : tail) slots.push_back({&train, index, Split::kTest, 0});
  if (test)
    for (uint64_t i = 0; i < test->size(); ++i) slots.push_back({test, i, Split::kTest, 0});
  return slots;
}

// Pixel buffers a thread keeps from record to record: fresh pages for every
// image would cost more than resizing it.
struct Scratch {
  Image image, scaled;
};

// Decodes, resizes, crops and encodes one record as the options say.
Made Make(const Slot& slot, const ImageShardOptions& o, const Form& form, Scratch* scratch) {
  Made m;
  Image& image = scratch->image;
  Image& scaled = scratch->scaled;
  m.status = slot.source->Read(slot.index, form.channels, &image, &m.label);
  if (!m.status.ok()) return m;
  const bool reshaped = o.resize > 0 || o.center_crop > 0;
  if (o.resize > 0) {
    m.status = ResizeShorterSide(image, o.resize, &scaled).Within(slot.source->Name(slot.index));
    if (!m.status.ok()) return m;
    std::swap(image, scaled);
  }
  if (o.center_crop > 0) {
    CenterCrop(image, o.center_crop, o.center_crop, &scaled);
    std::swap(image, scaled);
  }
  if (o.store == StoredForm::kRaw && (image.width != form.width || image.height != form.height)) {
    m.status =
        Status::InvalidArgument("raw records share one size, and " + slot.source->Name(slot.index) + " is " +
                                std::to_string(image.width) + " × " + std::to_string(image.height) +
                                " where the first record is " + std::to_string(form.width) + " × " +
                                std::to_string(form.height) + ": give --center-crop, or --store jpeg");
    return m;
  }
  m.pixels = static_cast<uint64_t>(image.width) * image.height;
  m.sum.assign(image.channels, 0);
  m.squares.assign(image.channels, 0);
  for (int ch = 0; ch < image.channels; ++ch) {
    uint64_t sum = 0, squares = 0;
    for (size_t i = ch; i < image.pixels.size(); i += image.channels) {
      const uint32_t x = image.pixels[i];
      sum += x;
      squares += x * x;
    }
    m.sum[ch] = sum;
    m.squares[ch] = squares;
  }
  if (o.store == StoredForm::kRaw) {
    m.bytes.assign(image.pixels.begin(), image.pixels.end());
  } else if (reshaped || !slot.source->Encoded(slot.index, &m.bytes)) {
    m.status = EncodeJpeg(image, o.quality, &m.bytes);
  }
  return m;
}

// Runs Make over the slots on `threads` threads, handing the results to the
// caller in slot order, at most kChunksAhead chunks a thread ahead of it.
class Workers {
 public:
  Workers(const std::vector<Slot>& slots, const ImageShardOptions& o, const Form& form)
      : slots_(slots), options_(o), form_(form), chunks_((slots.size() + kChunk - 1) / kChunk) {
    const int threads = std::max(1, o.threads);
    window_ = kChunksAhead * static_cast<uint64_t>(threads);
    made_.resize(window_);
    ready_.assign(window_, false);
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { Run(); });
  }
  ~Workers() {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    changed_.SignalAll();
    for (std::thread& t : threads_) t.join();
  }
  // The results of chunk `c`, waiting for them.
  std::vector<Made> Take(uint64_t c) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (!ready_[c % window_]) changed_.Wait();
    std::vector<Made> out = std::move(made_[c % window_]);
    ready_[c % window_] = false;
    ++taken_;
    changed_.SignalAll();
    return out;
  }

 private:
  void Run() EXCLUDES(mu_) {
    UseOneResamplerThread();
    Scratch scratch;
    for (;;) {
      uint64_t c;
      {
        MutexLock lock(&mu_);
        while (!stop_ && next_ < chunks_ && next_ >= taken_ + window_) changed_.Wait();
        if (stop_ || next_ >= chunks_) return;
        c = next_++;
      }
      std::vector<Made> made;
      const uint64_t end = std::min<uint64_t>(slots_.size(), (c + 1) * kChunk);
      for (uint64_t i = c * kChunk; i < end; ++i) made.push_back(Make(slots_[i], options_, form_, &scratch));
      MutexLock lock(&mu_);
      made_[c % window_] = std::move(made);
      ready_[c % window_] = true;
      changed_.SignalAll();
    }
  }

  const std::vector<Slot>& slots_;
  const ImageShardOptions& options_;
  const Form form_;
  const uint64_t chunks_;
  uint64_t window_ = 1;
  Mutex mu_;
  CondVar changed_{&mu_};
  uint64_t next_ GUARDED_BY(mu_) = 0;   // the next chunk to make
  uint64_t taken_ GUARDED_BY(mu_) = 0;  // chunks handed to the caller
  std::vector<std::vector<Made>> made_ GUARDED_BY(mu_);
  std::vector<bool> ready_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// Finds the records' channels and (raw) size from the first record that reads.
// Fails naming the first record's reason where none reads.
Status Probe(const std::vector<Slot>& slots, const ImageShardOptions& o, Form* form) {
  Status first;
  for (const Slot& slot : slots) {
    Image image, scaled;
    int32_t label;
    Status s = slot.source->Read(slot.index, o.channels, &image, &label);
    if (s.ok() && o.resize > 0) s = ResizeShorterSide(image, o.resize, &scaled);
    if (!s.ok()) {
      if (first.ok()) first = s;
      continue;
    }
    form->channels = image.channels;
    if (o.resize > 0) std::swap(image, scaled);
    form->width = o.center_crop > 0 ? o.center_crop : image.width;
    form->height = o.center_crop > 0 ? o.center_crop : image.height;
    return Status::Ok();
  }
  return Status::InvalidArgument("none of the " + std::to_string(slots.size()) +
                                 " images could be read; the first: " + first.ToString());
}

// The shard files of one call, removed unless the call completes.
class Output {
 public:
  Output(const ImageShardOptions& o, const Shape& shape) : o_(o), shape_(shape) {}
  ~Output() {
    if (done_) return;
    for (const std::string& path : written_) std::filesystem::remove(path);
  }
  Status Open() {
    for (int k = 0; k < o_.shards; ++k) {
      char name[40];
      std::snprintf(name, sizeof name, "train-%05d.shard", k);
      train_.push_back(std::make_unique<ShardFileWriter>());
      SHOAL_RETURN_IF_ERROR(train_.back()->Open(o_.out_dir + "/" + name, shape_, o_.store));
    }
    SHOAL_RETURN_IF_ERROR(val_.Open(o_.out_dir + "/val.shard", shape_, o_.store));
    return test_.Open(o_.out_dir + "/test.shard", shape_, o_.store);
  }
  ShardFileWriter* For(const Slot& slot) {
    return slot.split == Split::kTrain ? train_[slot.shard].get()
           : slot.split == Split::kVal ? &val_
                                       : &test_;
  }
  Status Finish(Manifest* m) {
    for (auto& w : train_) {
      ShardInfo info;
      SHOAL_RETURN_IF_ERROR(Finished(w.get(), &info));
      m->train.push_back(info);
    }
    if (val_.records() > 0) {
      m->val.emplace();
      SHOAL_RETURN_IF_ERROR(Finished(&val_, &*m->val));
    }
    return Finished(&test_, &m->test);
  }
  void Keep() { done_ = true; }

 private:
  Status Finished(ShardFileWriter* w, ShardInfo* info) {
    SHOAL_RETURN_IF_ERROR(w->Finish(info));
    written_.push_back(o_.out_dir + "/" + info->file);
    return Status::Ok();
  }
  const ImageShardOptions& o_;
  const Shape shape_;
  std::vector<std::unique_ptr<ShardFileWriter>> train_;
  ShardFileWriter val_, test_;
  std::vector<std::string> written_;
  bool done_ = false;
};

Status CheckOptions(const RecordSource& train, const ImageShardOptions& o) {
  if (o.shards < 1) return Status::InvalidArgument("--shards must be at least 1");
  if (o.channels != 0 && o.channels != 1 && o.channels != 3)
    return Status::InvalidArgument("--channels must be 1 or 3");
  if (!(o.test_fraction >= 0 && o.test_fraction < 1) || !(o.val_fraction >= 0 && o.val_fraction < 1))
    return Status::InvalidArgument("the test and validation fractions must be in [0, 1)");
  if (o.resize < 0 || o.center_crop < 0 || o.resize > kMaxImageSide || o.center_crop > kMaxImageSide)
    return Status::InvalidArgument("--resize and --center-crop must be in 0.." +
                                   std::to_string(kMaxImageSide));
  if (int64_t{o.center_crop} * o.center_crop > kMaxImagePixels)
    return Status::InvalidArgument("--center-crop " + std::to_string(o.center_crop) +
                                   " makes records of more than " + std::to_string(kMaxImagePixels) +
                                   " pixels");
  if (train.size() == 0) return Status::InvalidArgument("no training images");
  return Status::Ok();
}

}  // namespace

Status ShardImages(const RecordSource& train, const RecordSource* test, const ImageShardOptions& o,
                   const std::function<void(const ShardProgress&)>& progress, Manifest* manifest,
                   ShardReport* report) {
  const auto start = Clock::now();
  SHOAL_RETURN_IF_ERROR(CheckOptions(train, o));
  const std::vector<Slot> slots = Arrange(train, test, o);
  const auto training = static_cast<uint64_t>(
      std::count_if(slots.begin(), slots.end(), [](const Slot& s) { return s.split == Split::kTrain; }));
  if (static_cast<uint64_t>(o.shards) > training)
    return Status::InvalidArgument("--shards must be in 1.." + std::to_string(training) +
                                   " (one training image per shard at least), got " +
                                   std::to_string(o.shards));
  Form form;
  SHOAL_RETURN_IF_ERROR(Probe(slots, o, &form));
  Manifest m;
  m.dataset = o.dataset;
  m.seed = o.seed;
  m.stored = o.store;
  m.record_shape = o.store == StoredForm::kRaw || o.center_crop > 0
                       ? Shape{form.channels, form.height, form.width}
                       : Shape{form.channels, 0, 0};
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return Status::IOError("cannot create '" + o.out_dir + "': " + ec.message());
  Output out(o, m.record_shape);
  SHOAL_RETURN_IF_ERROR(out.Open());
  std::vector<uint64_t> sum(form.channels, 0), squares(form.channels, 0);
  uint64_t pixels = 0;
  int32_t most = 0;
  ShardProgress shown{0, slots.size(), 0, 0};
  auto last_shown = start;
  Workers workers(slots, o, form);
  for (uint64_t c = 0; c * kChunk < slots.size(); ++c) {
    std::vector<Made> made = workers.Take(c);
    for (size_t i = 0; i < made.size(); ++i) {
      const Slot& slot = slots[c * kChunk + i];
      Made& r = made[i];
      // A raw record of another size is the options' fault, not the record's.
      if (!r.status.ok() && (o.strict || (r.status.IsInvalidArgument() && o.store == StoredForm::kRaw &&
                                          r.status.message().rfind("raw records", 0) == 0)))
        return r.status;  // the source named the record
      if (!r.status.ok()) {
        if (report->first_skipped.size() < kNamedSkips) report->first_skipped.push_back(r.status.ToString());
        ++report->skipped;
        continue;
      }
      SHOAL_RETURN_IF_ERROR(out.For(slot)->Append(reinterpret_cast<const uint8_t*>(r.bytes.data()),
                                                  r.bytes.size(), static_cast<uint32_t>(r.label)));
      report->bytes += r.bytes.size();
      most = std::max(most, r.label);
      if (slot.split != Split::kTrain) continue;
      for (int ch = 0; ch < form.channels; ++ch) sum[ch] += r.sum[ch], squares[ch] += r.squares[ch];
      pixels += r.pixels;
    }
    shown.done = std::min<uint64_t>(slots.size(), (c + 1) * kChunk);
    shown.skipped = report->skipped;
    if (progress && Clock::now() - last_shown >= std::chrono::seconds(1)) {
      last_shown = Clock::now();
      shown.seconds = std::chrono::duration<double>(last_shown - start).count();
      progress(shown);
    }
  }
  const std::vector<std::string>& names = train.class_names();
  m.classes = std::max<int>(static_cast<int>(names.size()), most + 1);
  if (names.size() == static_cast<size_t>(m.classes)) m.class_names = names;
  SHOAL_RETURN_IF_ERROR(out.Finish(&m));
  report->train = 0;
  for (const ShardInfo& s : m.train) report->train += s.records;
  const std::string skipped =
      std::to_string(report->skipped) + " images could not be read" +
      (report->first_skipped.empty() ? "" : " (the first: " + report->first_skipped[0] + ")");
  if (report->train == 0) return Status::InvalidArgument("no training record could be read: " + skipped);
  for (const ShardInfo& s : m.train)
    if (s.records == 0)
      return Status::InvalidArgument("training shard '" + s.file + "' would hold no record: " + skipped +
                                     "; fewer --shards");
  report->val = m.val ? m.val->records : 0;
  report->test = m.test.records;
  for (int ch = 0; ch < form.channels; ++ch) {
    // Of the pixels scaled to [0, 1].
    const double mean = static_cast<double>(sum[ch]) / pixels / 255.0;
    const double square = static_cast<double>(squares[ch]) / pixels / (255.0 * 255.0);
    m.mean.push_back(mean);
    m.std.push_back(std::sqrt(std::max(0.0, square - mean * mean)));
  }
  SHOAL_RETURN_IF_ERROR(WriteManifest(o.out_dir, m));
  out.Keep();
  report->seconds = std::chrono::duration<double>(Clock::now() - start).count();
  *manifest = std::move(m);
  return Status::Ok();
}

}  // namespace shoal
