// Workflows shared by the host and GPU compiler tests.
#pragma once

#include "step_program.hpp"

namespace memplan::testing {

inline constexpr int kBlocks = 48;
inline constexpr int kRope = 1000;
inline constexpr int kStatsBase = 2000;

struct Flat {
  std::uint64_t breaks, rogues, mapped, pool_allocated, pool_mapped;
  friend bool operator==(const Flat&, const Flat&) = default;
};

template <class H>
Flat flat(H& h) {
  const Stats s = h.compiler().stats();
  return {s.breaks, s.rogues, s.mapped_bytes, s.pool_live_bytes, s.pool_mapped_bytes};
}

// The diffusion workflow of the field report: sparse attention from step 5 builds a padded
// rope-frequency table once and keeps it, and each block keeps pooled key statistics from one
// step to the next. `paused` puts both allocations inside pause scopes.
template <class H>
void run_workflow(H& h, int steps, bool paused, std::vector<Flat>* history,
                  std::size_t tokens = 2048) {
  for (int s = 0; s < steps; ++s) {
    const bool sparse = s >= 5;
    {
      auto step = h.compiler().step("denoise");
      if (sparse && !h.is_live(kRope)) h.allocate(kRope, 3 * tokens * 64, "rope_freqs", paused);
      int id = 0;
      h.allocate(id, tokens * 128);
      for (int b = 0; b < kBlocks; ++b) {
        auto scope = h.compiler().scope("block");
        const int qkv = ++id, attn = ++id;
        h.allocate(qkv, 3 * tokens * 128);
        if (sparse) {
          const int stats = kStatsBase + b;
          if (h.is_live(stats)) h.release(stats);  // last step's statistics
          h.allocate(stats, 32 * 128 * 4, "pooled_k_stats", paused);
        }
        h.allocate(attn, tokens * 128);
        h.release(qkv);
        h.release(attn);
      }
      h.release(0);
    }
    h.expect_all_intact();
    if (history != nullptr) history->push_back(flat(h));
  }
}

}  // namespace memplan::testing
