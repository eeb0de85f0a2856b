// Policy validation and the step-window rule. Host only: runs (and is tested) without a GPU.
#include "memplan/attention/policy.hpp"

#include <fmt/format.h>

#include <cmath>

#include "memplan/attention/shape.hpp"
#include "memplan/error.hpp"

namespace memplan::attention {

namespace {

void check_percent(const char* name, float value) {
  // A percent of blocks: 0 would select nothing beyond the forced blocks, which is what dense
  // fallback or a tiny value expresses better; NaN compares false everywhere, so test it first.
  if (!std::isfinite(value) || value <= 0.0f || value > 100.0f) {
    throw InvalidArgument(
        fmt::format("attention policy: {} = {} is outside (0, 100]", name, value));
  }
}

void check_range(const char* name, const BlockRange& range) {
  if (range.begin < 0 || range.end < range.begin) {
    throw InvalidArgument(fmt::format("attention policy: {} = [{}, {}) is not a block range", name,
                                      range.begin, range.end));
  }
}

}  // namespace

void validate(const AttentionPolicy& policy) {
  (void)traits(policy.mode);  // throws for a mode outside the table
  if (!std::isfinite(policy.tau)) {
    throw InvalidArgument(fmt::format("attention policy: tau = {} is not finite", policy.tau));
  }
  check_percent("keep_percent", policy.keep_percent);
  check_percent("max_keep_percent", policy.max_keep_percent);
  check_range("sink_keys", policy.sink_keys);
  check_range("sink_queries", policy.sink_queries);
  if (!(policy.window_start >= 0.0 && policy.window_start <= policy.window_end &&
        policy.window_end <= 1.0)) {
    throw InvalidArgument(
        fmt::format("attention policy: step window [{}, {}] must satisfy 0 <= start <= end <= 1",
                    policy.window_start, policy.window_end));
  }
  if (policy.min_tokens < 0) {
    throw InvalidArgument(
        fmt::format("attention policy: min_tokens = {} is negative", policy.min_tokens));
  }
  if (policy.query_blocks_per_list != 1 && policy.query_blocks_per_list != 2) {
    throw InvalidArgument(fmt::format("attention policy: query_blocks_per_list = {} is not 1 or 2",
                                      policy.query_blocks_per_list));
  }
  if (!std::isfinite(policy.coarse_gate)) {
    throw InvalidArgument(
        fmt::format("attention policy: coarse_gate = {} is not finite", policy.coarse_gate));
  }
}

SparsityMode effective_mode(const AttentionPolicy& policy, double step_fraction,
                            std::int64_t tokens) {
  validate(policy);
  if (!(step_fraction >= 0.0 && step_fraction <= 1.0)) {
    throw InvalidArgument(
        fmt::format("attention: step_fraction = {} is outside [0, 1]", step_fraction));
  }
  // The window is closed at both ends so that the default [0.2, 1.0] includes the last step.
  const bool in_window = step_fraction >= policy.window_start && step_fraction <= policy.window_end;
  if (!in_window || tokens < policy.min_tokens) return SparsityMode::Dense;
  return policy.mode;
}

void validate(const AttentionShape& shape) {
  if (shape.head_dim != 64 && shape.head_dim != 128) {
    throw InvalidArgument(
        fmt::format("attention: head_dim = {} is unsupported (64 or 128)", shape.head_dim));
  }
  if (shape.batch <= 0 || shape.heads <= 0 || shape.tokens <= 0) {
    throw InvalidArgument(fmt::format("attention: batch = {}, tokens = {}, heads = {} must be > 0",
                                      shape.batch, shape.tokens, shape.heads));
  }
  const std::int64_t max_tokens = static_cast<std::int64_t>(kMaxBlocks) * kBlockTokens;
  if (shape.tokens > max_tokens) {
    throw InvalidArgument(
        fmt::format("attention: tokens = {} exceeds the supported {}", shape.tokens, max_tokens));
  }
  // Grid limits: heads on y; batch times the (up to 3) pooled tensors on z.
  if (shape.batch > 65535 / 3 || shape.heads > 65535) {
    throw InvalidArgument(
        fmt::format("attention: batch = {} (max {}) or heads = {} (max 65535) "
                    "exceeds the grid limit",
                    shape.batch, 65535 / 3, shape.heads));
  }
}

}  // namespace memplan::attention
