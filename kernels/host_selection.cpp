// The host reference selection (host_selection.hpp). It follows select.cu step by step, in double
// precision: the threshold rule's cut from the row's mean and std over every block, the switch to
// the top-k rule when more candidates pass than the cap, ties at the boundary to the lower index.
#include "memplan/attention/host_selection.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "memplan/attention/workspace.hpp"
#include "memplan/error.hpp"

namespace memplan::attention {

namespace {

std::size_t index(const AttentionShape& s, int b, std::int64_t t, int h, int d) {
  return static_cast<std::size_t>(((b * s.tokens + t) * s.heads + h) * s.head_dim + d);
}

void check_size(const char* name, std::size_t got, std::size_t want) {
  if (got < want) {
    throw InvalidArgument(
        fmt::format("attention host selection: {} holds {} values, {} needed", name, got, want));
  }
}

// The `k` best of `candidates` (block indices), ties to the lower index.
std::vector<int> best(std::vector<int> candidates, std::span<const double> scores, int k) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int a, int b) { return scores[a] > scores[b]; });
  candidates.resize(static_cast<std::size_t>(std::min<std::size_t>(k, candidates.size())));
  return candidates;
}

}  // namespace

std::vector<double> pool_blocks(const AttentionShape& shape, std::span<const float> x) {
  check_size("the pooled tensor", x.size(), static_cast<std::size_t>(shape.elements()));
  const int n = shape.blocks();
  std::vector<double> out(static_cast<std::size_t>(shape.rows()) * shape.head_dim, 0.0);
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < shape.heads; ++h) {
      for (int block = 0; block < n; ++block) {
        const std::int64_t t0 = static_cast<std::int64_t>(block) * kBlockTokens;
        const std::int64_t t1 = std::min<std::int64_t>(shape.tokens, t0 + kBlockTokens);
        const auto row = static_cast<std::size_t>((b * shape.heads + h) * n + block);
        for (int d = 0; d < shape.head_dim; ++d) {
          double sum = 0.0;
          for (std::int64_t t = t0; t < t1; ++t) sum += x[index(shape, b, t, h, d)];
          out[row * shape.head_dim + d] = sum / static_cast<double>(t1 - t0);
        }
      }
    }
  }
  return out;
}

std::vector<double> block_scores(const AttentionShape& shape, std::span<const double> pooled_q,
                                 std::span<const double> pooled_k) {
  const auto rows = static_cast<std::size_t>(shape.rows());
  const auto dim = static_cast<std::size_t>(shape.head_dim);
  check_size("pooled Q", pooled_q.size(), rows * dim);
  check_size("pooled K", pooled_k.size(), rows * dim);
  const auto n = static_cast<std::size_t>(shape.blocks());
  const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
  std::vector<double> scores(rows * n);
  for (std::size_t row = 0; row < rows; ++row) {
    const std::size_t head0 = row / n * n;
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (std::size_t d = 0; d < dim; ++d) {
        s += pooled_q[row * dim + d] * pooled_k[(head0 + j) * dim + d];
      }
      scores[row * n + j] = s * scale;
    }
  }
  return scores;
}

bool forced_block(const AttentionPolicy& policy, int q_block, int key) {
  return std::abs(key - q_block) <= kDiagonalRadius || policy.sink_keys.contains(key);
}

RowStats row_stats(std::span<const double> scores) {
  RowStats r;
  if (scores.empty()) return r;
  const auto n = static_cast<double>(scores.size());
  r.mean = std::accumulate(scores.begin(), scores.end(), 0.0) / n;
  double sq = 0.0;
  for (const double s : scores) sq += (s - r.mean) * (s - r.mean);
  r.std = std::sqrt(sq / n);
  return r;
}

std::vector<int> select_row(const AttentionPolicy& policy, int q_block,
                            std::span<const double> scores) {
  const int n = static_cast<int>(scores.size());
  if (traits(policy.mode).rule == SelectionRule::None || policy.sink_queries.contains(q_block)) {
    std::vector<int> every(static_cast<std::size_t>(n));
    std::iota(every.begin(), every.end(), 0);
    return every;
  }
  std::vector<int> forced;
  for (int j = 0; j < n; ++j) {
    if (forced_block(policy, q_block, j)) forced.push_back(j);
  }
  return select_with_forced(policy, scores, forced);
}

std::vector<int> select_with_forced(const AttentionPolicy& policy, std::span<const double> scores,
                                    std::span<const int> forced) {
  const int n = static_cast<int>(scores.size());
  const SelectionRule rule = traits(policy.mode).rule;
  std::vector<int> kept;
  std::vector<int> candidates;
  auto next = forced.begin();
  for (int j = 0; j < n; ++j) {
    const bool is_forced = next != forced.end() && *next == j;
    if (is_forced) ++next;
    (is_forced || rule == SelectionRule::None ? kept : candidates).push_back(j);
  }
  // An entry out of order, repeated or out of range stops the walk before the end.
  if (next != forced.end()) {
    throw InvalidArgument(fmt::format(
        "attention host selection: forced block {} is out of order or outside [0, {})", *next, n));
  }
  if (rule == SelectionRule::None) return kept;
  const int top_k = rule_blocks(policy, n);
  std::vector<int> chosen;
  if (rule == SelectionRule::Threshold) {
    const RowStats st = row_stats(scores);
    const double cut = st.mean + policy.tau * st.std;
    for (const int j : candidates) {
      if (scores[j] > cut) chosen.push_back(j);
    }
  }
  // Top-k, or a threshold that more candidates pass than the cap allows: the best of them all.
  if (rule == SelectionRule::TopK || static_cast<int>(chosen.size()) > top_k) {
    chosen = best(std::move(candidates), scores, top_k);
  }
  kept.insert(kept.end(), chosen.begin(), chosen.end());
  std::sort(kept.begin(), kept.end());
  return kept;
}

void select_blocks(const AttentionShape& shape, const AttentionPolicy& policy,
                   std::span<const double> scores, std::span<int> idx, std::span<int> count,
                   int max_k) {
  const auto rows = static_cast<std::size_t>(shape.rows());
  const int n = shape.blocks();
  check_size("the scores", scores.size(), rows * n);
  check_size("kv_idx", idx.size(), rows * max_k);
  check_size("kv_count", count.size(), rows);
  for (std::size_t row = 0; row < rows; ++row) {
    const int q_block = static_cast<int>(row % n);
    const std::vector<int> kept = select_row(policy, q_block, scores.subspan(row * n, n));
    const int size = static_cast<int>(kept.size());
    // A row of every block (sink query, dense mode) reads as dense by its count alone.
    if (size > max_k && size < n) {
      throw InvalidArgument(
          fmt::format("attention host selection: query block {} keeps {} key "
                      "blocks, more than max_k = {}",
                      q_block, size, max_k));
    }
    std::copy_n(kept.begin(), std::min(size, max_k),
                idx.begin() + static_cast<std::ptrdiff_t>(row * max_k));
    count[row] = size;
  }
}

}  // namespace memplan::attention
