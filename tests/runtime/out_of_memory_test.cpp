// Out of memory under the compiler, made deterministic by a byte limit (limited_host.hpp) that
// another user of the "device" fills. Wherever the memory runs out — recording, the pool inside a
// pause, a learned rogue site while replaying, begin_step mapping a step's plans — the
// OutOfMemory names the request, what is mapped and what is live (the step's buffers, rogues, the
// pool); the step can go on or be aborted, a later step runs, and nothing leaks, to the byte.
#include <fmt/format.h>

#include <string>
#include <thread>

#include "abort_cases.hpp"
#include "limited_host.hpp"

namespace memplan::testing {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Another user of the device holding physical memory under the same limit, until destroyed.
class OtherUser {
 public:
  OtherUser(arena::PhysicalBackend& backend, std::size_t bytes)
      : backend_(backend), chunk_(backend.create_chunk(bytes)) {}
  OtherUser(const OtherUser&) = delete;
  OtherUser& operator=(const OtherUser&) = delete;
  ~OtherUser() { backend_.release_chunk(chunk_); }

 private:
  arena::PhysicalBackend& backend_;
  arena::ChunkHandle chunk_;
};

// Leaves `left` bytes of the limit to the compiler.
std::unique_ptr<OtherUser> leave_only(LimitedHarness& h, std::size_t left) {
  return std::make_unique<OtherUser>(h.backend(),
                                     h.backend().limit_bytes() - h.backend().used_bytes() - left);
}

// The message of the OutOfMemory that `f` throws; a failure if it throws nothing.
template <class F>
std::string out_of_memory_message(F&& f) {
  try {
    f();
  } catch (const OutOfMemory& e) {
    return e.what();
  }
  ADD_FAILURE() << "no OutOfMemory";
  return {};
}

void expect_names(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' is not in: " << message;
  }
}

// `level` plus `refused` create_chunk calls that the limit refused: each is counted as a call, and
// left no chunk behind.
MemoryLevel after_refusals(MemoryLevel level, std::uint64_t refused) {
  level.chunks_held += refused;
  return level;
}

// A rogue (64 KiB in the planned arena) and a buffer in the pool (4 KiB), live throughout.
void make_live_state(LimitedHarness& h) {
  h.run_step({alloc(50, 65536)}, "warmup");
  h.allocate(60, 4096, {}, /*paused=*/true);
}

TEST(OutOfMemory, WhileRecordingItNamesTheRequestMappedAndLiveBytesAndTheStepGoesOn) {
  LimitedHarness h;
  make_live_state(h);
  const MemoryLevel before = memory_level(h);  // a chunk for the rogue, one for the pool
  {
    auto other = leave_only(h, 2 * 2 * kMiB);
    auto step = h.compiler().step("denoise");
    h.allocate(1, kMiB);
    const std::string message =
        out_of_memory_message([&] { (void)h.compiler().allocate(8 * kMiB); });
    expect_names(message, {"allocate 8.00 MiB in step 'denoise' at event 1 (recording)",
                           "mapped: 2.00 MiB in the planned arena, 2.00 MiB in the pool",
                           "live: 1.00 MiB in 1 buffer(s) of the step, 64.0 KiB in 1 rogue(s), "
                           "4.00 KiB allocated in the pool",
                           "limit of 64.0 MiB"});
    h.allocate(2, 2 * kMiB);  // smaller: it fits, and the step goes on
    h.release(1);
    h.release(2);
  }
  for (int s = 0; s < 3; ++s) h.run_step({alloc(1, kMiB), alloc(2, 2 * kMiB), free_(1), free_(2)});
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.steps_replayed, 3u);
  h.expect_all_intact();
  // Nothing leaked: with the rogue and the pool buffer freed and the plans released, nothing is
  // mapped and the limit is back to zero.
  h.release(50);
  h.release(60);
  h.compiler().release();
  EXPECT_EQ(memory_level(h), after_refusals(MemoryLevel{}, 1));
  EXPECT_GT(before.limited, 0u);
}

TEST(OutOfMemory, WhileRecordingAnUncaughtOneAbortsTheStepAndMemoryReturnsToTheByte) {
  LimitedHarness h;
  make_live_state(h);
  h.run_step(kAbortProgram);
  const MemoryLevel before = memory_level(h);
  {
    auto other = leave_only(h, 0);
    try {
      auto step = h.compiler().step("denoise");
      Owners<LimitedHarness> owners(h);
      owners.allocate(1, 4096, false);
      owners.allocate(2, 4 * kMiB, false);  // a break, then recording needs 2 more chunks
      ADD_FAILURE() << "no OutOfMemory";
    } catch (const OutOfMemory& e) {
      expect_names(e.what(), {"allocate 4.00 MiB in step 'denoise' at event 1 (recording)",
                              "live: 4.00 KiB in 1 buffer(s) of the step, 64.0 KiB in 1 rogue(s)"});
    }
  }
  EXPECT_FALSE(h.compiler().in_step());
  EXPECT_EQ(memory_level(h), after_refusals(before, 1));
  for (int s = 0; s < 2; ++s) h.run_step(kAbortProgram);
  EXPECT_EQ(h.compiler().stats().breaks, 1u);  // only the aborted step's
  EXPECT_EQ(memory_level(h), after_refusals(before, 1));
}

TEST(OutOfMemory, InAPauseItNamesThePoolAndTheStepGoesOn) {
  LimitedHarness h;
  make_live_state(h);
  h.run_step(kAbortProgram);
  const MemoryLevel before = memory_level(h);
  {
    auto other = leave_only(h, 0);
    auto step = h.compiler().step("denoise");
    h.allocate(1, 4096);
    {
      auto pause = h.compiler().pause();
      const std::string message =
          out_of_memory_message([&] { (void)h.compiler().allocate(3 * kMiB); });
      expect_names(message, {"allocate 3.00 MiB in the persistent pool (inside a pause, in step "
                             "'denoise' at event 1)",
                             // the rogue's chunk: the plans moved away from it onto the chunk
                             // the pool lends them (window_home.cpp)
                             "mapped: 2.00 MiB in the planned arena, 2.00 MiB in the pool",
                             "live: 4.00 KiB in 1 buffer(s) of the step, 64.0 KiB in 1 rogue(s), "
                             "4.00 KiB allocated in the pool"});
      h.allocate(70, 8192);  // room in the pool's chunk: it fits
    }
    for (const Op& op : kAbortProgram) {
      if (op.kind == Op::Alloc && op.id != 1) h.allocate(op.id, op.size);
      if (op.kind == Op::Free) h.release(op.id);
    }
  }
  h.release(70);
  EXPECT_EQ(h.compiler().stats().breaks, 0u);
  EXPECT_EQ(memory_level(h), after_refusals(before, 1));
}

TEST(OutOfMemory, AtALearnedRogueSiteWhileReplayingItIsNamedAndTheStepCanAbort) {
  // The pool lends the plans nothing, so that trim() gives all its room back and the replay must
  // grow it (with a loan the room would stay mapped in the lent chunk: window_home_test.cpp).
  CompilerOptions options = LimitedHarness::small_options();
  options.share_pool_chunk = false;
  LimitedHarness h(options);
  // Buffer 9 outlives the step: its site is learned, and served by the pool from now on.
  h.run_step({alloc(1, 4096), alloc(9, kMiB), free_(1)});
  h.release(9);
  const MemoryLevel before = memory_level(h);  // trim() gave the pool's room back
  EXPECT_EQ(before.pool_mapped, 0u);
  {
    auto other = leave_only(h, 0);
    try {
      auto step = h.compiler().step("denoise");
      Owners<LimitedHarness> owners(h);
      owners.allocate(1, 4096, false);
      owners.allocate(9, kMiB, false);  // replayed at a learned site: the pool must grow
      ADD_FAILURE() << "no OutOfMemory";
    } catch (const OutOfMemory& e) {
      expect_names(e.what(), {"allocate 1.00 MiB in step 'denoise' at event 1 (replaying)",
                              "mapped: 2.00 MiB in the planned arena, 0 B in the pool",
                              "live: 4.00 KiB in 1 buffer(s) of the step, 0 B in 0 rogue(s), 0 B "
                              "allocated in the pool",
                              "persistent pool: out of memory: requested 1.00 MiB"});
    }
  }
  EXPECT_EQ(memory_level(h), after_refusals(before, 1));
  // The unwinding freed buffer 1 where the record has buffer 9's allocation: a break of the
  // aborted step. The next steps have none.
  const std::uint64_t breaks = h.compiler().stats().breaks;
  for (int s = 0; s < 2; ++s) {
    h.run_step({alloc(1, 4096), alloc(9, kMiB), free_(1)});
    h.release(9);
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, breaks);
  EXPECT_EQ(st.steps_replayed, 2u);
  EXPECT_EQ(st.steps_aborted, 1u);
}

// Outside steps and from a thread other than the step's, the pool serves: the message says which.
TEST(OutOfMemory, OutsideStepsAndFromAnotherThreadThePoolIsNamedWithTheReason) {
  LimitedHarness h;
  auto other = leave_only(h, 0);
  expect_names(out_of_memory_message([&] { (void)h.compiler().allocate(kMiB); }),
               {"allocate 1.00 MiB in the persistent pool (outside steps)",
                "mapped: 0 B in the planned arena, 0 B in the pool"});
  auto step = h.compiler().step("denoise");
  std::string message;
  std::thread([&] {
    message = out_of_memory_message([&] { (void)h.compiler().allocate(kMiB); });
  }).join();
  expect_names(message, {"allocate 1.00 MiB in the persistent pool (from another thread, in step "
                         "'denoise' at event 0)"});
}

// Replay maps nothing: begin_step maps the largest plan of the step's name, so that is where a
// larger branch runs out after release().
TEST(OutOfMemory, AtBeginStepItNamesThePlanToMapAndNoStepStarts) {
  LimitedHarness h;
  h.allocate(60, 4096, {}, /*paused=*/true);
  h.run_step(kAbortProgram);
  h.run_step({alloc(1, 4096), alloc(2, 6 * kMiB), free_(1), free_(2)});  // a larger branch
  h.compiler().release();  // between phases: the plans are unmapped
  const MemoryLevel before = memory_level(h);
  EXPECT_EQ(before.mapped, 0u);
  const std::uint64_t plan = h.compiler().stats().planned_peak_bytes;
  {
    auto other = leave_only(h, 4 * kMiB);
    const std::string message = out_of_memory_message([&] { h.compiler().begin_step("denoise"); });
    expect_names(message, {fmt::format("begin_step 'denoise': mapping the {} of its plans",
                                       human_bytes(static_cast<Bytes>(plan))),
                           "mapped: 0 B in the planned arena, 2.00 MiB in the pool",
                           "live: 0 B in 0 buffer(s) of the step, 0 B in 0 rogue(s), 4.00 KiB "
                           "allocated in the pool"});
    EXPECT_FALSE(h.compiler().in_step());
    EXPECT_EQ(h.compiler().stats().mapped_bytes, 0u);
  }
  EXPECT_EQ(memory_level(h), after_refusals(before, 1));
  {
    auto other = leave_only(h, 4 * kMiB);
    h.run_step({alloc(1, kMiB), free_(1)}, "small");  // a step with a smaller plan runs
  }
  h.run_step(kAbortProgram);
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 1u);  // the larger branch's, when it was recorded
  EXPECT_EQ(st.steps_replayed, 1u);
  h.release(60);
  h.compiler().release();
  EXPECT_EQ(memory_level(h), after_refusals(MemoryLevel{}, 1));
}

}  // namespace
}  // namespace memplan::testing
