// The select kernel's build and its CTA's row count (kernels/select_rows.hpp) on the shapes they
// were fitted to: 24 heads on the H200's 132 SMs, where the A/B runs of 2026-12-02 timed 16 rows
// against as many as fit (docs/attention.md, "16 rows a CTA or as many as fit") and the
// two-CTA builds against the one-CTA build. Each case is the faster one.
#include <gtest/gtest.h>

#include "select_rows.hpp"

namespace memplan::attention::detail {
namespace {

constexpr int kHeads = 24;
constexpr int kH200 = 132;

// A CTA's shared memory beside its score rows (select.cu's fixed_smem_bytes without the coarse
// branch: the larger of the Q fragments and the histograms, 16 KB at head_dim 64 and 128) and
// one score row's bytes (row_stride: n rounded to 32, plus 8, floats).
constexpr std::size_t kFixed = 16 * 1024;
std::size_t row_bytes(int n) { return 4 * static_cast<std::size_t>((n + 23) / 32 * 32 + 8); }

TEST(SelectBuild, TwoCtasAnSmWhereverTheyFit) {
  // 32,768 tokens: rows in registers (0.154 against 0.172 ms for pairs).
  EXPECT_EQ(select_build(512, false, kFixed, row_bytes(512)), SelectBuild::Short);
  EXPECT_EQ(select_build(1, false, kFixed, row_bytes(1)), SelectBuild::Short);
  // 75,600 tokens: rows from shared memory, two CTAs (0.50-0.53 against 0.56-0.60 ms for pairs).
  EXPECT_EQ(select_build(513, false, kFixed, row_bytes(513)), SelectBuild::Mid);
  EXPECT_EQ(select_build(1182, false, kFixed, row_bytes(1182)), SelectBuild::Mid);
  // Two CTAs of 16 rows need 2 x (16 KB + 16 rows + 1 KB) <= 228 KB: up to 1,544 blocks.
  EXPECT_EQ(select_build(1544, false, kFixed, row_bytes(1544)), SelectBuild::Mid);
  EXPECT_EQ(select_build(1545, false, kFixed, row_bytes(1545)), SelectBuild::Long);
  EXPECT_EQ(select_build(2641, false, kFixed, row_bytes(2641)), SelectBuild::Long);  // 169,000
}

TEST(SelectBuild, TheCoarseBranchTakesTheOneCtaBuild) {
  EXPECT_EQ(select_build(64, true, kFixed, row_bytes(64)), SelectBuild::Long);
  EXPECT_EQ(select_build(1182, true, kFixed, row_bytes(1182)), SelectBuild::Long);
}

TEST(SelectRows, PicksTheRowCountThatWasFasterOnTheH200) {
  // 32,768 tokens: 512 blocks, 32 rows fit. A list per block: 32 rows (0.220 against 0.233 ms);
  // a list per pair (256 score rows): 16 (0.170 against 0.189).
  EXPECT_EQ(balanced_rows(32, 512, kHeads, kH200, false), 32);
  EXPECT_EQ(balanced_rows(32, 256, kHeads, kH200, false), 16);
  // 75,600 tokens: 1,182 blocks, 32 fit. A list per block: 32 (0.76 against 0.85 ms).
  EXPECT_EQ(balanced_rows(32, 1182, kHeads, kH200, false), 32);
  // 169,000 tokens: 2,641 blocks, 20 fit. Per block (3.9 against 4.6 ms) and per pair (1,321
  // score rows; 2.5 against 3.0): 16.
  EXPECT_EQ(balanced_rows(20, 2641, kHeads, kH200, false), 16);
  EXPECT_EQ(balanced_rows(20, 1321, kHeads, kH200, false), 16);
}

TEST(SelectRows, UnderOneWaveSixteenRowsShortenEachCta) {
  // 8,192 tokens as pairs: 64 score rows a head; 96 CTAs of 16 rows still fit one wave.
  EXPECT_EQ(balanced_rows(32, 64, kHeads, kH200, false), 16);
}

TEST(SelectRows, FewRowsOrAPairsTwoRowsTakeAllThatFit) {
  EXPECT_EQ(balanced_rows(12, 5000, kHeads, kH200, false), 12);
  EXPECT_EQ(balanced_rows(1, 32768, 1, kH200, false), 1);
  EXPECT_EQ(balanced_rows(32, 2641, kHeads, kH200, true), 32);  // the coarse branch's pairs
  EXPECT_EQ(balanced_rows(18, 2641, kHeads, kH200, true), 18);
}

}  // namespace
}  // namespace memplan::attention::detail
