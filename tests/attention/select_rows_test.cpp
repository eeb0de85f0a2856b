// The selection CTA's row count (kernels/select_rows.hpp) on the shapes it was fitted to: 24
// heads on the H200's 132 SMs, where the A/B runs of 2026-12-02 timed 16 rows against as many
// as fit (docs/attention.md, "16 rows a CTA or as many as fit"). Each case is the faster one.
#include <gtest/gtest.h>

#include "select_rows.hpp"

namespace memplan::attention::detail {
namespace {

constexpr int kHeads = 24;
constexpr int kH200 = 132;

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
