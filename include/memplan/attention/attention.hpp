// Host API of block-sparse attention: one call launches block selection and the attention forward
// kernel on a stream. Nothing here allocates or synchronises, so the whole call can be captured in
// a CUDA Graph; every argument is checked before the first launch, and bad input throws
// InvalidArgument (CudaError for a failed launch).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "memplan/attention/policy.hpp"
#include "memplan/attention/shape.hpp"
#include "memplan/attention/workspace.hpp"

namespace memplan::attention {

// Device pointers to contiguous bf16 [batch, tokens, heads, head_dim] tensors, 16-byte aligned.
struct AttentionTensors {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
};

// Key blocks per query block: kv_idx [rows, max_k] ascending, kv_count [rows]. A row whose count
// equals the block count is dense and its kv_idx is not read. A null kv_count means dense.
// query_blocks_per_list 2 promises that rows 2i and 2i + 1 of each (batch, head) hold the same
// list (the selection of a policy with query_blocks_per_list 2 makes them so): the Hopper TMA
// kernel then reads row 2i's list for both and loads each tile once; other kernels read each row.
// rotate_visits: that kernel visits each list (a pair's, or each of its two query blocks') from
// a block chosen by the CTA's place in the launch, wrapping around, instead of from its first
// block. Where lists differ in length
// (tau's), CTAs that run at the same time then read the same keys, which stay in L2 (lists of
// one length get that by running in lockstep, which rotation would break: leave it off for
// top-k). The sums run in another order: outputs differ from unrotated ones in the last bits,
// and are deterministic on a device (the rotation depends on its SM count). Other kernels ignore
// it. launch_attention sets it for tau.
struct BlockList {
  const int* kv_idx = nullptr;
  const int* kv_count = nullptr;
  int max_k = 0;
  int query_blocks_per_list = 1;
  bool rotate_visits = false;
};

// Where selection's pooled means come from. Compute: launch_attention pools Q and K (and V) itself,
// one more read of them. InWorkspace: the kernel that wrote Q and K also wrote their means into the
// workspace (format and helper: memplan/attention/pooled_means.cuh), so selection starts from
// them; nothing checks them, so means that do not match Q and K select the wrong blocks. A step
// that runs dense (outside the policy's window, say) selects nothing and reads no means.
enum class PooledMeans : unsigned char { Compute, InWorkspace };

// Selection + attention for one step. `step_fraction` is the step's place in the schedule
// (0..1); with the policy it decides the mode (see effective_mode), which is returned.
// `workspace` must hold workspace_bytes(shape, policy) bytes, 256-byte aligned.
SparsityMode launch_attention(const AttentionShape& shape, const AttentionTensors& tensors,
                              const AttentionPolicy& policy, double step_fraction, void* workspace,
                              std::size_t workspace_size, cudaStream_t stream,
                              PooledMeans pooled = PooledMeans::Compute);

// Only the selection: pooled Q/K(/V) (unless given), the block list and (coarse mode) the coarse
// output, all in the workspace at the offsets of workspace_layout(shape, policy). Needs a sparse
// policy mode.
void launch_selection(const AttentionShape& shape, const AttentionTensors& tensors,
                      const AttentionPolicy& policy, void* workspace, std::size_t workspace_size,
                      cudaStream_t stream, PooledMeans pooled = PooledMeans::Compute);

// Only the attention forward over `blocks`; `coarse` (fp32 [rows, head_dim] or null) is added to
// every token of its query block, scaled by `coarse_gate`.
void launch_flash_forward(const AttentionShape& shape, const AttentionTensors& tensors,
                          const BlockList& blocks, const float* coarse, float coarse_gate,
                          cudaStream_t stream);

// The block list stored in a workspace laid out for (shape, policy).
[[nodiscard]] BlockList workspace_block_list(const WorkspaceLayout& layout, const void* workspace);

}  // namespace memplan::attention
