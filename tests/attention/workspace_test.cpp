// Host-only: workspace arithmetic is exact, aligned, and covers every region it reports.
#include <gtest/gtest.h>

#include "memplan/attention/workspace.hpp"
#include "memplan/error.hpp"

namespace memplan::attention {
namespace {

TEST(AttentionWorkspace, DenseNeedsNothing) {
  AttentionPolicy p;
  p.mode = SparsityMode::Dense;
  const auto layout = workspace_layout({1, 8192, 24, 128}, p);
  EXPECT_EQ(layout.bytes, 0u);
  EXPECT_EQ(layout.max_k, 0);
}

TEST(AttentionWorkspace, TopkCapacityIsSelectedPlusForced) {
  AttentionPolicy p;
  p.mode = SparsityMode::TopK;
  p.keep_percent = 10.0f;
  const AttentionShape shape{1, 75600, 24, 128};  // 1182 blocks
  EXPECT_EQ(selected_blocks(shape, p), 119);      // ceil(118.2)
  EXPECT_EQ(max_kept_blocks(shape, p), 119 + 3);
  p.sink_keys = {0, 4};
  EXPECT_EQ(max_kept_blocks(shape, p), 119 + 3 + 4);
  p.keep_percent = 100.0f;  // never more than every block
  EXPECT_EQ(max_kept_blocks(shape, p), 1182);
}

TEST(AttentionWorkspace, PairListsForceABandOneBlockWider) {
  AttentionPolicy p;
  p.mode = SparsityMode::TopK;
  p.keep_percent = 10.0f;
  p.sink_keys = {0, 4};
  const AttentionShape shape{1, 75600, 24, 128};  // 1182 blocks
  const int per_block = max_kept_blocks(shape, p);
  p.query_blocks_per_list = 2;
  EXPECT_EQ(max_kept_blocks(shape, p), per_block + 1);
  const auto layout = workspace_layout(shape, p);
  EXPECT_EQ(layout.max_k, 119 + 4 + 4);
  EXPECT_EQ(layout.query_blocks_per_list, 2);
  p.query_blocks_per_list = 3;
  EXPECT_THROW((void)max_kept_blocks(shape, p), InvalidArgument);
}

TEST(AttentionWorkspace, TauCapacityFollowsTheCap) {
  AttentionPolicy p;
  p.mode = SparsityMode::Tau;
  const AttentionShape shape{1, 6400, 2, 64};  // 100 blocks
  EXPECT_EQ(max_kept_blocks(shape, p), 100);
  p.max_keep_percent = 20.0f;
  EXPECT_EQ(max_kept_blocks(shape, p), 23);
}

TEST(AttentionWorkspace, RegionsAreAlignedDisjointAndExact) {
  AttentionPolicy p;
  p.mode = SparsityMode::Coarse;
  p.keep_percent = 10.0f;
  const AttentionShape shape{2, 1000, 3, 64};  // 16 blocks, 96 rows
  const auto l = workspace_layout(shape, p);
  const std::size_t pooled = 96 * 64 * 4;
  EXPECT_TRUE(l.has_pooled_v && l.has_coarse);
  EXPECT_EQ(l.max_k, 2 + 3);
  const std::size_t offsets[] = {l.pooled_q, l.pooled_k, l.pooled_v,
                                 l.kv_idx,   l.kv_count, l.coarse};
  const std::size_t sizes[] = {pooled, pooled, pooled, 96u * 5 * 4, 96u * 4, pooled};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(offsets[i] % kWorkspaceAlignment, 0u) << i;
    if (i > 0) {
      EXPECT_GE(offsets[i], offsets[i - 1] + sizes[i - 1]) << i;
    }
  }
  EXPECT_GE(l.bytes, l.coarse + pooled);
  EXPECT_LT(l.bytes, l.coarse + pooled + kWorkspaceAlignment);
  EXPECT_EQ(workspace_bytes(shape, p), l.bytes);
}

TEST(AttentionWorkspace, TauHasNoCoarseOrPooledV) {
  AttentionPolicy p;
  const auto l = workspace_layout({1, 640, 1, 128}, p);
  EXPECT_FALSE(l.has_pooled_v);
  EXPECT_FALSE(l.has_coarse);
  // 10 rows: pooled Q, K 5120 B each; kv_idx 10x10 int -> 400 -> 512; kv_count 40 -> 256.
  EXPECT_EQ(l.kv_idx, 10240u);
  EXPECT_EQ(l.kv_count, 10752u);
  EXPECT_EQ(l.bytes, 11008u);
}

}  // namespace
}  // namespace memplan::attention
