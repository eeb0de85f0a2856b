// memplan_torch_attention and memplan_torch_rope_attention on CUDA: the workspace comes from the
// device's compiler on the caller's stream (so inside a step it is one of the step's events,
// planned like any other buffer), the kernels are launched on that stream, and the workspace is
// freed right after in stream order.
#include <fmt/format.h>

#include "attention_policy.hpp"
#include "guarded.hpp"
#include "memplan/attention/attention.hpp"
#include "memplan/attention/rope.hpp"
#include "registry.hpp"

namespace memplan::c_api {
namespace {

// Runs `launch(workspace, bytes, stream)` with a workspace of the call's size from the device's
// compiler, freed after the launch (or its failure) in stream order; returns the mode launched.
template <typename Launch>
int with_workspace(int device, const attention::AttentionShape& shape,
                   const attention::AttentionPolicy& policy, void* stream, Launch&& launch) {
  Compiler& compiler = compiler_for(device);
  const StreamRef ref{stream};
  const std::size_t bytes = attention::workspace_bytes(shape, policy);
  void* workspace = bytes == 0 ? nullptr
                               : compiler.allocate(bytes, ref, "attention.workspace",
                                                   attention::kWorkspaceAlignment);
  attention::SparsityMode mode{};
  try {
    mode = launch(workspace, bytes, static_cast<cudaStream_t>(stream));
  } catch (...) {
    if (workspace != nullptr) compiler.deallocate(workspace, ref);
    throw;
  }
  if (workspace != nullptr) compiler.deallocate(workspace, ref);
  return static_cast<int>(mode);
}

attention::RopePairs to_rope_pairs(int pairs) {
  if (pairs != 0 && pairs != 1) {
    throw InvalidArgument(
        fmt::format("rope_pairs {} is neither 0 (interleaved) nor 1 (halves)", pairs));
  }
  return pairs == 0 ? attention::RopePairs::Interleaved : attention::RopePairs::Halves;
}

}  // namespace
}  // namespace memplan::c_api

extern "C" int memplan_torch_attention(int device, const void* q, const void* k, const void* v,
                                       void* out, int batch, int64_t tokens, int heads,
                                       int head_dim, const memplan_torch_attention_policy* policy,
                                       double step_fraction, void* stream) {
  using namespace memplan;
  using namespace memplan::c_api;
  return guarded("memplan_torch_attention", device, [&] {
    const attention::AttentionShape shape = to_shape(batch, tokens, heads, head_dim);
    const attention::AttentionPolicy p = to_policy(policy);
    return with_workspace(
        device, shape, p, stream, [&](void* workspace, std::size_t bytes, cudaStream_t s) {
          return attention::launch_attention(shape, {.q = q, .k = k, .v = v, .out = out}, p,
                                             step_fraction, workspace, bytes, s);
        });
  });
}

extern "C" int memplan_torch_rope_attention(int device, void* q, void* k, const void* v, void* out,
                                            const float* rope_table, int rope_pairs, int batch,
                                            int64_t tokens, int heads, int head_dim,
                                            const memplan_torch_attention_policy* policy,
                                            double step_fraction, void* stream) {
  using namespace memplan;
  using namespace memplan::c_api;
  return guarded("memplan_torch_rope_attention", device, [&] {
    const attention::AttentionShape shape = to_shape(batch, tokens, heads, head_dim);
    const attention::AttentionPolicy p = to_policy(policy);
    const attention::RopeTable table{rope_table, to_rope_pairs(rope_pairs)};
    return with_workspace(device, shape, p, stream,
                          [&](void* workspace, std::size_t bytes, cudaStream_t s) {
                            return attention::launch_rope_attention(
                                shape, q, k, v, out, table, p, step_fraction, workspace, bytes, s);
                          });
  });
}
