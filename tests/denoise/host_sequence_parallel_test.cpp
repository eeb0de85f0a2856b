// The sequence-parallel runtime on the CPU platform (host ranks, one thread each): with 1, 2 and 3
// ranks every mode's latents equal the one-device run's bit for bit (every CPU op is row- or
// head-independent and the exchange only moves bytes), replayed steps make no memory call on any
// rank, and a shape that does not split is refused naming its numbers.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "memplan/error.hpp"
#include "sequence_parallel_case.hpp"

namespace denoise::testing {
namespace {

void expect_ranks_match_one_device(const Config& c, std::initializer_list<int> rank_counts) {
  auto platform = make_cpu_platform();
  const auto one = run_modes(c, *platform);
  for (int ranks : rank_counts) {
    SCOPED_TRACE(::testing::Message() << ranks << " ranks");
    const auto sharded = run_ranks(c, ranks, false);
    ASSERT_EQ(sharded.size(), static_cast<std::size_t>(ranks));
    expect_ranks_hold(sharded, one);
    for (const RankResults& rank : sharded)
      for (std::size_t m = 0; m < one.size(); ++m)
        EXPECT_TRUE(bitwise_equal(rank.modes[m].latents, one[m].latents))
            << "rank " << rank.rank << ", " << rank.modes[m].name << ": max |difference| "
            << max_abs_difference(rank.modes[m].latents, one[m].latents);
  }
}

TEST(HostSequenceParallel, TwoRanksGiveTheOneDeviceLatentsBitForBit) {
  Config c = small_config(false);  // 256 then 384 tokens, 2 heads, dense and sparse steps
  c.modes = {Mode::Graphs, Mode::Eager};
  expect_ranks_match_one_device(c, {2});
}

TEST(HostSequenceParallel, OneAndThreeRanksGiveTheOneDeviceLatentsBitForBit) {
  Config c = small_config(false);
  c.heads = 3;
  c.tokens = 192;
  c.second_tokens = 0;
  c.steps = 6;  // one dense step, then sparse ones
  c.modes = {Mode::Graphs, Mode::Eager, Mode::Baseline};
  expect_ranks_match_one_device(c, {1, 3});
}

void expect_refused(Config c, int ranks, const std::string& says) {
  c.ranks = ranks;
  try {
    (void)run_sequence_parallel(c, false);
    ADD_FAILURE() << "no error for " << says;
  } catch (const memplan::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(HostSequenceParallel, AShapeThatDoesNotSplitIsRefusedNamingTheNumbers) {
  Config c = small_config(false);
  c.heads = 3;
  expect_refused(c, 3,
                 "--ranks 3: the first pass's 256 tokens do not split into 3 equal shards "
                 "(256 % 3 = 1)");
  c.heads = 4;
  expect_refused(c, 3, "--ranks 3: 4 heads do not split into 3 equal shards (4 % 3 = 1)");
  c.heads = 5;
  c.tokens = 320;
  expect_refused(c, 5, "the second pass's 384 tokens do not split into 5 equal shards");
  expect_refused(c, 0, "--ranks 0: need >= 1");
}

}  // namespace
}  // namespace denoise::testing
