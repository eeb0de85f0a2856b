// memplan_torch_attention in the host library: the kernels need CUDA, so the call says so.
#include "guarded.hpp"
#include "registry.hpp"

extern "C" int memplan_torch_attention(int device, const void*, const void*, const void*, void*,
                                       int, int64_t, int, int,
                                       const memplan_torch_attention_policy*, double, void*) {
  return memplan::c_api::guarded("memplan_torch_attention", device, []() -> int {
    throw memplan::c_api::Unsupported(
        "block-sparse attention needs the CUDA library (libmemplan_torch.so); this is the host "
        "library");
  });
}
