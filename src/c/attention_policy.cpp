// The C attention policy to AttentionPolicy, and the workspace-size entry point, which both
// libraries export (the host one can size a workspace though it cannot launch).
#include "attention_policy.hpp"

#include <fmt/format.h>

#include "guarded.hpp"
#include "memplan/attention/modes.hpp"
#include "memplan/attention/workspace.hpp"
#include "memplan/error.hpp"

namespace memplan::c_api {

attention::AttentionPolicy to_policy(const memplan_torch_attention_policy* c) {
  if (c == nullptr) throw InvalidArgument("the attention policy is NULL");
  if (c->mode < 0 || static_cast<std::size_t>(c->mode) >= attention::kModeTraits.size()) {
    throw InvalidArgument(
        fmt::format("attention mode {} is outside 0..{} (dense, tau, topk, "
                    "coarse)",
                    c->mode, attention::kModeTraits.size() - 1));
  }
  attention::AttentionPolicy policy{
      .mode = static_cast<attention::SparsityMode>(c->mode),
      .tau = c->tau,
      .keep_percent = c->keep_percent,
      .max_keep_percent = c->max_keep_percent,
      .sink_keys = {c->sink_keys_begin, c->sink_keys_end},
      .sink_queries = {c->sink_queries_begin, c->sink_queries_end},
      .window_start = c->window_start,
      .window_end = c->window_end,
      .min_tokens = c->min_tokens,
      .coarse_gate = c->coarse_gate,
      // 0, a zero-initialised struct's, is the default.
      .query_blocks_per_list = c->query_blocks_per_list == 0 ? 1 : c->query_blocks_per_list};
  attention::validate(policy);
  return policy;
}

attention::AttentionShape to_shape(int batch, std::int64_t tokens, int heads, int head_dim) {
  const attention::AttentionShape shape{
      .batch = batch, .tokens = tokens, .heads = heads, .head_dim = head_dim};
  attention::validate(shape);
  return shape;
}

}  // namespace memplan::c_api

extern "C" int64_t memplan_torch_attention_workspace_bytes(
    int batch, int64_t tokens, int heads, int head_dim,
    const memplan_torch_attention_policy* policy) {
  using namespace memplan::c_api;
  std::int64_t bytes = 0;
  const int status = guarded("memplan_torch_attention_workspace_bytes", -1, [&] {
    bytes = static_cast<std::int64_t>(memplan::attention::workspace_bytes(
        to_shape(batch, tokens, heads, head_dim), to_policy(policy)));
    return MEMPLAN_OK;
  });
  return status < 0 ? status : bytes;
}
