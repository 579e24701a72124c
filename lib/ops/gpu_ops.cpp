#include "ops/gpu_ops.h"

#include <dlfcn.h>
#include <unistd.h>

#include <string>

namespace shoal {

namespace {
thread_local GpuOps* current = nullptr;

// Where the running program is: libshoal_cuda.so is built beside the tools.
std::string ProgramDir() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string p(path, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}
}  // namespace

GpuOps* CurrentGpuOps() { return current; }

ScopedGpuOps::ScopedGpuOps(GpuOps* ops) : previous_(current) { current = ops; }
ScopedGpuOps::~ScopedGpuOps() { current = previous_; }

Status LoadCudaOps(int ordinal, std::unique_ptr<GpuOps>* out) {
  // Beside the program (the tools), or one folder up (the tests' programs).
  const std::string dir = ProgramDir();
  std::string tried;
  void* module = nullptr;
  for (const std::string& path : {dir + "/libshoal_cuda.so", dir + "/../libshoal_cuda.so"}) {
    if ((module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(why ? why : path + ": not loaded");
  }
  if (!module)
    return Status::IOError("cuda:" + std::to_string(ordinal) +
                           ": the CUDA ops could not be loaded (a build without CUDA has none: configure "
                           "with -DSHOAL_CUDA=ON where the CUDA toolkit and cuDNN are installed): " +
                           tried);
  using Version = int (*)();
  using Open = GpuOps* (*)(int, char*, size_t);
  auto version = reinterpret_cast<Version>(dlsym(module, "shoal_cuda_ops_version"));
  auto open = reinterpret_cast<Open>(dlsym(module, "shoal_open_cuda_ops"));
  if (!version || !open || version() != kGpuOpsVersion)
    return Status::IOError("cuda:" + std::to_string(ordinal) +
                           ": libshoal_cuda.so was built for another shoal (rebuild it with this one)");
  char why[512] = {0};
  GpuOps* ops = open(ordinal, why, sizeof(why));
  if (!ops) return Status::IOError(why);
  out->reset(ops);  // the module stays loaded for the process's life: its code runs ops's destructor
  return Status::Ok();
}

}  // namespace shoal
