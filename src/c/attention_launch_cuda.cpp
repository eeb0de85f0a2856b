// memplan_torch_attention on CUDA: the workspace comes from the device's compiler on the caller's
// stream (so inside a step it is one of the step's events, planned like any other buffer), the
// kernels are launched on that stream, and the workspace is freed right after in stream order.
#include <fmt/format.h>

#include "attention_policy.hpp"
#include "guarded.hpp"
#include "memplan/attention/attention.hpp"
#include "registry.hpp"

extern "C" int memplan_torch_attention(int device, const void* q, const void* k, const void* v,
                                       void* out, int batch, int64_t tokens, int heads,
                                       int head_dim, const memplan_torch_attention_policy* policy,
                                       double step_fraction, void* stream) {
  using namespace memplan;
  using namespace memplan::c_api;
  return guarded("memplan_torch_attention", device, [&] {
    const attention::AttentionShape shape = to_shape(batch, tokens, heads, head_dim);
    const attention::AttentionPolicy p = to_policy(policy);
    Compiler& compiler = compiler_for(device);
    const StreamRef ref{stream};
    const std::size_t bytes = attention::workspace_bytes(shape, p);
    void* workspace = bytes == 0 ? nullptr
                                 : compiler.allocate(bytes, ref, "attention.workspace",
                                                     attention::kWorkspaceAlignment);
    attention::SparsityMode mode{};
    try {
      mode =
          attention::launch_attention(shape, {.q = q, .k = k, .v = v, .out = out}, p, step_fraction,
                                      workspace, bytes, static_cast<cudaStream_t>(stream));
    } catch (...) {
      if (workspace != nullptr) compiler.deallocate(workspace, ref);
      throw;
    }
    if (workspace != nullptr) compiler.deallocate(workspace, ref);
    return static_cast<int>(mode);
  });
}
