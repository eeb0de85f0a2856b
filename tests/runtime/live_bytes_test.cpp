// Stats' live and peak bytes against a model kept by the test: every buffer's size and where its
// pointer lies (the planned arena or the pool), summed after every call, the peaks taken after
// every allocation. The programs are random: a few step shapes (so steps replay and break),
// buffers left live past their step (rogues, freed later or never), pause-scope buffers, frees out
// of order. Exactness matters: the budget and the report's headroom are read from these numbers.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "memplan/arena/host_backend.hpp"
#include "memplan/runtime/compiler.hpp"
#include "memplan/types.hpp"

namespace memplan::testing {
namespace {

struct ModelBuffer {
  void* p;
  std::size_t size;
  bool rogue = false;  // in the arena, live past the end of its step
};

class LiveModel {
 public:
  explicit LiveModel(const Compiler& c)
      : base_(reinterpret_cast<std::uintptr_t>(c.arena_base())),
        reserve_(c.options().reserve_bytes) {}

  void allocated(void* p, std::size_t size) {
    buffers_.push_back({p, size});
    const Totals t = totals();
    arena_peak_ = std::max(arena_peak_, t.arena);
    pool_peak_ = std::max(pool_peak_, t.pool);
    total_peak_ = std::max(total_peak_, t.arena + t.pool);
  }
  void freed(std::size_t index) { buffers_.erase(buffers_.begin() + index); }
  // The step ended: its arena buffers still live are rogues now.
  void step_ended(const std::vector<void*>& step_pointers) {
    for (ModelBuffer& b : buffers_) {
      if (in_arena(b.p) &&
          std::find(step_pointers.begin(), step_pointers.end(), b.p) != step_pointers.end()) {
        b.rogue = true;
      }
    }
    rogue_peak_ = std::max(rogue_peak_, totals().rogue);
  }

  void expect_matches(const Stats& s, const std::string& where) const {
    const Totals t = totals();
    EXPECT_EQ(s.arena_live_bytes, t.arena) << where;
    EXPECT_EQ(s.pool_live_bytes, t.pool) << where;
    EXPECT_EQ(s.live_bytes, t.arena + t.pool) << where;
    EXPECT_EQ(s.live_rogue_bytes, t.rogue) << where;
    EXPECT_EQ(s.arena_peak_live_bytes, arena_peak_) << where;
    EXPECT_EQ(s.pool_peak_live_bytes, pool_peak_) << where;
    EXPECT_EQ(s.peak_live_bytes, total_peak_) << where;
    EXPECT_EQ(s.peak_live_rogue_bytes, rogue_peak_) << where;
    EXPECT_LE(s.peak_live_bytes, s.arena_peak_live_bytes + s.pool_peak_live_bytes) << where;
  }

  [[nodiscard]] std::vector<ModelBuffer>& buffers() { return buffers_; }

 private:
  struct Totals {
    std::uint64_t arena = 0, pool = 0, rogue = 0;
  };
  [[nodiscard]] bool in_arena(void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return a >= base_ && a - base_ < reserve_;
  }
  [[nodiscard]] Totals totals() const {
    Totals t;
    for (const ModelBuffer& b : buffers_) {
      if (in_arena(b.p)) {
        t.arena += b.size;
        if (b.rogue) t.rogue += b.size;
      } else {
        t.pool += align_up<std::size_t>(b.size, 256);  // the pool's granule
      }
    }
    return t;
  }

  std::uintptr_t base_;
  std::size_t reserve_;
  std::vector<ModelBuffer> buffers_;
  std::uint64_t arena_peak_ = 0, pool_peak_ = 0, total_peak_ = 0, rogue_peak_ = 0;
};

CompilerOptions small() {
  CompilerOptions o;
  o.reserve_bytes = std::size_t{1} << 30;
  o.chunk_bytes = 64 << 10;
  o.pool_reserve_bytes = std::size_t{1} << 30;
  o.pool_chunk_bytes = 64 << 10;
  o.plan_budget = std::chrono::milliseconds(20);
  o.branch_cap = 1024;
  return o;
}

TEST(LiveBytes, MatchAModelOverRandomProgramsWithRoguesPausesAndLateFrees) {
  for (const unsigned seed : {1u, 2u, 3u, 4u}) {
    arena::HostBackend backend({.commit = false});
    Compiler c(backend, small());
    LiveModel model(c);
    std::mt19937 rng(seed);
    const auto chance = [&](int percent) {
      return std::uniform_int_distribution<int>(0, 99)(rng) < percent;
    };
    const std::size_t sizes[] = {256, 1000, 4096, 12'288, 65'536, 200'000};
    std::vector<std::vector<std::size_t>> shapes(3);
    for (auto& shape : shapes) {
      for (int i = 0; i < 12; ++i) shape.push_back(sizes[rng() % std::size(sizes)]);
    }
    for (int step = 0; step < 120; ++step) {
      const std::string where = fmt::format("seed {} step {}", seed, step);
      SCOPED_TRACE(where);
      if (chance(20) && !model.buffers().empty()) {  // between steps: free an old buffer
        const std::size_t i = rng() % model.buffers().size();
        c.deallocate(model.buffers()[i].p);
        model.freed(i);
      }
      const std::vector<std::size_t>& shape = shapes[rng() % shapes.size()];
      const bool perturb = chance(10);
      c.begin_step("denoise");
      std::vector<void*> mine;     // this step's arena buffers not yet freed or let go
      std::vector<void*> in_step;  // all of them: those live at the end are rogues
      for (std::size_t i = 0; i < shape.size(); ++i) {
        const bool paused = i == 3 && chance(30);
        const std::size_t size = perturb && i == 5 ? shape[i] + 256 : shape[i];
        void* p = nullptr;
        if (paused) {
          auto pause = c.pause();
          p = c.allocate(size);
        } else {
          p = c.allocate(size);
          mine.push_back(p);
          in_step.push_back(p);
        }
        model.allocated(p, size);
        model.expect_matches(c.stats(), where);
        // Free one of this step's buffers, usually the oldest live one, sometimes another.
        if (i % 2 == 1 && !mine.empty()) {
          const std::size_t pick = chance(80) ? 0 : rng() % mine.size();
          void* q = mine[pick];
          const auto it = std::find_if(model.buffers().begin(), model.buffers().end(),
                                       [&](const ModelBuffer& b) { return b.p == q; });
          if (chance(95)) {  // else it stays live past the step: a rogue
            c.deallocate(q);
            model.freed(static_cast<std::size_t>(it - model.buffers().begin()));
          }
          mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(pick));
        }
      }
      // Most of what is left is freed in the step; a few survive it.
      for (void* q : mine) {
        if (chance(97)) {
          const auto it = std::find_if(model.buffers().begin(), model.buffers().end(),
                                       [&](const ModelBuffer& b) { return b.p == q; });
          c.deallocate(q);
          model.freed(static_cast<std::size_t>(it - model.buffers().begin()));
        }
      }
      try {
        c.end_step();
      } catch (const std::exception& e) {
        FAIL() << where << ": " << e.what();
      }
      model.step_ended(in_step);
      model.expect_matches(c.stats(), where + " end");
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(c.stats().steps_replayed, 50u) << "seed " << seed;
    EXPECT_GT(c.stats().rogues, 0u) << "seed " << seed;
  }
}

TEST(LiveBytes, AReplayedStepPeaksAtItsRecordedPeak) {
  arena::HostBackend backend({.commit = false});
  Compiler c(backend, small());
  for (int step = 0; step < 4; ++step) {
    c.begin_step("denoise");
    void* a = c.allocate(1 << 20);
    void* b = c.allocate(3 << 20);
    c.deallocate(a);
    void* d = c.allocate(2 << 20);
    c.deallocate(b);
    c.deallocate(d);
    c.end_step();
    const Stats s = c.stats();
    EXPECT_EQ(s.arena_peak_live_bytes, std::uint64_t{5} << 20);  // b and d
    EXPECT_EQ(s.arena_live_bytes, 0u);
    EXPECT_EQ(s.planned_peak_bytes, std::uint64_t{5} << 20);
    EXPECT_EQ(s.mapped_bytes, s.planned_peak_bytes);  // whole chunks of 64 KiB
  }
  EXPECT_EQ(c.stats().steps_replayed, 3u);
}

}  // namespace
}  // namespace memplan::testing
