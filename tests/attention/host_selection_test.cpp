// Host-only: the host reference selection on hand-made rows, where the right list is known:
// top-k with ties to the lower index, the threshold rule and its cap, forced blocks (a query
// block's, or given for a pair), sink query rows, and pooling and scores on a tensor small enough
// to check by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <vector>

#include "memplan/attention/host_selection.hpp"
#include "memplan/error.hpp"

namespace memplan::attention {
namespace {

AttentionPolicy policy(SparsityMode mode, float keep, float cap = 100.0f, float tau = 1.0f) {
  AttentionPolicy p;
  p.mode = mode;
  p.keep_percent = keep;
  p.max_keep_percent = cap;
  p.tau = tau;
  return p;
}

using Blocks = std::vector<int>;

TEST(HostSelection, TopKKeepsTheBestPlusTheDiagonalBand) {
  // 10 blocks, 20% -> 2 by score; query block 0 forces 0 and 1.
  const std::vector<double> s{9, 8, 1, 7, 0, 6, 2, 3, 4, 5};
  EXPECT_EQ(select_row(policy(SparsityMode::TopK, 20), 0, s), (Blocks{0, 1, 3, 5}));
  // Query block 5 forces 4, 5, 6; the best others are 0 and 1.
  EXPECT_EQ(select_row(policy(SparsityMode::TopK, 20), 5, s), (Blocks{0, 1, 4, 5, 6}));
}

TEST(HostSelection, TiesAtTheBoundaryGoToTheLowerIndex) {
  const std::vector<double> s{0, 0, 0, 5, 5, 5, 5, 0, 0, 0};
  EXPECT_EQ(select_row(policy(SparsityMode::TopK, 20), 0, s), (Blocks{0, 1, 3, 4}));
  const std::vector<double> flat(10, 1.0);
  EXPECT_EQ(select_row(policy(SparsityMode::Coarse, 30), 9, flat), (Blocks{0, 1, 2, 8, 9}));
}

TEST(HostSelection, ThresholdKeepsScoresAboveMeanPlusTauStd) {
  // 12 blocks, two at 5 and one at 7, the rest 0: mean 17/12, std 2.5, so the cut at
  // mean + 1 * std passes the three outliers; the forced 0 and 1 come on top.
  std::vector<double> s(12, 0.0);
  s[4] = 5;
  s[7] = 7;
  s[10] = 5;
  const RowStats st = row_stats(s);
  EXPECT_DOUBLE_EQ(st.mean, 17.0 / 12.0);
  EXPECT_GT(5.0, st.mean + st.std);
  EXPECT_EQ(select_row(policy(SparsityMode::Tau, 10, 100, 1.0f), 0, s), (Blocks{0, 1, 4, 7, 10}));
  // tau 2: the cut passes 5 but not 7.
  ASSERT_LT(st.mean + 2 * st.std, 7.0);
  ASSERT_GT(st.mean + 2 * st.std, 5.0);
  EXPECT_EQ(select_row(policy(SparsityMode::Tau, 10, 100, 2.0f), 0, s), (Blocks{0, 1, 7}));
}

TEST(HostSelection, ThresholdOverTheCapKeepsTheBestCapBlocks) {
  // tau 0 passes the three outliers; a cap of 2 of 12 blocks (ceil 1.92) keeps the best two.
  std::vector<double> s(12, 0.0);
  s[4] = 5;
  s[7] = 7;
  s[10] = 6;
  EXPECT_EQ(select_row(policy(SparsityMode::Tau, 10, 16.0f, 0.0f), 0, s), (Blocks{0, 1, 7, 10}));
}

TEST(HostSelection, SinkKeysAreForcedAndSinkQueriesKeepEverything) {
  AttentionPolicy p = policy(SparsityMode::TopK, 10);
  p.sink_keys = {6, 8};
  p.sink_queries = {2, 3};
  const std::vector<double> s{0, 1, 2, 3, 4, 9, 0, 0, 0, 0};
  EXPECT_TRUE(forced_block(p, 0, 7));
  EXPECT_FALSE(forced_block(p, 0, 8));
  EXPECT_EQ(select_row(p, 0, s), (Blocks{0, 1, 5, 6, 7}));
  EXPECT_EQ(select_row(p, 2, s), (Blocks{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(select_row(policy(SparsityMode::Dense, 10), 4, s).size(), 10u);
}

TEST(HostSelection, GivenForcedBlocksTakeNoSlotOfTheRule) {
  // A pair of query blocks 4 and 5 forces 3..6; 20% of 10 -> 2 by score among the others, so the
  // 6 scored 9 is forced and the rule still picks 0 and 1.
  const std::vector<double> s{8, 7, 1, 0, 2, 3, 9, 0, 0, 0};
  const std::vector<int> pair{3, 4, 5, 6};
  EXPECT_EQ(select_with_forced(policy(SparsityMode::TopK, 20), s, pair),
            (Blocks{0, 1, 3, 4, 5, 6}));
  // One query block's forced set gives select_row's list.
  const std::vector<int> row{4, 5, 6};
  EXPECT_EQ(select_with_forced(policy(SparsityMode::TopK, 20), s, row),
            select_row(policy(SparsityMode::TopK, 20), 5, s));
  EXPECT_EQ(select_with_forced(policy(SparsityMode::Dense, 10), s, row).size(), 10u);
  const std::vector<int> unordered{5, 4};
  const std::vector<int> outside{9, 10};
  EXPECT_THROW((void)select_with_forced(policy(SparsityMode::TopK, 20), s, unordered),
               InvalidArgument);
  EXPECT_THROW((void)select_with_forced(policy(SparsityMode::TopK, 20), s, outside),
               InvalidArgument);
}

TEST(HostSelection, BlockListsAreLaidOutAsTheWorkspaceHoldsThem) {
  // One head of 4 blocks (200 tokens: the last block partial), 10% -> 1 block by score; query
  // block 1 is a sink query row, query block 2 keeps every block through its forced ones.
  const AttentionShape shape{1, 200, 1, 64};
  AttentionPolicy p = policy(SparsityMode::TopK, 10);
  p.sink_queries = {1, 2};
  const std::vector<double> scores{0, 1, 5, 0,   // q0: forces 0, 1; best other 2
                                   0, 0, 0, 0,   // q1: sink query row
                                   3, 0, 0, 0,   // q2: forces 1, 2, 3; best other 0
                                   0, 9, 0, 0};  // q3: forces 2, 3; best other 1
  std::vector<int> idx(4 * 4, -1);
  std::vector<int> count(4, -1);
  select_blocks(shape, p, scores, idx, count, 4);
  EXPECT_EQ(count, (std::vector<int>{3, 4, 4, 3}));
  EXPECT_EQ(idx, (std::vector<int>{0, 1, 2, -1, 0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 3, -1}));
  // Rows of 3 do not fit rows of 2 (rows of every block would: their count says dense).
  EXPECT_THROW(select_blocks(shape, p, scores, idx, count, 2), InvalidArgument);
  std::vector<int> short_idx(5);
  EXPECT_THROW(select_blocks(shape, p, scores, short_idx, count, 4), InvalidArgument);
}

TEST(HostSelection, PoolsPartialBlocksAndScalesScores) {
  // batch 1, 70 tokens (blocks of 64 and 6), 1 head, head_dim 2: x[t] = (t, 1).
  const AttentionShape shape{1, 70, 1, 2};
  std::vector<float> x;
  for (int t = 0; t < 70; ++t) x.insert(x.end(), {static_cast<float>(t), 1.0f});
  const std::vector<double> pooled = pool_blocks(shape, x);
  EXPECT_EQ(pooled, (std::vector<double>{31.5, 1.0, 66.5, 1.0}));
  const std::vector<double> s = block_scores(shape, pooled, pooled);
  const double scale = 1.0 / std::sqrt(2.0);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_DOUBLE_EQ(s[0], (31.5 * 31.5 + 1.0) * scale);
  EXPECT_DOUBLE_EQ(s[1], (31.5 * 66.5 + 1.0) * scale);
  EXPECT_DOUBLE_EQ(s[3], (66.5 * 66.5 + 1.0) * scale);
  EXPECT_THROW((void)pool_blocks(shape, std::span<const float>(x).first(10)), InvalidArgument);
}

}  // namespace
}  // namespace memplan::attention
