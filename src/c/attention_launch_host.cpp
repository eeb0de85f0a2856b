// memplan_torch_attention and memplan_torch_rope_attention in the host library: the kernels need
// CUDA, so the calls say so.
#include "guarded.hpp"
#include "registry.hpp"

namespace {

int unsupported(const char* call, int device) {
  return memplan::c_api::guarded(call, device, []() -> int {
    throw memplan::c_api::Unsupported(
        "block-sparse attention needs the CUDA library (libmemplan_torch.so); this is the host "
        "library");
  });
}

}  // namespace

extern "C" int memplan_torch_attention(int device, const void*, const void*, const void*, void*,
                                       int, int64_t, int, int,
                                       const memplan_torch_attention_policy*, double, void*) {
  return unsupported("memplan_torch_attention", device);
}

extern "C" int memplan_torch_rope_attention(int device, void*, void*, const void*, void*,
                                            const float*, int, int, int64_t, int, int,
                                            const memplan_torch_attention_policy*, double, void*) {
  return unsupported("memplan_torch_rope_attention", device);
}
