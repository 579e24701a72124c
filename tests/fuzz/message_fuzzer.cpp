// A message off the wire, as servers and group channels decode it.
#include <vector>

#include "comm/message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  MessageView view;
  if (!Decode(data, size, &view).ok()) return 0;
  std::vector<float> values;
  for (const EntryView& e : view.entries) {
    values.resize(e.count);
    CopyValues(e, values.data());
  }
  return 0;
}
