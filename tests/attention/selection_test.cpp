// Selection + attention through the one-call API, per mode: every block-list row is checked
// against a CPU reference of the rule (as sets, with a tolerance band at the decision boundary),
// then the output against the double reference restricted to that list (plus the coarse branch).
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "gpu_case.hpp"
#include "kernel_choice.hpp"
#include "support/gpu.hpp"

namespace memplan::attention::test {
namespace {

struct SelectCase {
  const char* name;
  AttentionPolicy policy;
  int batch;
  std::int64_t tokens;
  int head_dim;
  const char* kernel = "";  // a MEMPLAN_ATTENTION_KERNEL value, "" the default path
};

AttentionPolicy make(SparsityMode mode, float tau, float keep, float cap, BlockRange sink_keys = {},
                     BlockRange sink_queries = {}) {
  AttentionPolicy p;
  p.mode = mode;
  p.tau = tau;
  p.keep_percent = keep;
  p.max_keep_percent = cap;
  p.sink_keys = sink_keys;
  p.sink_queries = sink_queries;
  p.coarse_gate = 0.5f;
  return p;
}

// Checks each block-list row against the CPU rule on the reference scores: a list's first row on
// the list's scores (a pair's mean row, list_scores), the pair's second row identical to its
// first; reports up to five bad rows.
void expect_lists_follow_rule(const AttentionShape& shape, const AttentionPolicy& policy,
                              const std::vector<double>& scores, const int* idx, const int* count,
                              int max_k) {
  const int n = shape.blocks();
  const auto head_size = static_cast<std::size_t>(n) * n;
  int bad = 0;
  for (std::size_t row = 0; row < static_cast<std::size_t>(shape.rows()) && bad < 5; ++row) {
    const BlockRange queries = list_queries(policy, static_cast<int>(row % n), n);
    const std::size_t first = row - row % n + static_cast<std::size_t>(queries.begin);
    std::string why;
    if (row != first) {
      const int* list = idx + row * max_k;
      const int* first_list = idx + first * max_k;
      if (count[row] != count[first] ||
          !std::equal(list, list + std::min(count[row], max_k), first_list)) {
        why = "differs from row " + std::to_string(first) + ", the first of its list";
      }
    } else {
      const auto head = std::span<const double>(scores).subspan(row / n * head_size, head_size);
      const std::vector<double> mean = list_scores(head, queries);
      why = check_selection_row(policy, queries, n, mean.data(), idx + row * max_k, count[row],
                                max_k);
    }
    if (!why.empty()) {
      ++bad;
      ADD_FAILURE() << "row " << row << ": " << why;
    }
  }
}

AttentionPolicy pairs(AttentionPolicy p) {
  p.query_blocks_per_list = 2;
  return p;
}

// Host only: the checker the device lists face and the host reference selection are one rule.
// The checker accepts every list the reference selects, for each sparse mode with sinks, a list
// per query block or per pair (41 blocks: the last alone), and rejects a list where the best
// dropped candidate swaps places with the worst kept one, or a pair's list without the band of its
// second block.
TEST(SelectionChecker, AcceptsTheHostReferenceAndRejectsASwap) {
  const AttentionShape shape{1, 64 * 41 - 20, 2, 64};
  std::mt19937 rng(next_seed());
  const Tensor q = random_tensor(shape, rng, 1.0f);
  const Tensor k = random_tensor(shape, rng, 1.0f);
  const auto scores =
      block_scores(shape, pool_blocks(shape, q.values), pool_blocks(shape, k.values));
  const int n = shape.blocks();
  const auto head_size = static_cast<std::size_t>(n) * n;
  std::vector<AttentionPolicy> policies{
      make(SparsityMode::Tau, 1.0f, 10, 100, {0, 2}, {3, 4}), make(SparsityMode::Tau, 0.0f, 10, 10),
      make(SparsityMode::TopK, 0, 15, 100, {0, 1}, {0, 1}), make(SparsityMode::Coarse, 0, 20, 100)};
  for (std::size_t i = 0, singles = policies.size(); i < singles; ++i) {
    policies.push_back(pairs(policies[i]));
  }
  for (const AttentionPolicy& policy : policies) {
    SCOPED_TRACE(testing::Message() << to_string(policy.mode) << ", "
                                    << policy.query_blocks_per_list << " query blocks a list");
    const int max_k = max_kept_blocks(shape, policy);
    std::vector<int> idx(static_cast<std::size_t>(shape.rows()) * max_k);
    std::vector<int> count(static_cast<std::size_t>(shape.rows()));
    select_blocks(shape, policy, scores, idx, count, max_k);
    expect_lists_follow_rule(shape, policy, scores, idx.data(), count.data(), max_k);
    int swaps = 0;
    int bands = 0;
    for (std::size_t row = 0; row < count.size(); ++row) {
      const BlockRange queries = list_queries(policy, static_cast<int>(row % n), n);
      if (static_cast<int>(row % n) != queries.begin) continue;  // the list's first row only
      const std::vector<double> mean = list_scores(
          std::span<const double>(scores).subspan(row / n * head_size, head_size), queries);
      const double* s = mean.data();
      int* list = &idx[row * max_k];
      ASSERT_EQ(check_selection_row(policy, queries, n, s, list, count[row], max_k), "")
          << "row " << row;
      if (count[row] == n) continue;  // a sink query's list
      // Swap the worst kept candidate for the best dropped one, if they differ clearly.
      std::vector<char> in(static_cast<std::size_t>(n), 0);
      for (int i = 0; i < count[row]; ++i) in[static_cast<std::size_t>(list[i])] = 1;
      // A pair's list without the upper edge of its band, forced by its second block alone.
      const int edge = queries.end;
      if (queries.size() == 2 && edge < n && !policy.sink_keys.contains(edge)) {
        std::vector<int> cut;
        for (int j = 0; j < n; ++j) {
          if (in[static_cast<std::size_t>(j)] != 0 && j != edge) cut.push_back(j);
        }
        EXPECT_NE(check_selection_row(policy, queries, n, s, cut.data(),
                                      static_cast<int>(cut.size()), max_k),
                  "")
            << "row " << row;
        ++bands;
      }
      int worst = -1, best = -1;
      for (int j = 0; j < n; ++j) {
        if (forced_block(policy, queries, j)) continue;
        if (in[static_cast<std::size_t>(j)] != 0 && (worst < 0 || s[j] < s[worst])) worst = j;
        if (in[static_cast<std::size_t>(j)] == 0 && (best < 0 || s[j] > s[best])) best = j;
      }
      const double spread = row_stats({s, static_cast<std::size_t>(n)}).std;
      if (worst < 0 || best < 0 || s[worst] - s[best] < 0.1 * spread) continue;
      in[static_cast<std::size_t>(worst)] = 0;
      in[static_cast<std::size_t>(best)] = 1;
      std::vector<int> swapped;
      for (int j = 0; j < n; ++j) {
        if (in[static_cast<std::size_t>(j)] != 0) swapped.push_back(j);
      }
      EXPECT_NE(check_selection_row(policy, queries, n, s, swapped.data(), count[row], max_k), "")
          << "row " << row;
      ++swaps;
    }
    EXPECT_GT(swaps, 0);
    EXPECT_EQ(bands > 0, policy.query_blocks_per_list == 2);
  }
}

class Selection : public ::testing::TestWithParam<SelectCase> {};

TEST_P(Selection, ListFollowsRuleAndOutputMatchesReference) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const SelectCase& sc = GetParam();
  const ScopedKernel kernel(sc.kernel);
  const AttentionShape shape{sc.batch, sc.tokens, 2, sc.head_dim};
  GpuCase c(shape, 1.0f);  // structured inputs: block scores spread out as in video
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  const WorkspaceLayout layout = workspace_layout(shape, sc.policy);
  DeviceBuffer workspace(layout.bytes);
  workspace.poison();
  const SparsityMode mode = launch_attention(shape, c.tensors(), sc.policy, 0.5, workspace.get(),
                                             workspace.bytes(), nullptr);
  ASSERT_EQ(mode, sc.policy.mode);
  TEST_CUDA(cudaDeviceSynchronize());

  const auto rows = static_cast<std::size_t>(shape.rows());
  HostBlockList list;
  list.max_k = layout.max_k;
  {
    std::vector<int> all = workspace.download<int>(layout.bytes / sizeof(int));
    list.idx.assign(
        all.begin() + static_cast<std::ptrdiff_t>(layout.kv_idx / 4),
        all.begin() + static_cast<std::ptrdiff_t>(layout.kv_idx / 4 + rows * layout.max_k));
    list.count.assign(all.begin() + static_cast<std::ptrdiff_t>(layout.kv_count / 4),
                      all.begin() + static_cast<std::ptrdiff_t>(layout.kv_count / 4 + rows));
  }
  const auto qbar = pool_blocks(shape, c.q.values);
  const auto kbar = pool_blocks(shape, c.k.values);
  const auto scores = block_scores(shape, qbar, kbar);
  expect_lists_follow_rule(shape, sc.policy, scores, list.idx.data(), list.count.data(),
                           layout.max_k);

  std::vector<float> coarse;
  if (layout.has_coarse) {
    std::vector<float> all = workspace.download<float>(layout.bytes / sizeof(float));
    coarse.assign(
        all.begin() + static_cast<std::ptrdiff_t>(layout.coarse / 4),
        all.begin() + static_cast<std::ptrdiff_t>(layout.coarse / 4 + rows * sc.head_dim));
    const auto vbar = pool_blocks(shape, c.v.values);
    const auto want = reference_coarse(shape, scores, vbar);
    EXPECT_LE(relative_l2(coarse, std::vector<float>(want.begin(), want.end())), 1e-3);
  }
  const auto want = reference_attention(
      shape, c.q, c.k, c.v, list, layout.has_coarse ? &coarse : nullptr, sc.policy.coarse_gate);
  EXPECT_LE(relative_l2(c.output(), want), kMaxRelativeL2);
}

// Rows whose scores tie massively: every key block a copy of block 0 (a flat row), or of block 0
// and 1 alternately (two values, ~n/2 blocks each). Both take topk_cut's exact fallback (a flat
// range, or more than 32 candidates in the boundary bin); the lists must still hold exactly k.
TEST(SelectionTies, FlatAndTwoValuedRowsKeepExactlyK) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  for (const int patterns : {1, 2}) {
    const AttentionShape shape{1, 64 * 100, 2, 64};
    GpuCase c(shape, 1.0f);
    SCOPED_TRACE(testing::Message() << "seed " << c.seed << ", " << patterns << " block patterns");
    for (std::int64_t tok = 0; tok < shape.tokens; ++tok) {
      const std::int64_t src = (tok / 64) % patterns * 64 + tok % 64;
      for (int h = 0; h < shape.heads; ++h) {
        for (int d = 0; d < shape.head_dim; ++d) {
          const auto to = static_cast<std::size_t>((tok * shape.heads + h) * shape.head_dim + d);
          const auto from = static_cast<std::size_t>((src * shape.heads + h) * shape.head_dim + d);
          c.k.bits[to] = c.k.bits[from];
          c.k.values[to] = c.k.values[from];
        }
      }
    }
    c.dk->upload(c.k.bits);
    const AttentionPolicy policy = make(SparsityMode::TopK, 0, 10, 100);
    const WorkspaceLayout layout = workspace_layout(shape, policy);
    DeviceBuffer workspace(layout.bytes);
    workspace.poison();
    launch_selection(shape, c.tensors(), policy, workspace.get(), workspace.bytes(), nullptr);
    TEST_CUDA(cudaDeviceSynchronize());
    const auto rows = static_cast<std::size_t>(shape.rows());
    const int n = shape.blocks();
    std::vector<int> all = workspace.download<int>(layout.bytes / sizeof(int));
    const int* idx = all.data() + layout.kv_idx / 4;
    const int* count = all.data() + layout.kv_count / 4;
    const auto scores =
        block_scores(shape, pool_blocks(shape, c.q.values), pool_blocks(shape, c.k.values));
    for (std::size_t row = 0; row < rows; ++row) {
      const auto q_block = static_cast<int>(row % n);
      const std::string why =
          check_selection_row(policy, BlockRange{q_block, q_block + 1}, n, &scores[row * n],
                              idx + row * layout.max_k, count[row], layout.max_k);
      ASSERT_TRUE(why.empty()) << "row " << row << ": " << why;
    }
  }
}

// Rows as long as the 75,600 tokens (1,182 blocks) and 1,300 blocks, past what a
// register row holds: without the coarse branch both take the select kernel that reads rows from
// shared memory, two CTAs an SM; 1,600 blocks leaves room for one CTA only (the one-CTA kernel,
// rows from shared memory). Lists only: the attention reference would take minutes on the CPU
// at these lengths.
struct LongRowCase {
  const char* name;
  AttentionPolicy policy;
  std::int64_t tokens;
  int head_dim;
};

class SelectionLongRows : public ::testing::TestWithParam<LongRowCase> {};

TEST_P(SelectionLongRows, ListsFollowTheRule) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const LongRowCase& lc = GetParam();
  const AttentionShape shape{1, lc.tokens, 2, lc.head_dim};
  GpuCase c(shape, 1.0f);
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  const WorkspaceLayout layout = workspace_layout(shape, lc.policy);
  DeviceBuffer workspace(layout.bytes);
  workspace.poison();
  launch_selection(shape, c.tensors(), lc.policy, workspace.get(), workspace.bytes(), nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  std::vector<int> all = workspace.download<int>(layout.bytes / sizeof(int));
  const int* idx = all.data() + layout.kv_idx / 4;
  const int* count = all.data() + layout.kv_count / 4;
  const auto scores =
      block_scores(shape, pool_blocks(shape, c.q.values), pool_blocks(shape, c.k.values));
  expect_lists_follow_rule(shape, lc.policy, scores, idx, count, layout.max_k);
}

INSTANTIATE_TEST_SUITE_P(
    Lengths, SelectionLongRows,
    ::testing::Values(
        LongRowCase{"topk10_1182_d128", make(SparsityMode::TopK, 0, 10, 100, {0, 2}, {5, 6}), 75600,
                    128},
        LongRowCase{"tau15_1182_d64", make(SparsityMode::Tau, 1.5f, 10, 30), 75600, 64},
        LongRowCase{"topk10_1300_d64", make(SparsityMode::TopK, 0, 10, 100, {0, 2}, {5, 6}),
                    64 * 1300 - 20, 64},
        LongRowCase{"tau1_1300_d128", make(SparsityMode::Tau, 1.0f, 10, 10), 64 * 1300, 128},
        LongRowCase{"topk10_1600_d128", make(SparsityMode::TopK, 0, 10, 100, {0, 2}, {5, 6}),
                    64 * 1600 - 7, 128},
        // A list per pair of query blocks; 1,299 blocks: the last alone.
        LongRowCase{"topk10_pairs_1182_d128",
                    pairs(make(SparsityMode::TopK, 0, 10, 100, {0, 2}, {5, 6})), 75600, 128},
        LongRowCase{"tau15_pairs_1299_d64", pairs(make(SparsityMode::Tau, 1.5f, 10, 30)),
                    64 * 1299 - 5, 64}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

const std::vector<SelectCase> kModeCases{
    SelectCase{"tau1_d64", make(SparsityMode::Tau, 1.0f, 10, 100), 2, 2500, 64},
    SelectCase{"tau15_d128", make(SparsityMode::Tau, 1.5f, 10, 100), 2, 2500, 128},
    SelectCase{"tau2_sinks_d64", make(SparsityMode::Tau, 2.0f, 10, 100, {0, 2}, {3, 5}), 1, 3000,
               64},
    SelectCase{"tau0_capped_d128", make(SparsityMode::Tau, 0.0f, 10, 5), 2, 2500, 128},
    SelectCase{"topk10_d128", make(SparsityMode::TopK, 0, 10, 100), 2, 2048, 128},
    SelectCase{"topk25_sinks_d64", make(SparsityMode::TopK, 0, 25, 100, {0, 1}, {0, 1}), 2, 1999,
               64},
    SelectCase{"topk_tiny_d64", make(SparsityMode::TopK, 0, 10, 100), 1, 100, 64},
    SelectCase{"coarse10_d128", make(SparsityMode::Coarse, 0, 10, 100, {1, 2}, {}), 2, 2500, 128},
    SelectCase{"coarse20_d64", make(SparsityMode::Coarse, 0, 20, 100), 1, 700, 64}};

std::string select_case_name(const ::testing::TestParamInfo<SelectCase>& param_info) {
  std::string name = param_info.param.name;
  for (const char* c = param_info.param.kernel; *c != '\0'; ++c) {
    if (c == param_info.param.kernel) name += "_";
    name += *c == '-' ? '_' : *c;
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Modes, Selection, ::testing::ValuesIn(kModeCases), select_case_name);

// One list per pair of query blocks (blocks = ceil(tokens / 64)): 32 and 40 blocks (the last
// partial, in a pair), 39 and 47 (the last alone); sink queries 3 and 4 fall in the pairs (2, 3)
// and (4, 5), which are then dense.
const std::vector<SelectCase> kPairCases{
    SelectCase{"topk10_pairs_d128", pairs(make(SparsityMode::TopK, 0, 10, 100)), 2, 2048, 128},
    SelectCase{"tau15_pairs_d128", pairs(make(SparsityMode::Tau, 1.5f, 10, 100)), 2, 2450, 128},
    SelectCase{"tau2_sinks_pairs_d128",
               pairs(make(SparsityMode::Tau, 2.0f, 10, 100, {0, 2}, {3, 5})), 1, 3000, 128},
    SelectCase{"tau0_capped_pairs_d64", pairs(make(SparsityMode::Tau, 0.0f, 10, 5)), 2, 2450, 64},
    SelectCase{"coarse10_pairs_d128", pairs(make(SparsityMode::Coarse, 0, 10, 100, {1, 2}, {})), 2,
               2500, 128}};

INSTANTIATE_TEST_SUITE_P(Pairs, Selection, ::testing::ValuesIn(kPairCases), select_case_name);

// The head_dim 128 cases (the Hopper kernels' only head_dim) on the TMA kernel by name (the
// default path runs it only where the driver has tensor maps).
std::vector<SelectCase> tma_cases(const std::vector<SelectCase>& from) {
  std::vector<SelectCase> cases;
  for (SelectCase c : from) {
    if (c.head_dim != 128) continue;
    c.kernel = "tma";
    cases.push_back(c);
  }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Tma, Selection, ::testing::ValuesIn(tma_cases(kModeCases)),
                         select_case_name);
INSTANTIATE_TEST_SUITE_P(TmaPairs, Selection, ::testing::ValuesIn(tma_cases(kPairCases)),
                         select_case_name);

}  // namespace
}  // namespace memplan::attention::test
