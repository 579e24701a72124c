#include "train/carried_state.h"

#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/file_util.h"
#include "core/hash.h"

namespace shoal {
namespace {

constexpr char kMagic[8] = {'S', 'H', 'O', 'A', 'L', 'C', 'S', '1'};

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof value);
}

}  // namespace

CarriedStateFiles::CarriedStateFiles(std::string dir, int worker, int checkpoint_every, uint64_t plan_hash)
    : dir_(std::move(dir)),
      worker_(worker),
      checkpoint_every_(checkpoint_every > 0 ? checkpoint_every : 0),
      plan_hash_(plan_hash) {}

std::string CarriedStateFiles::Path(uint64_t step) const {
  return dir_ + "/worker-" + std::to_string(worker_) + ".step-" + std::to_string(step) + ".state";
}

Status CarriedStateFiles::Open() const {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) return Status::IOError("cannot create the state directory '" + dir_ + "': " + error.message());
  return Status::Ok();
}

Status CarriedStateFiles::Save(uint64_t step, const std::vector<CarriedState>& states) const {
  std::string bytes(kMagic, sizeof kMagic);
  Put<uint64_t>(&bytes, plan_hash_);
  Put<uint64_t>(&bytes, step);
  Put<uint32_t>(&bytes, static_cast<uint32_t>(states.size()));
  for (const CarriedState& s : states) {
    Put<uint64_t>(&bytes, s.floats->size());
    bytes.append(reinterpret_cast<const char*>(s.floats->data()), 4 * s.floats->size());
  }
  Put<uint64_t>(&bytes, Fnv1a64(bytes));
  auto checkpointed = [&](uint64_t s) { return checkpoint_every_ > 0 && s % checkpoint_every_ == 0; };
  // A checkpoint step's file is synced as the servers' checkpoint is, so that
  // the restart after a machine's crash finds both; the others only need to
  // outlive a crash of the worker (a restart of the servers' last step).
  SHOAL_RETURN_IF_ERROR(WriteFileAtomic(Path(step), bytes, /*sync=*/checkpointed(step)));
  // Step − 2's is no longer needed, unless the servers checkpoint there; a
  // new checkpoint step's file retires the one three checkpoints back.
  std::error_code ignored;
  if (step >= 2 && !checkpointed(step - 2)) std::filesystem::remove(Path(step - 2), ignored);
  if (checkpointed(step) && step >= 3 * checkpoint_every_)
    std::filesystem::remove(Path(step - 3 * checkpoint_every_), ignored);
  return Status::Ok();
}

Status CarriedStateFiles::Load(uint64_t step, int batch, const std::vector<CarriedState>& states,
                               bool* found) const {
  const std::string path = Path(step);
  *found = std::filesystem::exists(path);
  if (!*found) return Status::Ok();
  // What this net's states hold for `batch` rows, and the file's frame around them.
  size_t expected = sizeof kMagic + 8 + 8 + 4 + 8;
  for (const CarriedState& s : states) expected += 8 + 4 * s.floats_per_row * static_cast<size_t>(batch);
  std::string bytes;
  SHOAL_RETURN_IF_ERROR(ReadFile(path, &bytes, expected));
  auto bad = [&](const std::string& why) {
    return Status::Corruption("'" + path + "' is not the state this worker saved for step " +
                              std::to_string(step) + ": " + why);
  };
  if (bytes.size() != expected)
    return bad(std::to_string(bytes.size()) + " bytes where the net's state for " + std::to_string(batch) +
               " rows takes " + std::to_string(expected));
  uint64_t hash;
  std::memcpy(&hash, bytes.data() + bytes.size() - 8, 8);
  if (hash != Fnv1a64(kFnv1a64Start, bytes.data(), bytes.size() - 8))
    return bad("its checksum does not match its bytes");
  // The fields in order; the size checked above holds every one.
  size_t at = 0;
  auto take = [&](void* to, size_t n) {
    std::memcpy(to, bytes.data() + at, n);
    at += n;
  };
  char magic[sizeof kMagic];
  uint64_t plan_hash = 0, saved_step = 0;
  uint32_t layers = 0;
  take(magic, sizeof magic);
  take(&plan_hash, 8);
  take(&saved_step, 8);
  take(&layers, 4);
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) return bad("it does not begin with SHOALCS1");
  if (plan_hash != plan_hash_)
    return bad("it was saved under plan " + HexU64(plan_hash) + ", this run's is " + HexU64(plan_hash_) +
               " (a state directory of another run?)");
  if (saved_step != step) return bad("it holds step " + std::to_string(saved_step));
  if (layers != states.size())
    return bad(std::to_string(layers) + " layers' state, the net carries " + std::to_string(states.size()));
  for (size_t i = 0; i < states.size(); ++i) {
    uint64_t floats = 0;
    take(&floats, 8);
    if (floats != states[i].floats_per_row * static_cast<uint64_t>(batch))
      return bad("layer " + std::to_string(i) + "'s state has " + std::to_string(floats) + " floats, not " +
                 std::to_string(states[i].floats_per_row * batch));
    states[i].floats->resize(floats);
    take(states[i].floats->data(), 4 * floats);
  }
  return Status::Ok();
}

}  // namespace shoal
