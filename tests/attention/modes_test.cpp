// Host-only: the table of sparsity modes is what every switch reads, and a mode outside it is an
// error wherever it enters (validation, names, workspace, the rule count), never a silent default.
#include <gtest/gtest.h>

#include <string>

#include "memplan/attention/modes.hpp"
#include "memplan/attention/workspace.hpp"
#include "memplan/error.hpp"

namespace memplan::attention {
namespace {

constexpr auto kUnknown = static_cast<SparsityMode>(9);

TEST(AttentionModes, TableNamesEachModeAndItsRule) {
  EXPECT_EQ(to_string(SparsityMode::Dense), "dense");
  EXPECT_EQ(to_string(SparsityMode::Tau), "tau");
  EXPECT_EQ(to_string(SparsityMode::TopK), "topk");
  EXPECT_EQ(to_string(SparsityMode::Coarse), "coarse");
  EXPECT_EQ(to_string(kUnknown), "unknown");
  EXPECT_FALSE(traits(SparsityMode::Dense).selects_blocks());
  EXPECT_EQ(traits(SparsityMode::Tau).rule, SelectionRule::Threshold);
  EXPECT_EQ(traits(SparsityMode::TopK).rule, SelectionRule::TopK);
  EXPECT_EQ(traits(SparsityMode::Coarse).rule, SelectionRule::TopK);
  EXPECT_TRUE(traits(SparsityMode::Coarse).coarse_branch);
}

TEST(AttentionModes, UnknownModeIsAnErrorNamingItsValue) {
  try {
    (void)traits(kUnknown);
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown sparsity mode 9"), std::string::npos) << e.what();
  }
  AttentionPolicy p;
  p.mode = kUnknown;
  EXPECT_THROW((void)rule_blocks(p, 100), InvalidArgument);
  EXPECT_THROW((void)workspace_layout({1, 6400, 2, 64}, p), InvalidArgument);
}

// Each mode's workspace follows its row: a list when it selects, pooled V and the coarse output
// with the coarse branch, and the rule's count (the cap for the threshold rule).
TEST(AttentionModes, WorkspaceAndCountsFollowTheTable) {
  const AttentionShape shape{1, 6400, 2, 64};  // 100 blocks
  for (const ModeTraits& mode : kModeTraits) {
    SCOPED_TRACE(mode.name);
    AttentionPolicy p;
    p.mode = mode.mode;
    p.keep_percent = 10.0f;
    p.max_keep_percent = 30.0f;
    const WorkspaceLayout l = workspace_layout(shape, p);
    EXPECT_EQ(l.bytes > 0, mode.selects_blocks());
    EXPECT_EQ(l.has_pooled_v, mode.coarse_branch);
    EXPECT_EQ(l.has_coarse, mode.coarse_branch);
    const int want = mode.rule == SelectionRule::None        ? 0
                     : mode.rule == SelectionRule::Threshold ? 30
                                                             : 10;
    EXPECT_EQ(rule_blocks(p, shape.blocks()), want);
    EXPECT_EQ(selected_blocks(shape, p), want);
  }
}

}  // namespace
}  // namespace memplan::attention
