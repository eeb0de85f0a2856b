// The host reference selection (host_selection.hpp). It follows select.cu step by step, in double
// precision: the threshold rule's cut from the row's mean and std over every block, the switch to
// the top-k rule when more candidates pass than the cap, ties at the boundary to the lower index.
// A list shared by a pair of query blocks is the same rule on the pair's mean scores.
#include "memplan/attention/host_selection.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>

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

BlockRange list_queries(const AttentionPolicy& policy, int q_block, int blocks) {
  validate(policy);
  if (q_block < 0 || q_block >= blocks) {
    throw InvalidArgument(fmt::format("attention host selection: query block {} is outside [0, {})",
                                      q_block, blocks));
  }
  const int per = policy.query_blocks_per_list;
  const int first = q_block / per * per;
  return {first, std::min(first + per, blocks)};
}

bool forced_block(const AttentionPolicy& policy, int q_block, int key) {
  return forced_block(policy, BlockRange{q_block, q_block + 1}, key);
}

bool forced_block(const AttentionPolicy& policy, BlockRange queries, int key) {
  const bool in_band =
      key >= queries.begin - kDiagonalRadius && key <= queries.end - 1 + kDiagonalRadius;
  return in_band || policy.sink_keys.contains(key);
}

std::vector<double> list_scores(std::span<const double> head_scores, BlockRange queries) {
  const auto n = static_cast<std::size_t>(std::sqrt(static_cast<double>(head_scores.size())));
  if (n * n != head_scores.size() || queries.empty() || queries.begin < 0 ||
      static_cast<std::size_t>(queries.end) > n) {
    throw InvalidArgument(fmt::format(
        "attention host selection: query blocks [{}, {}) of a head's {} scores, which must be a "
        "square [blocks, blocks] holding them",
        queries.begin, queries.end, head_scores.size()));
  }
  std::vector<double> mean(n, 0.0);
  for (int q = queries.begin; q < queries.end; ++q) {
    const std::span<const double> row = head_scores.subspan(static_cast<std::size_t>(q) * n, n);
    for (std::size_t j = 0; j < n; ++j) mean[j] += row[j];
  }
  for (double& s : mean) s /= static_cast<double>(queries.size());
  return mean;
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
  return select_list(policy, BlockRange{q_block, q_block + 1}, scores);
}

std::vector<int> select_list(const AttentionPolicy& policy, BlockRange queries,
                             std::span<const double> scores) {
  const int n = static_cast<int>(scores.size());
  // A sink query among the list's query blocks needs every key block, so the list has them all.
  const bool sink_query = std::max(queries.begin, policy.sink_queries.begin) <
                          std::min(queries.end, policy.sink_queries.end);
  if (traits(policy.mode).rule == SelectionRule::None || sink_query) {
    std::vector<int> every(static_cast<std::size_t>(n));
    std::iota(every.begin(), every.end(), 0);
    return every;
  }
  std::vector<int> forced;
  for (int j = 0; j < n; ++j) {
    if (forced_block(policy, queries, j)) forced.push_back(j);
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
  validate(policy);
  const auto rows = static_cast<std::size_t>(shape.rows());
  const int n = shape.blocks();
  const auto head_size = static_cast<std::size_t>(n) * n;
  check_size("the scores", scores.size(), rows * n);
  check_size("kv_idx", idx.size(), rows * max_k);
  check_size("kv_count", count.size(), rows);
  for (std::size_t row = 0; row < rows; ++row) {
    const int q_block = static_cast<int>(row % n);
    const BlockRange queries = list_queries(policy, q_block, n);
    // The list's later rows repeat the one its first row chose.
    if (q_block != queries.begin) {
      const std::size_t first = row - static_cast<std::size_t>(q_block - queries.begin);
      std::copy_n(idx.begin() + static_cast<std::ptrdiff_t>(first * max_k),
                  std::min(count[first], max_k),
                  idx.begin() + static_cast<std::ptrdiff_t>(row * max_k));
      count[row] = count[first];
      continue;
    }
    const std::span<const double> head = scores.subspan(row / n * head_size, head_size);
    const std::vector<int> kept = select_list(policy, queries, list_scores(head, queries));
    const int size = static_cast<int>(kept.size());
    // A row of every block (sink query, dense mode) reads as dense by its count alone.
    if (size > max_k && size < n) {
      const std::string who = queries.size() == 1 ? fmt::format("query block {} keeps", q_block)
                                                  : fmt::format("query blocks {} to {} keep",
                                                                queries.begin, queries.end - 1);
      throw InvalidArgument(fmt::format(
          "attention host selection: {} {} key blocks, more than max_k = {}", who, size, max_k));
    }
    std::copy_n(kept.begin(), std::min(size, max_k),
                idx.begin() + static_cast<std::ptrdiff_t>(row * max_k));
    count[row] = size;
  }
}

}  // namespace memplan::attention
