// Host-only: policy validation and the step-window / min_tokens rule (runs on CI without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "memplan/attention/policy.hpp"
#include "memplan/attention/shape.hpp"
#include "memplan/error.hpp"

namespace memplan::attention {
namespace {

TEST(AttentionPolicy, DefaultsAreValid) { EXPECT_NO_THROW(validate(AttentionPolicy{})); }

TEST(AttentionPolicy, RejectsBadFields) {
  auto rejects = [](auto mutate) {
    AttentionPolicy p;
    mutate(p);
    EXPECT_THROW(validate(p), InvalidArgument);
  };
  rejects([](AttentionPolicy& p) { p.keep_percent = 0.0f; });
  rejects([](AttentionPolicy& p) { p.keep_percent = 101.0f; });
  rejects([](AttentionPolicy& p) { p.keep_percent = NAN; });
  rejects([](AttentionPolicy& p) { p.max_keep_percent = -1.0f; });
  rejects([](AttentionPolicy& p) { p.tau = INFINITY; });
  rejects([](AttentionPolicy& p) {
    p.window_start = 0.8;
    p.window_end = 0.5;
  });
  rejects([](AttentionPolicy& p) { p.window_end = 1.5; });
  rejects([](AttentionPolicy& p) { p.window_start = -0.1; });
  rejects([](AttentionPolicy& p) { p.min_tokens = -1; });
  rejects([](AttentionPolicy& p) { p.sink_keys = {3, 1}; });
  rejects([](AttentionPolicy& p) { p.sink_queries = {-1, 2}; });
  rejects([](AttentionPolicy& p) { p.mode = static_cast<SparsityMode>(9); });
}

TEST(AttentionPolicy, ErrorNamesTheField) {
  AttentionPolicy p;
  p.keep_percent = 250.0f;
  try {
    validate(p);
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("keep_percent = 250"), std::string::npos) << e.what();
  }
}

TEST(AttentionPolicy, QueryBlocksPerListIsOneOrTwo) {
  AttentionPolicy p;
  p.query_blocks_per_list = 2;
  EXPECT_NO_THROW(validate(p));
  for (const int bad : {0, 3, -1}) {
    p.query_blocks_per_list = bad;
    try {
      validate(p);
      ADD_FAILURE() << bad << ": no throw";
    } catch (const InvalidArgument& e) {
      const std::string want = "query_blocks_per_list = " + std::to_string(bad);
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST(AttentionPolicy, WindowDecidesSparseOrDense) {
  AttentionPolicy p;  // tau within [0.2, 1.0]
  EXPECT_EQ(effective_mode(p, 0.0, 100000), SparsityMode::Dense);
  EXPECT_EQ(effective_mode(p, 0.19, 100000), SparsityMode::Dense);
  EXPECT_EQ(effective_mode(p, 0.2, 100000), SparsityMode::Tau);
  EXPECT_EQ(effective_mode(p, 1.0, 100000), SparsityMode::Tau);
  p.window_end = 0.6;
  EXPECT_EQ(effective_mode(p, 0.61, 100000), SparsityMode::Dense);
  p.mode = SparsityMode::TopK;
  EXPECT_EQ(effective_mode(p, 0.4, 100000), SparsityMode::TopK);
  EXPECT_THROW((void)effective_mode(p, 1.2, 100), InvalidArgument);
  EXPECT_THROW((void)effective_mode(p, NAN, 100), InvalidArgument);
}

TEST(AttentionPolicy, MinTokensFallsBackToDense) {
  AttentionPolicy p;
  p.min_tokens = 4096;
  EXPECT_EQ(effective_mode(p, 0.5, 4095), SparsityMode::Dense);
  EXPECT_EQ(effective_mode(p, 0.5, 4096), SparsityMode::Tau);
}

TEST(AttentionShape, ValidatesExtents) {
  EXPECT_NO_THROW(validate(AttentionShape{1, 75600, 24, 128}));
  EXPECT_NO_THROW(validate(AttentionShape{2, 1, 1, 64}));
  EXPECT_THROW(validate(AttentionShape{1, 1024, 24, 96}), InvalidArgument);
  EXPECT_THROW(validate(AttentionShape{0, 1024, 24, 64}), InvalidArgument);
  EXPECT_THROW(validate(AttentionShape{1, 0, 24, 64}), InvalidArgument);
  EXPECT_THROW(validate(AttentionShape{1, 1024, 0, 64}), InvalidArgument);
  EXPECT_THROW(validate(AttentionShape{1, int64_t{kMaxBlocks} * 64 + 1, 1, 64}), InvalidArgument);
  EXPECT_EQ((AttentionShape{1, 75600, 24, 128}.blocks()), 1182);
  EXPECT_EQ((AttentionShape{2, 128, 3, 64}.rows()), 12);
}

}  // namespace
}  // namespace memplan::attention
