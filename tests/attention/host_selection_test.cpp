// Host-only: the host reference selection on hand-made rows, where the right list is known:
// top-k with ties to the lower index, the threshold rule and its cap, forced blocks (a query
// block's, or given for a pair), sink query rows, lists shared by pairs of query blocks, and
// pooling and scores on a tensor small enough to check by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "memplan/attention/host_selection.hpp"
#include "memplan/attention/workspace.hpp"
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

AttentionPolicy pairs(AttentionPolicy p) {
  p.query_blocks_per_list = 2;
  return p;
}

TEST(HostSelectionPairs, ListQueriesArePairsWithTheOddLastBlockAlone) {
  const AttentionPolicy p = pairs(policy(SparsityMode::TopK, 10));
  EXPECT_EQ(list_queries(p, 0, 5).begin, 0);
  EXPECT_EQ(list_queries(p, 1, 5).begin, 0);
  EXPECT_EQ(list_queries(p, 1, 5).end, 2);
  EXPECT_EQ(list_queries(p, 3, 5).begin, 2);
  EXPECT_EQ(list_queries(p, 4, 5).begin, 4);
  EXPECT_EQ(list_queries(p, 4, 5).end, 5);
  EXPECT_EQ(list_queries(policy(SparsityMode::TopK, 10), 3, 5).size(), 1);
  EXPECT_THROW((void)list_queries(p, 5, 5), InvalidArgument);
  AttentionPolicy three = p;
  three.query_blocks_per_list = 3;
  EXPECT_THROW((void)list_queries(three, 0, 5), InvalidArgument);
}

TEST(HostSelectionPairs, ForcedBlocksAreBothBandsAndScoresTheMeanRow) {
  AttentionPolicy p = pairs(policy(SparsityMode::TopK, 10));
  p.sink_keys = {8, 9};
  for (int key = 0; key < 10; ++key) {
    EXPECT_EQ(forced_block(p, BlockRange{2, 4}, key), (key >= 1 && key <= 4) || key == 8) << key;
  }
  EXPECT_TRUE(forced_block(p, BlockRange{6, 8}, 8));  // the sink key
  EXPECT_TRUE(forced_block(p, BlockRange{6, 8}, 5));
  EXPECT_FALSE(forced_block(p, BlockRange{6, 8}, 4));
  // A head of 3 blocks: the pair (0, 1) scores the mean of its rows, the lone 2 its own row.
  const std::vector<double> head{1, 2, 3,  //
                                 3, 6, 0,  //
                                 7, 8, 9};
  EXPECT_EQ(list_scores(head, {0, 2}), (std::vector<double>{2, 4, 1.5}));
  EXPECT_EQ(list_scores(head, {2, 3}), (std::vector<double>{7, 8, 9}));
  EXPECT_THROW((void)list_scores(head, {2, 4}), InvalidArgument);
  EXPECT_THROW((void)list_scores(std::span<const double>(head).first(8), {0, 1}), InvalidArgument);
}

// 9 blocks (the last partial), top-k 20 % -> 2 by score: pairs (0, 1), (2, 3), (4, 5), (6, 7)
// and block 8 alone; query blocks 5 and 6 are sink queries, so pairs (4, 5) and (6, 7) are dense.
TEST(HostSelectionPairs, HandComputedListsAreSharedByThePair) {
  const AttentionShape shape{1, 64 * 9 - 30, 1, 64};
  AttentionPolicy p = pairs(policy(SparsityMode::TopK, 20));
  p.sink_queries = {5, 7};
  std::vector<double> scores(81, 0.0);
  auto at = [&](int q, int key) -> double& {
    return scores[static_cast<std::size_t>(q * 9 + key)];
  };
  // Pair (0, 1) forces 0..2. Alone, row 0 would pick 3 and 4, row 1 7 and 8; their mean row is
  // 3: 5, 4: 4.5, 5: 6, 7: 5, 8: 4.5, so the pair keeps 5 and 3 (the tie with 7 to the lower).
  at(0, 3) = 10, at(0, 4) = 9, at(0, 5) = 6;
  at(1, 7) = 10, at(1, 8) = 9, at(1, 5) = 6;
  // Pair (2, 3) forces 1..4; mean row 6: 1, 7: 1, 0: 0.5 -> 6 and 7.
  at(2, 6) = 2;
  at(3, 7) = 2, at(3, 0) = 1;
  // Block 8 alone forces 7 and 8 and keeps its own best two, 2 and 0.
  at(8, 0) = 3, at(8, 2) = 5, at(8, 4) = 1;
  const int max_k = max_kept_blocks(shape, p);
  ASSERT_EQ(max_k, 2 + 4);
  std::vector<int> idx(9 * 6, -1);
  std::vector<int> count(9, -1);
  select_blocks(shape, p, scores, idx, count, max_k);
  EXPECT_EQ(count, (std::vector<int>{5, 5, 6, 6, 9, 9, 9, 9, 4}));
  const std::vector<int> want{0, 1, 2, 3, 5,  -1,  //
                              0, 1, 2, 3, 5,  -1,  //
                              1, 2, 3, 4, 6,  7,   //
                              1, 2, 3, 4, 6,  7,   //
                              0, 1, 2, 3, 4,  5,   //
                              0, 1, 2, 3, 4,  5,   //
                              0, 1, 2, 3, 4,  5,   //
                              0, 1, 2, 3, 4,  5,   //
                              0, 2, 7, 8, -1, -1};
  EXPECT_EQ(idx, want);
  // The lone block's list is its own, as with a list per query block.
  EXPECT_EQ(select_row(p, 8, std::span<const double>(scores).subspan(72, 9)), (Blocks{0, 2, 7, 8}));
  // The pair (2, 3) needs 6 slots: its error names both blocks.
  try {
    select_blocks(shape, p, scores, idx, count, 5);
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("query blocks 2 to 3 keep 6 key blocks, more than "
                                         "max_k = 5"),
              std::string::npos)
        << e.what();
  }
  p.query_blocks_per_list = 0;
  EXPECT_THROW(select_blocks(shape, p, scores, idx, count, max_k), InvalidArgument);
}

// Random scores, each mode with sinks, an odd block count: both rows of a pair hold the list the
// rule picks on the pair's mean row with both bands forced (top-k: exactly the forced blocks plus
// top_k), and the lone last block holds the list a list per query block would give it.
TEST(HostSelectionPairs, RandomRowsFollowTheRuleOnThePairsMeanRow) {
  const AttentionShape shape{2, 64 * 31 - 7, 2, 64};
  const int n = shape.blocks();
  ASSERT_EQ(n, 31);
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> scores(static_cast<std::size_t>(shape.rows()) * n);
  for (double& s : scores) s = normal(rng);
  for (AttentionPolicy p :
       {policy(SparsityMode::Tau, 10, 100, 1.0f), policy(SparsityMode::Tau, 10, 10, 0.0f),
        policy(SparsityMode::TopK, 15), policy(SparsityMode::Coarse, 20)}) {
    p = pairs(p);
    p.sink_keys = {0, 2};
    p.sink_queries = {11, 12};
    SCOPED_TRACE(to_string(p.mode));
    const int max_k = max_kept_blocks(shape, p);
    std::vector<int> idx(static_cast<std::size_t>(shape.rows()) * max_k, -1);
    std::vector<int> count(static_cast<std::size_t>(shape.rows()), -1);
    select_blocks(shape, p, scores, idx, count, max_k);
    for (std::size_t row = 0; row < count.size(); ++row) {
      const int q_block = static_cast<int>(row % n);
      const auto head = std::span<const double>(scores).subspan(row / n * n * n, n * n);
      const BlockRange queries = list_queries(p, q_block, n);
      const std::vector<int> want = select_list(p, queries, list_scores(head, queries));
      ASSERT_EQ(count[row], static_cast<int>(want.size())) << "row " << row;
      const std::vector<int> got(
          idx.begin() + static_cast<std::ptrdiff_t>(row * max_k),
          idx.begin() + static_cast<std::ptrdiff_t>(row * max_k) + std::min(count[row], max_k));
      if (count[row] == n) {  // pair (10, 11): a sink query row in it
        EXPECT_TRUE(q_block == 10 || q_block == 11) << "row " << row;
        continue;
      }
      EXPECT_EQ(got, want) << "row " << row;
      int forced = 0;
      for (int key = 0; key < n; ++key) {
        const bool in_band = key >= queries.begin - 1 && key <= queries.end;
        if (in_band || p.sink_keys.contains(key)) {
          ++forced;
          EXPECT_TRUE(std::binary_search(got.begin(), got.end(), key)) << row << " " << key;
        }
      }
      if (p.mode != SparsityMode::Tau) {
        EXPECT_EQ(count[row], forced + rule_blocks(p, n));
      }
      if (q_block == n - 1) {
        EXPECT_EQ(got, select_row(p, q_block,
                                  head.subspan(static_cast<std::size_t>(q_block) * n,
                                               static_cast<std::size_t>(n))));
      }
    }
  }
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
