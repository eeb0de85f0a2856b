// Random step programs with random divergences, rogues, pauses and aborted steps, run for
// thousands of steps against the shadow model (every live buffer keeps its fill pattern; no two
// live buffers overlap). Then the same variants without disturbances: no new breaks.
#include <random>

#include "step_program.hpp"

namespace memplan::testing {
namespace {

// A random program: `events` allocations, each freed at a random later point.
Program random_program(std::mt19937& rng, int events) {
  static constexpr std::size_t kSizes[] = {256, 1000, 4096, 6000, 16384, 65536};
  Program program;
  std::vector<int> live;
  for (int id = 0; id < events; ++id) {
    program.push_back(alloc(id, kSizes[rng() % std::size(kSizes)]));
    live.push_back(id);
    while (!live.empty() && rng() % 3 == 0) {
      const std::size_t k = rng() % live.size();
      program.push_back(free_(live[k]));
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  while (!live.empty()) {
    const std::size_t k = rng() % live.size();
    program.push_back(free_(live[k]));
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return program;
}

// A variant of `base` that diverges at a random point (keeping a valid program).
Program diverge(const Program& base, std::mt19937& rng) {
  Program variant = base;
  const std::size_t at = rng() % variant.size();
  for (std::size_t i = at; i < variant.size(); ++i) {
    if (variant[i].kind == Op::Alloc) {
      variant[i].size += 256 * (1 + rng() % 4);
      break;
    }
  }
  return variant;
}

class Differential : public ::testing::TestWithParam<unsigned> {};

TEST_P(Differential, ShadowModelHoldsAndBreaksConverge) {
  std::mt19937 rng(GetParam());
  CompilerOptions options = Harness::small_options();
  options.branch_cap = 100000;  // the noisy phase makes many paths on purpose
  Harness h(options);
  std::vector<Program> variants{random_program(rng, 24)};
  for (int v = 0; v < 5; ++v) variants.push_back(diverge(variants[rng() % variants.size()], rng));

  int next_kept = 100000;
  std::vector<int> kept;  // rogues and paused buffers, freed in some later step
  constexpr int kSteps = 1500;
  for (int s = 0; s < kSteps; ++s) {
    const Program& program = variants[rng() % variants.size()];
    const bool abort = rng() % 50 == 0;
    const std::size_t abort_at = rng() % program.size();
    try {
      auto step = h.compiler().step("random");
      for (int k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
        if (rng() % 4 == 0) {
          h.release(kept[k]);
          kept.erase(kept.begin() + k);
        }
      }
      for (std::size_t i = 0; i < program.size(); ++i) {
        if (abort && i == abort_at) throw std::runtime_error("abort");
        const Op& op = program[i];
        if (op.kind == Op::Alloc) {
          h.allocate(op.id, op.size);
        } else {
          h.release(op.id);
        }
        if (rng() % 100 == 0) {  // a rogue (outside pause) or a paused buffer, kept a while
          const bool paused = rng() % 2 == 0;
          kept.push_back(next_kept);
          h.allocate(next_kept++, 512 + rng() % 8192, {}, paused);
        }
      }
    } catch (const std::runtime_error&) {
      for (const Op& op : program) {  // the aborted step's buffers are rogues now
        if (op.kind == Op::Alloc && h.is_live(op.id)) h.release(op.id);  // checked, then freed
      }
    }
    ASSERT_FALSE(::testing::Test::HasFailure()) << "step " << s;
  }
  h.expect_all_intact();
  for (const int id : kept) h.release(id);

  // Quiet phase: only the variants, nothing kept. Every path is known by now or is learned once.
  for (std::size_t v = 0; v < variants.size(); ++v) h.run_step(variants[v], "random");
  const std::uint64_t breaks = h.compiler().stats().breaks;
  for (int s = 0; s < 200; ++s) h.run_step(variants[rng() % variants.size()], "random");
  EXPECT_EQ(h.compiler().stats().breaks, breaks);
  EXPECT_EQ(h.compiler().stats().live_rogues, 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, Differential, ::testing::Values(1u, 2u, 3u, 4u));

}  // namespace
}  // namespace memplan::testing
