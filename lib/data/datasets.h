// The datasets dl-shard reads: their names (what a job's data.dataset may
// say), where Debian's packages put them, and how to read them.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "data/shard_writer.h"

namespace shoal {

struct Dataset {
  const char* name;            // "fashion-mnist"
  const char* default_source;  // a directory, from the dataset-* package
};

const std::vector<Dataset>& Datasets();
const std::vector<std::string>& DatasetNames();
// The dataset called `name`, or null.
const Dataset* FindDataset(const std::string& name);

// Reads dataset `name` from `source` (empty: its default) into `spec`'s arrays.
// InvalidArgument for an unknown name or a source that is not a directory;
// otherwise ReadIdx's errors, with *spec part-filled then.
Status ReadDataset(const std::string& name, const std::string& source, ShardSpec* spec);

}  // namespace shoal
