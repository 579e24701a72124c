#include "ps/async.h"

namespace shoal {

void AsyncConsistency::TakeUpdate(ServerTable& table, int index, int worker, uint64_t step,
                                  const std::vector<const EntryView*>& entries) {
  ServerTable::Layer& layer = table.layers()[index];
  for (const EntryView* e : entries)  // the sum is this update alone, read from its message
    table.Apply(table.slice(e->key), static_cast<float>(config_.holders_per_key[e->key]) / config_.served,
                layer.version, nullptr, e);
  ++layer.version;
}

}  // namespace shoal
