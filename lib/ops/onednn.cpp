#include "ops/onednn.h"

#if SHOAL_HAVE_ONEDNN
#include <dnnl.hpp>

#include "core/env_switch.h"

extern "C" void omp_set_num_threads(int);

namespace shoal {

bool OneDnnEnabled() {
  static const bool enabled = EnvSwitchOn("SHOAL_ONEDNN");
  return enabled;
}

void SetOneDnnThreads(int threads) { omp_set_num_threads(threads); }

dnnl::engine& OneDnnEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool Bf16Kernels() {
  // Read once: Sgemm asks on every call in bfloat16.
  static const bool bf16 = [] {
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return OneDnnEnabled() && (isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx);
  }();
  return bf16;
}

std::string OneDnnDescription() {
  if (!OneDnnEnabled()) return "off";
  const dnnl_version_t* v = dnnl_version();
  std::string isa;
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
      isa = "sse41";
      break;
    case dnnl_cpu_isa_avx:
      isa = "avx";
      break;
    case dnnl_cpu_isa_avx2:
      isa = "avx2";
      break;
    case dnnl_cpu_isa_avx2_vnni:
      isa = "avx2_vnni";
      break;
    case dnnl_cpu_isa_avx512_core:
      isa = "avx512_core";
      break;
    case dnnl_cpu_isa_avx512_core_vnni:
      isa = "avx512_core_vnni";
      break;
    case dnnl_cpu_isa_avx512_core_bf16:
      isa = "avx512_core_bf16";
      break;
    case dnnl_cpu_isa_avx512_core_amx:
      isa = "avx512_core_amx";
      break;
    default:
      isa = "other";
      break;
  }
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + " " +
         isa;
}

}  // namespace shoal

#else  // no oneDNN in this build

namespace shoal {
bool OneDnnEnabled() { return false; }
void SetOneDnnThreads(int) {}
bool Bf16Kernels() { return false; }
std::string OneDnnDescription() { return "none"; }
}  // namespace shoal

#endif
