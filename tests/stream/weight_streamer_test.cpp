// Weight streaming on the host backend with the host copy engine: streamed blocks arrive before
// they run and are not overwritten while they run, slots never share bytes with a live
// activation, the copies and waits come in the planned order under randomized delays on both
// streams, replayed steps make no backend memory call (graphs included), an abort leaves no slot
// held, and the plan chosen for a budget holds the step under the compiler's budget (or, with less
// room, fails with the compiler's BudgetExceeded and holds no slot).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "memplan/arena/host_backend.hpp"
#include "memplan/arena/host_stream.hpp"
#include "memplan/capture/step_runner.hpp"
#include "memplan/stream/weight_streamer.hpp"

namespace memplan::stream {
namespace {

using capture::StepContext;
using capture::StepRunner;

constexpr std::size_t kNone = ~std::size_t{0};

CompilerOptions small() {
  CompilerOptions o;
  o.reserve_bytes = std::size_t{1} << 30;
  o.chunk_bytes = std::size_t{2} << 20;
  o.pool_reserve_bytes = std::size_t{256} << 20;
  o.pool_chunk_bytes = std::size_t{2} << 20;
  o.plan_budget = std::chrono::milliseconds(20);
  return o;
}

std::byte pattern(std::size_t block, std::size_t k) {
  return static_cast<std::byte>((block * 131 + k * 7 + 1) & 0xff);
}

bool holds(const void* p, std::size_t block, std::size_t bytes) {
  const auto* b = static_cast<const std::byte*>(p);
  for (std::size_t k = 0; k < bytes; k += 61) {
    if (b[k] != pattern(block, k)) return false;
  }
  return b[bytes - 1] == pattern(block, bytes - 1);
}

// Forwards to the host engine and logs each call as the step issues it.
class LoggedEngine final : public CopyEngine {
 public:
  explicit LoggedEngine(arena::HostStream& copy_stream) : engine_(copy_stream) {}
  void prepare(std::size_t copies) override { engine_.prepare(copies); }
  void copy_after(StreamRef compute, void* dst, const void* src, std::size_t bytes,
                  std::size_t id) override {
    calls.push_back("copy " + std::to_string(id));
    engine_.copy_after(compute, dst, src, bytes, id);
  }
  void wait_for(StreamRef compute, std::size_t id) override {
    calls.push_back("wait " + std::to_string(id));
    engine_.wait_for(compute, id);
  }
  void synchronize() override { engine_.synchronize(); }
  std::string_view name() const noexcept override { return "logged host"; }
  std::vector<std::string> calls;

 private:
  HostCopyEngine engine_;
};

// The calls one step makes: before block i, the copies of streamed blocks up to i + depth not
// yet issued, then the wait for block i when it is streamed.
std::vector<std::string> expected_calls(const StreamingPlan& plan) {
  std::vector<std::string> out;
  std::size_t next = 0;
  for (std::size_t i = 0; i < plan.blocks; ++i) {
    for (; next <= std::min(i + plan.depth, plan.blocks - 1); ++next) {
      if (plan.streamed(next)) out.push_back("copy " + std::to_string(next));
    }
    if (plan.streamed(i)) out.push_back("wait " + std::to_string(i));
  }
  return out;
}

StreamingPlan plan_of(const std::vector<std::size_t>& sizes, std::size_t resident,
                      std::size_t depth) {
  StreamingPlan p = all_resident(sizes);
  p.resident_blocks = resident;
  p.depth = resident == sizes.size() ? 0 : depth;
  return p;
}

struct Case {
  std::vector<std::size_t> weights;      // bytes per block
  std::vector<std::size_t> activations;  // bytes of each block's activation
  std::size_t resident = 0;
  std::size_t depth = 1;
  std::vector<int> compute_delay_us;  // per block
  std::vector<int> copy_delay_us;     // per block, queued on the copy stream before it is entered
};

struct Harness {
  explicit Harness(const Case& c, bool graphs, bool compute_on_stream,
                   CompilerOptions options = small())
      : c_(c),
        compute_on_stream_(compute_on_stream),
        compiler(backend, options),
        engine(copy_stream),
        runner(compiler, capturer, compute_on_stream ? compute.ref() : StreamRef{},
               {.enabled = graphs, .capture_after = 1}) {
    for (std::size_t b = 0; b < c.weights.size(); ++b) {
      host.emplace_back(c.weights[b]);
      for (std::size_t k = 0; k < c.weights[b]; ++k) host[b][k] = pattern(b, k);
      blocks.push_back({host[b].data(), c.weights[b]});
    }
    streamer = std::make_unique<WeightStreamer>(compiler, engine, blocks,
                                                plan_of(c.weights, c.resident, c.depth));
    streamer->load_resident(runner_stream());
    engine.calls.clear();
  }
  ~Harness() {
    compute.synchronize();
    copy_stream.synchronize();
  }

  StreamRef runner_stream() { return compute_on_stream_ ? compute.ref() : StreamRef{}; }

  // One step: block i's compute checks that its weights are there, writes its activation, waits,
  // and checks both again (a copy landing on either would show). `throw_at`: throw before block
  // k is entered; `throw_inside`: after it is entered.
  void step(std::size_t throw_at = kNone, std::size_t throw_inside = kNone) {
    runner.run("stream", "step", [&](StepContext& ctx) {
      StreamedStep streamed(*streamer, ctx);
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        if (i == throw_at) throw std::runtime_error("abort before a block");
        const int copy_delay = c_.copy_delay_us.empty() ? 0 : c_.copy_delay_us[i];
        ctx.launch([this, copy_delay](StreamRef) {
          copy_stream.enqueue(
              [copy_delay] { std::this_thread::sleep_for(std::chrono::microseconds(copy_delay)); });
        });
        void* w = streamed.enter(i);
        if (i == throw_inside) throw std::runtime_error("abort inside a block");
        const std::size_t act_bytes = c_.activations[i];
        void* act = ctx.allocate(act_bytes, "act");
        const auto* wb = static_cast<const std::byte*>(w);
        const auto* ab = static_cast<const std::byte*>(act);
        if (wb < ab + act_bytes && ab < wb + blocks[i].bytes) ++host_overlaps;
        const int delay = c_.compute_delay_us.empty() ? 0 : c_.compute_delay_us[i];
        ctx.launch([this, w, act, act_bytes, i, delay](StreamRef s) {
          on(s, [this, w, act, act_bytes, i, delay] {
            const std::size_t bytes = blocks[i].bytes;
            if (!holds(w, i, bytes)) ++weights_missing;
            std::memset(act, static_cast<int>(i + 1), act_bytes);
            std::this_thread::sleep_for(std::chrono::microseconds(delay));
            if (!holds(w, i, bytes)) ++weights_overwritten;
            const auto* a = static_cast<const unsigned char*>(act);
            if (a[0] != i + 1 || a[act_bytes / 2] != i + 1 || a[act_bytes - 1] != i + 1)
              ++activations_overwritten;
            ++blocks_run;
          });
        });
        ctx.deallocate(act);
        streamed.leave(i);
      }
    });
    compute.synchronize();
  }

  static void on(StreamRef s, std::function<void()> f) {
    if (s.native != nullptr)
      static_cast<arena::HostStream*>(s.native)->enqueue(std::move(f));
    else
      f();
  }

  // Every pair of buffers of the recorded branch alive together is apart in the plan, and at
  // most depth + 1 slots are alive at any instant.
  void expect_slots_apart_in_the_plan() const {
    const BranchTrace t = compiler.branch_trace("stream", 0);
    const auto& bufs = t.problem.buffers;
    std::size_t slots = 0;
    for (std::size_t a = 0; a < bufs.size(); ++a) {
      if (t.tags[a] != kSlotTag) continue;
      ++slots;
      std::size_t slots_alive = 0;  // at the instant slot a is allocated
      for (std::size_t b = 0; b < bufs.size(); ++b) {
        if (t.tags[b] == kSlotTag && bufs[b].lower <= bufs[a].lower &&
            bufs[a].lower < bufs[b].upper)
          ++slots_alive;
        if (a == b || !plan::conflicts(bufs[a], bufs[b])) continue;
        EXPECT_TRUE(t.offsets[a] + bufs[a].size <= t.offsets[b] ||
                    t.offsets[b] + bufs[b].size <= t.offsets[a])
            << "slot " << bufs[a].id << " and " << t.tags[b] << " " << bufs[b].id;
      }
      EXPECT_LE(slots_alive, streamer->plan().depth + 1) << "slot " << bufs[a].id;
    }
    EXPECT_EQ(slots, blocks.size() - c_.resident);
  }

  void expect_clean_run(std::size_t blocks_expected) const {
    EXPECT_EQ(weights_missing.load(), 0u);
    EXPECT_EQ(weights_overwritten.load(), 0u);
    EXPECT_EQ(activations_overwritten.load(), 0u);
    EXPECT_EQ(host_overlaps, 0u);
    EXPECT_EQ(blocks_run.load(), blocks_expected);
  }

  const Case& c_;
  bool compute_on_stream_;
  arena::HostStream compute;
  arena::HostStream copy_stream;
  arena::HostBackend backend{arena::HostBackendOptions{.commit = false}};
  Compiler compiler;
  capture::HostStepCapturer capturer;
  LoggedEngine engine;
  StepRunner runner;
  std::vector<std::vector<std::byte>> host;
  std::vector<WeightBlock> blocks;
  std::unique_ptr<WeightStreamer> streamer;
  std::atomic<std::size_t> weights_missing{0}, weights_overwritten{0}, activations_overwritten{0};
  std::atomic<std::size_t> blocks_run{0};
  std::size_t host_overlaps = 0;
};

Case five_blocks() {
  Case c;
  c.weights = {40000, 70000, 30000, 90000, 50000};
  c.activations = {100000, 60000, 120000, 20000, 80000};
  c.resident = 1;
  c.depth = 1;
  return c;
}

TEST(WeightStreamer, StreamedStepsReplayWithoutMemoryCallsInEveryMode) {
  const Case c = five_blocks();
  for (const bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "graphs" : "eager");
    Harness h(c, graphs, true);
    const StreamingPlan& plan = h.streamer->plan();
    for (int s = 0; s < 6; ++s) {
      const auto before = h.compiler.stats();
      h.engine.calls.clear();
      h.step();
      const auto after = h.compiler.stats();
      EXPECT_EQ(h.engine.calls, expected_calls(plan)) << "step " << s;
      if (s > 0) {
        EXPECT_TRUE(h.runner.last_step()->replayed()) << "step " << s;
        EXPECT_EQ((after.backend_calls - before.backend_calls).memory_calls(), 0u) << "step " << s;
      }
    }
    h.expect_clean_run(6 * c.weights.size());
    h.expect_slots_apart_in_the_plan();
    EXPECT_EQ(h.compiler.stats().breaks, 0u);
    if (graphs) {
      EXPECT_GE(h.runner.stats().graph_launches, 4u);
    }
  }
}

TEST(WeightStreamer, ACallerThreadComputeStreamWaitsForEachCopy) {
  Case c = five_blocks();
  c.resident = 0;
  c.depth = 2;
  c.copy_delay_us = {300, 0, 300, 0, 300};  // copies late: a missing wait would show
  Harness h(c, false, false);
  for (int s = 0; s < 3; ++s) h.step();
  h.expect_clean_run(3 * c.weights.size());
  h.expect_slots_apart_in_the_plan();
}

TEST(WeightStreamer, RandomizedSchedulesKeepPrefetchOrderEventsAndData) {
  std::mt19937_64 rng(20261201);
  for (int round = 0; round < 24; ++round) {
    Case c;
    const std::size_t n = 2 + rng() % 6;
    for (std::size_t i = 0; i < n; ++i) {
      c.weights.push_back(4096 + rng() % 100000);
      c.activations.push_back(4096 + rng() % 150000);
      c.compute_delay_us.push_back(static_cast<int>(rng() % 150));
      c.copy_delay_us.push_back(static_cast<int>(rng() % 150));
    }
    c.resident = rng() % n;
    c.depth = 1 + rng() % 3;
    const bool graphs = rng() % 2 == 0;
    SCOPED_TRACE(testing::Message()
                 << "round " << round << ": " << n << " blocks, " << c.resident
                 << " resident, depth " << c.depth << (graphs ? ", graphs" : ", eager"));
    Harness h(c, graphs, true);
    for (int s = 0; s < 3; ++s) {
      h.engine.calls.clear();
      h.step();
      EXPECT_EQ(h.engine.calls, expected_calls(h.streamer->plan())) << "step " << s;
    }
    h.expect_clean_run(3 * c.weights.size());
    h.expect_slots_apart_in_the_plan();
  }
}

TEST(WeightStreamer, AnAbortMidStepLeavesNoSlotHeld) {
  Case c = five_blocks();
  c.resident = 1;
  c.depth = 2;
  c.copy_delay_us = {200, 200, 200, 200, 200};  // copies still in flight at the abort
  const std::size_t n = c.weights.size();
  for (const bool inside : {false, true}) {
    for (std::size_t k = 0; k < n; ++k) {
      SCOPED_TRACE(testing::Message() << (inside ? "inside" : "before") << " block " << k);
      Harness h(c, false, true);
      h.step();
      h.step();
      h.compiler.trim();
      const Stats before = h.compiler.stats();
      EXPECT_THROW(inside ? h.step(kNone, k) : h.step(k), std::runtime_error);
      h.compiler.trim();
      const Stats after = h.compiler.stats();
      EXPECT_FALSE(h.compiler.in_step());
      EXPECT_EQ(after.live_rogues, 0u);
      EXPECT_EQ(after.steps_aborted, before.steps_aborted + 1);
      EXPECT_EQ(after.mapped_bytes, before.mapped_bytes);
      EXPECT_EQ(after.pool_live_bytes, before.pool_live_bytes);
      h.step();
      h.step();
      EXPECT_TRUE(h.runner.last_step()->replayed());
      // Four whole steps, and the blocks the aborted one ran (those it entered and launched).
      h.expect_clean_run(4 * n + k);
    }
  }
}

// Blocks of 1-3 MiB, activations of ~1 MiB, chunks of 2 MiB; the activations' peak recorded by a
// step with every block resident (the plan then holds only them), a plan chosen for 16 MiB.
struct BudgetCase {
  Case c;
  StreamingInputs in;
  StreamingPlan plan;

  BudgetCase() {
    for (std::size_t i = 0; i < 8; ++i) {
      c.weights.push_back((std::size_t{1} << 20) + i * (std::size_t{256} << 10));
      c.activations.push_back((std::size_t{1} << 20) + (i % 3) * 4096);
    }
    Case all = c;
    all.resident = c.weights.size();
    Harness probe(all, false, true);
    probe.step();
    in.block_bytes = c.weights;
    in.activation_peak_bytes = probe.compiler.stats().planned_peak_bytes;
    in.arena_chunk_bytes = small().chunk_bytes;
    in.pool_chunk_bytes = small().pool_chunk_bytes;
    in.budget_bytes = std::size_t{16} << 20;
    plan = choose_streaming(in);
    c.resident = plan.resident_blocks;
    c.depth = plan.depth;
  }
};

TEST(WeightStreamer, ThePlanForABudgetHoldsTheStepUnderTheCompilersBudget) {
  const BudgetCase b;
  ASSERT_GT(b.in.activation_peak_bytes, 0u);
  ASSERT_GT(b.plan.resident_blocks, 0u);
  ASSERT_LT(b.plan.resident_blocks, b.c.weights.size());
  CompilerOptions o = small();
  o.memory_budget_bytes = b.in.budget_bytes;
  Harness h(b.c, true, true, o);
  for (int s = 0; s < 4; ++s) h.step();
  h.expect_clean_run(4 * b.c.weights.size());
  const Stats st = h.compiler.stats();
  EXPECT_LE(st.peak_mapped_bytes, b.plan.predicted_peak_bytes);
  EXPECT_LE(st.peak_mapped_bytes, b.in.budget_bytes);
  EXPECT_EQ(st.memory_budget_bytes, b.in.budget_bytes);
}

TEST(WeightStreamer, ABudgetBelowThePlanFailsWithTheCompilersErrorAndHoldsNoSlot) {
  const BudgetCase b;
  // Room for the resident blocks and one chunk less than the step's plan of slots and
  // activations: the recording step cannot map its last chunk.
  CompilerOptions o = small();
  o.memory_budget_bytes = b.plan.predicted_peak_bytes - o.chunk_bytes;
  Harness h(b.c, false, true, o);
  try {
    h.step();
    FAIL() << "expected BudgetExceeded";
  } catch (const BudgetExceeded& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("budget"), std::string::npos) << what;
    EXPECT_NE(what.find(std::string(kSlotTag)), std::string::npos) << what;  // a live slot named
  }
  const Stats st = h.compiler.stats();
  EXPECT_FALSE(h.compiler.in_step());
  EXPECT_EQ(st.live_rogues, 0u);
  EXPECT_LE(st.peak_mapped_bytes, o.memory_budget_bytes);
  EXPECT_EQ(h.weights_missing.load() + h.weights_overwritten.load(), 0u);
}

}  // namespace
}  // namespace memplan::stream

namespace memplan::stream {
namespace {

TEST(WeightStreamer, BlocksOutOfOrderAreRefusedAndTheStepStillFreesItsSlots) {
  Case c = five_blocks();
  c.resident = 0;
  Harness h(c, false, true);
  h.step();
  const Stats before = h.compiler.stats();
  EXPECT_THROW(
      h.runner.run(
          "stream", "step",
          [&](StepContext& ctx) {
            StreamedStep streamed(*h.streamer, ctx);
            (void)streamed.enter(0);
            try {
              (void)streamed.enter(2);
            } catch (const InvalidArgument& e) {
              EXPECT_NE(std::string(e.what()).find("expected block 1 of 5"), std::string::npos)
                  << e.what();
              throw;
            }
          }),
      InvalidArgument);
  EXPECT_EQ(h.compiler.stats().live_rogues, before.live_rogues);
  EXPECT_THROW(h.runner.run("stream", "step",
                            [&](StepContext& ctx) {
                              StreamedStep streamed(*h.streamer, ctx);
                              streamed.leave(0);
                            }),
               InvalidArgument);
  EXPECT_EQ(h.compiler.stats().live_rogues, 0u);
}

}  // namespace
}  // namespace memplan::stream
