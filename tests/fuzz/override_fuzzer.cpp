// --set overrides on a real job: each input line is one "section.field=value".
#include <sstream>
#include <string>

#include "config/document.h"
#include "config/job.h"
#include "core/file_util.h"
#include "graph/net.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  static const std::string job_text = [] {
    std::string text;
    (void)ReadFile(std::string(SHOAL_SOURCE_DIR) + "/configs/fashion-cnn.yaml", &text);
    return text;
  }();
  Document doc;
  if (!ParseYaml(job_text, "fashion-cnn.yaml", &doc).ok()) return 0;
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  int n = 0;
  for (std::string line; std::getline(lines, line) && n < 8; ++n)
    if (!ApplyOverride(line, &doc).ok()) return 0;
  JobConfig job;
  if (!ParseJob(doc, &job).ok()) return 0;
  std::unique_ptr<Net> net;
  (void)Net::Build(job, &net, /*allocate_params=*/false);
  return 0;
}
