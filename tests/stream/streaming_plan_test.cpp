// choose_streaming: as many resident blocks as fit at depth 1, the depth deepened only with room
// to spare, the prediction within the budget, and an error naming the parts when nothing fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "memplan/error.hpp"
#include "memplan/stream/streaming_plan.hpp"

namespace memplan::stream {
namespace {

StreamingInputs ten_blocks(std::size_t budget) {
  StreamingInputs in;
  in.budget_bytes = budget;
  in.fixed_bytes = 50;
  in.activation_peak_bytes = 300;
  in.block_bytes.assign(10, 100);
  return in;
}

TEST(StreamingPlan, NoBudgetOrRoomForAllKeepsEveryBlockResident) {
  for (std::size_t budget : {std::size_t{0}, std::size_t{1350}}) {
    const StreamingPlan p = choose_streaming(ten_blocks(budget));
    EXPECT_EQ(p.resident_blocks, 10u);
    EXPECT_EQ(p.depth, 0u);
    EXPECT_EQ(p.streamed_bytes, 0u);
    EXPECT_EQ(p.slot_bytes, 0u);
    EXPECT_EQ(p.predicted_peak_bytes, 1350u);
  }
}

TEST(StreamingPlan, KeepsAsManyBlocksResidentAsFitBesideTwoSlots) {
  // fixed 50 + resident 100 r + activations 300 + 2 slots of 100 (at r = 8 all ten fit).
  for (std::size_t r = 0; r < 8; ++r) {
    const std::size_t exact = 50 + 100 * r + 300 + 200;
    for (std::size_t budget : {exact, exact + 99}) {
      const StreamingPlan p = choose_streaming(ten_blocks(budget));
      EXPECT_EQ(p.resident_blocks, r) << "budget " << budget;
      EXPECT_EQ(p.depth, 1u);
      EXPECT_EQ(p.slot_bytes, 200u);
      EXPECT_EQ(p.streamed_bytes, 100 * (10 - r));
      EXPECT_EQ(p.predicted_peak_bytes, exact);
    }
  }
}

TEST(StreamingPlan, DeepensThePrefetchOnlyWithRoomThatNoResidentBlockCanUse) {
  // Pool chunks of 400 make a fifth resident block cost 400 more; a third slot costs 100.
  StreamingInputs in = ten_blocks(0);
  in.fixed_bytes = 0;
  in.pool_chunk_bytes = 400;
  in.budget_bytes = 400 + 300 + 300;
  StreamingPlan p = choose_streaming(in);
  EXPECT_EQ(p.resident_blocks, 4u);
  EXPECT_EQ(p.depth, 2u);
  EXPECT_EQ(p.slot_bytes, 300u);
  in.max_depth = 1;
  p = choose_streaming(in);
  EXPECT_EQ(p.resident_blocks, 4u);
  EXPECT_EQ(p.depth, 1u);
}

TEST(StreamingPlan, SlotsAreBoundByTheLargestStreamedBlocksAndArenaChunks) {
  StreamingInputs in;
  in.block_bytes = {500, 10, 30, 20};
  in.activation_peak_bytes = 5;
  in.arena_chunk_bytes = 64;
  in.budget_bytes = 500 + 64;  // block 0 resident; slots 30 + 20, activations 5: one chunk
  const StreamingPlan p = choose_streaming(in);
  EXPECT_EQ(p.resident_blocks, 1u);
  EXPECT_EQ(p.slot_bytes, 50u);
  EXPECT_EQ(p.predicted_peak_bytes, 564u);
}

TEST(StreamingPlan, ABudgetTooSmallForTwoSlotsNamesEveryPart) {
  try {
    (void)choose_streaming(ten_blocks(549));
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    for (const char* part : {"(549 B)", "fixed 50 B", "activation peak 300 B",
                             "2 staging slots of 200 B", "= 550 B"}) {
      EXPECT_NE(what.find(part), std::string::npos) << part << " in: " << what;
    }
  }
  StreamingInputs in = ten_blocks(1000);
  in.block_bytes[3] = 0;
  EXPECT_THROW((void)choose_streaming(in), InvalidArgument);
  in.block_bytes.clear();
  EXPECT_THROW((void)choose_streaming(in), InvalidArgument);
}

// The prediction written out: fixed + resident blocks in pool chunks + activations and the
// min(depth + 1, streamed) largest streamed blocks in arena chunks.
std::size_t reference_peak(const StreamingInputs& in, std::size_t resident, std::size_t depth) {
  const auto up = [](std::size_t v, std::size_t a) { return (v + a - 1) / a * a; };
  std::size_t pool = 0;
  std::vector<std::size_t> streamed;
  for (std::size_t i = 0; i < in.block_bytes.size(); ++i) {
    if (i < resident)
      pool += in.block_bytes[i];
    else
      streamed.push_back(in.block_bytes[i]);
  }
  std::sort(streamed.rbegin(), streamed.rend());
  std::size_t slots = 0;
  for (std::size_t i = 0; i < std::min(depth + 1, streamed.size()); ++i) slots += streamed[i];
  return in.fixed_bytes + up(pool, in.pool_chunk_bytes) +
         up(in.activation_peak_bytes + slots, in.arena_chunk_bytes);
}

TEST(StreamingPlan, RandomInputsFitTheBudgetAndNoMoreBlocksCouldBeResident) {
  std::mt19937_64 rng(7);
  int fitted = 0;
  for (int round = 0; round < 2000; ++round) {
    StreamingInputs in;
    const std::size_t n = 1 + rng() % 12;
    for (std::size_t i = 0; i < n; ++i) in.block_bytes.push_back(1 + rng() % 1000);
    in.fixed_bytes = rng() % 500;
    in.activation_peak_bytes = rng() % 2000;
    in.arena_chunk_bytes = 1 + rng() % 256;
    in.pool_chunk_bytes = 1 + rng() % 256;
    in.max_depth = 1 + rng() % 3;
    in.budget_bytes = 1 + rng() % 12000;
    StreamingPlan p;
    try {
      p = choose_streaming(in);
    } catch (const OutOfMemory&) {
      continue;
    }
    ++fitted;
    EXPECT_LE(p.predicted_peak_bytes, in.budget_bytes);
    EXPECT_LE(p.depth, in.max_depth);
    EXPECT_EQ(p.predicted_peak_bytes, reference_peak(in, p.resident_blocks, p.depth));
    if (p.resident_blocks < n) {
      EXPECT_GE(p.depth, 1u);
      // One more resident block would not fit (at depth 1, or with nothing left to stream).
      const std::size_t more = p.resident_blocks + 1;
      EXPECT_GT(reference_peak(in, more, more == n ? 0 : 1), in.budget_bytes);
    }
  }
  EXPECT_GT(fitted, 500);
}

}  // namespace
}  // namespace memplan::stream
