// The chunk the pool lends the plans (CompilerOptions::share_pool_chunk, window_home.cpp), driven
// at random: pool buffers (weights, paused tensors) of 256 B to 3 MiB allocated and freed between
// and inside steps, several step names whose plans end just under, just over or far from a chunk
// boundary and grow, buffers aligned up to the chunk, rogues freed steps later (inside steps or
// between them), period-two outputs, aborted steps, trim(), release(), trim_to() and settle()
// at random moments; with check mode's poison in one run of three, and under a memory budget.
//
// Two virtual addresses alias one physical chunk while a loan is out, so the fill patterns of the
// harness are backed by a model of the physical memory: the backend records which chunk every
// address maps, and after every allocation no two live buffers may share a physical byte, every
// live buffer must be mapped, and inside the lent chunk the pool's buffers must lie below the
// loan and the arena's at or above it. After every step the stats are checked against the model
// (the arena's own chunks, the pool's, every chunk created and not released, the arena's chunks
// beside what the plans and live buffers need), replays and trims must not move the window,
// settle() may move it only with nothing live in the arena, and trim_to() must keep the bytes of
// the held branches' buffers. The same sequence runs with
// share_pool_chunk = false as the control, and the peaks of the two are reported (not bounded:
// a loan can cost the pool more than it saves the arena). Then: steady replays with a loan out make
// no backend call, and the failures found while this file was written, each as its smallest
// sequence.
//
// A failing run names its seed; DISABLED_ShrinkAFailingRun (at the end) shrinks it to the calls
// that still fail. MEMPLAN_LOAN_SEEDS / MEMPLAN_LOAN_STEPS / MEMPLAN_LOAN_KEEP_GOING run a longer
// hunt, MEMPLAN_LOAN_RUN=<run seed> one run, MEMPLAN_LOAN_TRACE=1 prints every call and step.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <fmt/core.h>

#include "memplan/arena/forwarding_backend.hpp"
#include "step_program.hpp"

namespace memplan::testing {
namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = kKiB * kKiB;
constexpr std::size_t kChunk = 2 * kMiB;  // Harness::small_options(): arena and pool
constexpr std::size_t kLoanAlignment = 4096;

std::size_t chunks_for(std::size_t bytes) { return (bytes + kChunk - 1) / kChunk; }

// ----------------------------------------------------------------------------------------------
// The physical memory model: a backend over the host backend that remembers every chunk and every
// mapping, so that a virtual range can be translated to (chunk, offset) pieces.

struct HostHolder {
  arena::HostBackend host{arena::HostBackendOptions{.commit = false}};
};

class PhysicalModel : private HostHolder, public arena::ForwardingBackend {
 public:
  struct Chunk {
    std::uint64_t id = 0;
    std::size_t bytes = 0;
    std::uintptr_t first_va = 0;  // where it was first mapped: the arena or the pool owns it
    int maps = 0;
  };
  struct Mapping {
    std::size_t bytes = 0;
    arena::ChunkHandle handle = 0;
    std::uint64_t id = 0;
  };
  struct Piece {
    std::uint64_t chunk = 0;  // Chunk::id
    std::size_t begin = 0;    // offset in the chunk
    std::size_t end = 0;
  };

  PhysicalModel() : arena::ForwardingBackend(host) {}

  const std::map<std::uintptr_t, Mapping>& mappings() const { return mappings_; }
  const Chunk* chunk(std::uint64_t id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &chunks_.at(it->second);
  }
  std::size_t live_bytes() const { return live_bytes_; }
  std::size_t peak_bytes() const { return peak_bytes_; }
  // Model violations seen by the backend calls themselves (taken: each is reported once).
  std::vector<std::string> take_errors() { return std::exchange(errors_, {}); }
  // From now on one create_chunk in `create_one_in` and one map in `map_one_in` (0: none) throw
  // OutOfMemory, at random from `seed`: the device (or the host, out of mappings) refusing
  // memory past any budget, at any call.
  void fail_now_and_then(unsigned create_one_in, unsigned map_one_in, unsigned seed) {
    create_fail_one_in_ = create_one_in;
    map_fail_one_in_ = map_one_in;
    faults_.seed(seed);
  }

  // The physical pieces of [p, p + size); false when a byte of it is not mapped.
  bool pieces(const void* p, std::size_t size, std::vector<Piece>& out) const {
    const auto a0 = reinterpret_cast<std::uintptr_t>(p);
    std::uintptr_t a = a0;
    while (a < a0 + size) {
      auto it = mappings_.upper_bound(a);
      if (it == mappings_.begin()) return false;
      --it;
      const std::uintptr_t start = it->first;
      if (a >= start + it->second.bytes) return false;
      const std::uintptr_t end = std::min<std::uintptr_t>(start + it->second.bytes, a0 + size);
      out.push_back({it->second.id, a - start, end - start});
      a = end;
    }
    return true;
  }

 private:
  arena::ChunkHandle do_create_chunk(std::size_t bytes) override {
    if (injected_failure(create_fail_one_in_)) throw OutOfMemory("injected: create_chunk");
    const arena::ChunkHandle h = upstream().create_chunk(bytes);
    if (chunks_.contains(h)) errors_.push_back("the upstream handed out a live handle");
    chunks_[h] = Chunk{.id = ++next_id_, .bytes = bytes};
    by_id_[next_id_] = h;
    live_bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
    return h;
  }
  void do_release_chunk(arena::ChunkHandle h) override {
    const auto it = chunks_.find(h);
    if (it == chunks_.end()) {
      errors_.push_back("release of an unknown chunk");
    } else {
      if (it->second.maps != 0) {
        std::ostringstream s;
        s << "chunk " << it->second.id << " released while still mapped " << it->second.maps
          << " time(s)";
        errors_.push_back(s.str());
        for (auto m = mappings_.begin(); m != mappings_.end();) {
          m = m->second.id == it->second.id ? mappings_.erase(m) : std::next(m);
        }
      }
      live_bytes_ -= it->second.bytes;
      by_id_.erase(it->second.id);
      chunks_.erase(it);
    }
    upstream().release_chunk(h);
  }
  void do_map(void* va, std::size_t bytes, arena::ChunkHandle h) override {
    if (injected_failure(map_fail_one_in_)) throw OutOfMemory("injected: map");
    upstream().map(va, bytes, h);
    const auto a = reinterpret_cast<std::uintptr_t>(va);
    auto next = mappings_.lower_bound(a);
    const bool clash_next = next != mappings_.end() && next->first < a + bytes;
    const bool clash_prev =
        next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second.bytes > a;
    if (clash_next || clash_prev) errors_.push_back("map over a mapped range");
    const auto it = chunks_.find(h);
    if (it == chunks_.end()) {
      errors_.push_back("map of an unknown chunk");
      return;
    }
    if (it->second.first_va == 0) it->second.first_va = a;
    ++it->second.maps;
    mappings_[a] = Mapping{bytes, h, it->second.id};
  }
  void do_unmap(void* va, std::size_t bytes) override {
    upstream().unmap(va, bytes);
    const auto a = reinterpret_cast<std::uintptr_t>(va);
    auto it = mappings_.lower_bound(a);
    if (it != mappings_.begin() && std::prev(it)->first + std::prev(it)->second.bytes > a) {
      errors_.push_back("unmap of part of a mapping");
    }
    for (; it != mappings_.end() && it->first < a + bytes;) {
      if (it->first + it->second.bytes > a + bytes) errors_.push_back("unmap of part of a mapping");
      const auto c = chunks_.find(it->second.handle);
      if (c != chunks_.end() && c->second.id == it->second.id) --c->second.maps;
      it = mappings_.erase(it);
    }
  }

  bool injected_failure(unsigned one_in) {
    const bool fail = one_in != 0 && faults_() % one_in == 0;
    if (fail && std::getenv("MEMPLAN_LOAN_TRACE") != nullptr) std::printf("  backend fails\n");
    return fail;
  }
  unsigned map_fail_one_in_ = 0;
  unsigned create_fail_one_in_ = 0;
  std::mt19937 faults_;

  std::unordered_map<arena::ChunkHandle, Chunk> chunks_;
  std::unordered_map<std::uint64_t, arena::ChunkHandle> by_id_;
  std::map<std::uintptr_t, Mapping> mappings_;
  std::uint64_t next_id_ = 0;
  std::size_t live_bytes_ = 0;
  std::size_t peak_bytes_ = 0;
  std::vector<std::string> errors_;
};

struct ModeledMemory : HostMemory {
  using Backend = PhysicalModel;
  static std::unique_ptr<Backend> make_backend() { return std::make_unique<Backend>(); }
};
using ModeledHarness = BasicHarness<ModeledMemory>;

// ----------------------------------------------------------------------------------------------
// Programs.

// A program whose `parts` buffers live together at its peak, `target` bytes in all (the plan's
// size when the planner reaches the bound), with temporaries before and after it that never add
// up to the peak.
Program shaped_program(std::mt19937& rng, std::size_t target) {
  Program p;
  int id = 0;
  const std::size_t small = std::max<std::size_t>(256, target / 5);
  // Now and then an alignment above the default: up to the chunk, as the arena allows.
  const auto aligned = [&](int buffer, std::size_t size) {
    Op op = alloc(buffer, size);
    if (rng() % 12 == 0) op.alignment = std::size_t{1} << (8 + rng() % 14);
    return op;
  };
  const auto temporaries = [&](int n) {
    std::vector<int> live;
    for (int k = 0; k < n; ++k) {
      p.push_back(aligned(id, 256 + rng() % small));
      live.push_back(id++);
      while (live.size() > 2 || (!live.empty() && rng() % 2 == 0)) {
        const std::size_t i = rng() % live.size();
        p.push_back(free_(live[i]));
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    for (const int l : live) p.push_back(free_(l));
  };
  temporaries(static_cast<int>(rng() % 4));
  const int parts = 1 + static_cast<int>(rng() % 4);
  std::vector<int> peak;
  std::size_t left = target;
  for (int k = 0; k < parts; ++k) {
    const std::size_t size =
        k + 1 == parts ? left : std::max<std::size_t>(256, left / 2 - rng() % (left / 4 + 1));
    if (size == 0 || size > left) break;
    p.push_back(aligned(id, size));
    peak.push_back(id++);
    left -= size;
    if (left < 256) break;
  }
  std::shuffle(peak.begin(), peak.end(), rng);
  for (const int b : peak) p.push_back(free_(b));
  temporaries(static_cast<int>(rng() % 4));
  return p;
}

// A step whose buffers are all inside pauses: no event, a tree whose plans need no byte.
Program paused_program(std::mt19937& rng) {
  Program p;
  const int n = static_cast<int>(rng() % 3);
  for (int id = 0; id < n; ++id) p.push_back(paused_alloc(id, 256 + rng() % (256 * kKiB)));
  for (int id = n; id-- > 0;) {
    Op op = free_(id);
    op.paused = true;
    p.push_back(op);
  }
  return p;
}

// `base` with one allocation a little larger or smaller: a new branch from there.
Program diverged(const Program& base, std::mt19937& rng) {
  Program v = base;
  std::vector<std::size_t> allocs;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i].kind == Op::Alloc) allocs.push_back(i);
  }
  if (allocs.empty()) return v;
  Op& op = v[allocs[rng() % allocs.size()]];
  const std::size_t delta = 256 * (1 + rng() % 256);
  op.size = rng() % 2 == 0 || op.size <= delta ? op.size + delta : op.size - delta;
  return v;
}

// A plan size of one of the shapes that give the plans' last chunk different room.
std::size_t target_of(std::mt19937& rng, int shape) {
  const std::size_t n = 1 + rng() % 2;
  switch (shape) {
    case 0:  // tiny
      return 4 * kKiB + rng() % (256 * kKiB);
    case 1:  // just under a multiple of the chunk: no room for the pool's bytes, mostly
      return n * kChunk - (4 * kKiB + rng() % (300 * kKiB));
    case 2:  // just over: most of the last chunk free
      return n * kChunk + 4 * kKiB + rng() % (300 * kKiB);
    default:  // anywhere in between
      return 300 * kKiB + rng() % (3 * kMiB);
  }
}

// ----------------------------------------------------------------------------------------------
// The random run.

struct RunCounts {
  std::uint64_t steps = 0;
  std::uint64_t steps_with_loan = 0;  // the loan was out when the step began
  std::uint64_t loans_taken = 0;      // pool_lent_bytes went from 0 to > 0
  std::uint64_t loans_ended = 0;      // and back
  std::uint64_t loans_moved = 0;      // changed size while out
  std::uint64_t window_moves = 0;
  std::uint64_t buffers_in_lent_chunk = 0;     // arena allocations served in the pool's chunk
  std::uint64_t pool_buffers_beside_loan = 0;  // pool buffers live in the lent chunk at a step end
  std::uint64_t loan_with_slot_unmapped = 0;   // step ends with a loan out, its slot unmapped
  std::uint64_t loan_away_from_home = 0;       // step ends with the loan's chunk past slot 0
  std::uint64_t recorded = 0;
  std::uint64_t aborted = 0;
  std::uint64_t rogues = 0;
  std::uint64_t learned_site_allocations = 0;
  std::uint64_t period_two_outputs = 0;
  std::uint64_t carried_outputs = 0;
  std::uint64_t trims = 0;
  std::uint64_t releases = 0;
  std::uint64_t trim_tos = 0;
  std::uint64_t settles = 0;
  std::uint64_t settle_moves = 0;
  std::uint64_t settles_refused = 0;  // settle() threw OutOfMemory
  std::uint64_t pool_allocations = 0;
  std::uint64_t misaligned = 0;           // pointers not aligned as asked
  std::uint64_t graph_state_buffers = 0;  // held branches' buffers whose bytes trim_to kept
  std::uint64_t out_of_memory = 0;        // calls refused: the memory budget, a failing backend
  std::uint64_t no_plan = 0;              // end_step's planner found no plan (see its test)
  std::size_t sampled_peak = 0;  // max of mapped_bytes + pool_mapped_bytes, after each step/op
  std::size_t model_peak = 0;    // chunks created and not released, at most
  std::size_t stats_peak = 0;    // Stats::peak_mapped_bytes

  void add(const RunCounts& o) {
    steps += o.steps;
    steps_with_loan += o.steps_with_loan;
    loans_taken += o.loans_taken;
    loans_ended += o.loans_ended;
    loans_moved += o.loans_moved;
    window_moves += o.window_moves;
    buffers_in_lent_chunk += o.buffers_in_lent_chunk;
    pool_buffers_beside_loan += o.pool_buffers_beside_loan;
    loan_with_slot_unmapped += o.loan_with_slot_unmapped;
    loan_away_from_home += o.loan_away_from_home;
    recorded += o.recorded;
    aborted += o.aborted;
    rogues += o.rogues;
    learned_site_allocations += o.learned_site_allocations;
    period_two_outputs += o.period_two_outputs;
    carried_outputs += o.carried_outputs;
    trims += o.trims;
    releases += o.releases;
    trim_tos += o.trim_tos;
    settles += o.settles;
    settle_moves += o.settle_moves;
    settles_refused += o.settles_refused;
    pool_allocations += o.pool_allocations;
    misaligned += o.misaligned;
    graph_state_buffers += o.graph_state_buffers;
    out_of_memory += o.out_of_memory;
    no_plan += o.no_plan;
  }
};

struct Abort {};

// What a run did, call by call, to replay it (and shrink it) without the random choices.
struct Event {
  enum Kind : std::uint8_t { Alloc, Free, Begin, End, Aborted, Trim, Release, TrimTo, Settle } kind;
  int id = 0;
  std::size_t size = 0;
  std::size_t alignment = 0;
  bool paused = false;
  std::string names;  // Begin: the step's name; TrimTo: the held steps' names, ',' after each
};

class LoanRun {
 public:
  // `poison`: check mode fills every buffer handed out and freed (through the backend), so a free
  // that reached bytes of another live buffer would show too.
  // `budget`: CompilerOptions::memory_budget_bytes (0: none); allocations, steps and trim_to()
  // that would pass it fail with OutOfMemory, which the run takes as an abort or a skip.
  LoanRun(unsigned seed, bool share, bool poison = false, std::size_t budget = 0)
      : rng_(seed), h_(options(share, poison, budget)), share_(share) {
    // Per run: how large the weights are, how much of them is live at most, how the plans grow.
    weights_cap_ = (1 + rng_() % 6) * kMiB;
    // How often a step leaves a buffer live, and for how long: rare and short, or often and long
    // (the window then moves clear of them and the loan with it, or stays pinned by one).
    rogue_one_in_ = std::array<unsigned, 3>{200, 60, 25}[rng_() % 3];
    rogue_steps_ = 2 + static_cast<int>(rng_() % 12);
    large_weights_ = rng_() % 3 == 0;
    grow_cap_ = (2 + rng_() % 6) * kMiB;
    p2_sizes_ = {16 * kKiB + rng_() % (2 * kMiB), 4 * kKiB + rng_() % (512 * kKiB),
                 4 * kKiB + rng_() % (3 * kMiB)};
    for (int shape = 0; shape < 4; ++shape) {
      Name n;
      n.name = "shape" + std::to_string(shape);
      n.shape = shape;
      n.variants.push_back(shaped_program(rng_, target_of(rng_, shape)));
      names_.push_back(std::move(n));
    }
    Name paused;
    paused.name = "paused";
    paused.shape = 4;
    paused.variants.push_back(paused_program(rng_));
    names_.push_back(std::move(paused));
    Name grow;
    grow.name = "grow";
    grow.shape = -1;
    grow_target_ = 64 * kKiB + rng_() % (512 * kKiB);
    grow.variants.push_back(shaped_program(rng_, grow_target_));
    names_.push_back(std::move(grow));
  }

  static CompilerOptions options(bool share, bool poison = false, std::size_t budget = 0) {
    CompilerOptions o = ModeledHarness::small_options();
    o.share_pool_chunk = share;
    o.check.poison = poison;
    o.memory_budget_bytes = budget;
    o.branch_cap = 100000;
    o.plan_budget = std::chrono::milliseconds(0);  // the first strategy only: no clock in the plans
    return o;
  }

  ModeledHarness& harness() { return h_; }
  // Every call from now on goes to `events` too (Event).
  void record_into(std::vector<Event>* events) { events_ = events; }
  const RunCounts& counts() const { return counts_; }
  // The first failure, as a line of the sequence that led to it (empty: none).
  const std::string& trail() const { return trail_; }
  const std::string& first_misaligned() const { return first_misaligned_; }

  void run(int steps) {
    for (int s = 0; s < steps && !::testing::Test::HasFatalFailure(); ++s) {
      step_ = s;
      between_steps();
      if (failed()) return;
      if (p2_left_ > 0) {
        p2_step();
        if (p2_left_ > 0) --p2_left_;  // an OutOfMemory ends the streak
      } else {
        if (rng_() % 40 == 0) start_p2_streak();
        random_step();
      }
      after_step();
      if (failed()) return;
    }
    finish();
  }

  // A failure of the model's checks or of the harness's (an overwritten byte, an overlap).
  bool failed() const { return failures_ > 0 || h_.overlaps() > 0 || h_.mismatches() > 0; }

 private:
  struct Name {
    std::string name;
    int shape = 0;
    std::vector<Program> variants;
  };
  struct Buf {
    void* p = nullptr;
    std::size_t size = 0;
  };
  struct Leftover {
    int id = 0;
    int due = 0;          // the step from which it is freed
    bool inside = false;  // freed inside that step, else before it
  };
  enum class P2Free : std::uint8_t { AfterNextStep, LateInNext, EarlyInNext };

  // ---- buffers

  void record(Event e) {
    if (events_ != nullptr) events_->push_back(std::move(e));
  }

  void* allocate(int id, std::size_t size, bool paused, std::size_t alignment = 0) {
    record({Event::Alloc, id, size, alignment, paused, {}});
    void* p = h_.allocate(id, size, {}, paused, alignment);
    live_[id] = Buf{p, size};
    const std::size_t want = std::max<std::size_t>(alignment, 256);
    if (reinterpret_cast<std::uintptr_t>(p) % want != 0) {
      if (counts_.misaligned++ == 0) {
        std::ostringstream s;
        s << "step " << step_ << ": " << size << " B aligned to " << want << " at " << p
          << (in_arena(p) ? ", arena offset " : ", pool address ")
          << reinterpret_cast<std::uintptr_t>(p) - (in_arena(p) ? arena_base_ : 0)
          << ", pool_lent_bytes " << h_.compiler().stats().pool_lent_bytes;
        first_misaligned_ = s.str();
      }
    }
    if (in_arena(p)) {
      std::vector<PhysicalModel::Piece> pieces;
      if (h_.backend().pieces(p, size, pieces)) {
        for (const auto& piece : pieces) {
          const PhysicalModel::Chunk* c = h_.backend().chunk(piece.chunk);
          if (c != nullptr && !in_arena(reinterpret_cast<void*>(c->first_va))) {
            ++counts_.buffers_in_lent_chunk;
            break;
          }
        }
      }
    }
    check_physical("allocate");
    return p;
  }
  void release(int id) {
    record({.kind = Event::Free, .id = id});
    h_.release(id);
    live_.erase(id);
  }

  void pool_op(bool inside) {
    const auto r = static_cast<unsigned>(rng_() % 100);
    if (r < 55) {
      std::size_t size = 0;
      const auto k = static_cast<unsigned>(rng_() % 100);
      if (k < 55) {
        size = 256 + rng_() % (64 * kKiB);
      } else if (k < (large_weights_ ? 80u : 95u)) {
        size = 64 * kKiB + rng_() % (960 * kKiB);
      } else {
        size = kMiB + rng_() % (2 * kMiB);
      }
      if (weights_bytes_ + size > weights_cap_) return;
      const int id = next_id_++;
      // Outside steps, now inside a pause and now not: the pool either way. The pool aligns to at
      // most 4096.
      const std::size_t alignment = rng_() % 8 == 0 ? std::size_t{512} << (rng_() % 4) : 0;
      try {
        allocate(id, size, inside || rng_() % 2 == 0, alignment);
      } catch (const OutOfMemory&) {
        ++counts_.out_of_memory;
        return;
      }
      weights_.push_back(id);
      weights_bytes_ += size;
      ++counts_.pool_allocations;
      note("w+" + std::to_string(id) + ":" + std::to_string(size));
    } else if (!weights_.empty()) {
      const std::size_t i = rng_() % weights_.size();
      const int id = weights_[i];
      weights_bytes_ -= live_.at(id).size;
      weights_.erase(weights_.begin() + static_cast<std::ptrdiff_t>(i));
      release(id);
      note("w-" + std::to_string(id));
    }
  }

  // ---- between steps

  void between_steps() {
    // Leftovers due now and freed outside the step.
    for (std::size_t i = 0; i < leftovers_.size();) {
      if (leftovers_[i].due <= step_ && !leftovers_[i].inside) {
        note("free leftover " + std::to_string(leftovers_[i].id));
        release(leftovers_[i].id);
        leftovers_.erase(leftovers_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    const int ops = rng_() % 4 == 0 ? 1 + static_cast<int>(rng_() % 3) : 0;
    for (int k = 0; k < ops; ++k) pool_op(false);
    check_physical("pool ops between steps");
    const auto r = static_cast<unsigned>(rng_() % 100);
    if (r < 4) {
      note("trim");
      record({.kind = Event::Trim});
      const std::uint64_t moves = h_.compiler().stats().window_moves;
      h_.compiler().trim();
      if (h_.compiler().stats().window_moves != moves) fail("trim", "the window moved");
      ++counts_.trims;
      reset_touched();
      check_state("trim", /*after_trim=*/true);
    } else if (r < 6) {
      // release() throws while rogues live: only when no buffer of a step is left, or none of
      // those left is a rogue (carried outputs may be).
      if ((leftovers_.empty() && p2_prev_ < 0) || h_.compiler().stats().live_rogues == 0) {
        note("release");
        record({.kind = Event::Release});
        const std::uint64_t moves = h_.compiler().stats().window_moves;
        h_.compiler().release();
        if (h_.compiler().stats().window_moves != moves) fail("release", "the window moved");
        ++counts_.releases;
        reset_touched();
        check_state("release", /*after_trim=*/false);
        check_loan_dropped_if_unmapped("release");
      }
    } else if (r < 8) {
      std::vector<BranchRef> held;
      const int n = static_cast<int>(rng_() % 3);
      std::string what = "trim_to {";
      for (int k = 0; k < n; ++k) {
        const std::size_t i = rng_() % (names_.size() + 1);
        const auto it = last_result_.find(i < names_.size() ? names_[i].name : "p2");
        if (it == last_result_.end()) continue;
        held.push_back(it->second);
        what += " " + it->second.step + "#" + std::to_string(it->second.branch) + "/" +
                std::to_string(it->second.parity);
      }
      note(what + " }");
      Event e{.kind = Event::TrimTo};
      for (const BranchRef& ref : held) e.names += ref.step + ",";
      record(std::move(e));
      // A graph of each held branch keeps state in its buffers' bytes between launches.
      const std::vector<Buf> state = write_graph_state(held);
      const std::uint64_t moves = h_.compiler().stats().window_moves;
      try {
        h_.compiler().trim_to(held);
      } catch (const OutOfMemory&) {
        ++counts_.out_of_memory;  // mapping a held branch back: the arena is as it was
      }
      ++counts_.trim_tos;
      check_graph_state(state);
      if (h_.compiler().stats().window_moves != moves) fail("trim_to", "the window moved");
      reset_touched();
      check_state("trim_to", /*after_trim=*/false);
      check_loan_dropped_if_unmapped("trim_to");
    } else if (r < 11) {
      note("settle");
      record({.kind = Event::Settle});
      const std::uint64_t moves = h_.compiler().stats().window_moves;
      bool moved = false;
      try {
        moved = h_.compiler().settle();
      } catch (const OutOfMemory&) {
        // No chunk for the plans at home (a budget, a failing backend): home with nothing of
        // the arena mapped, so no chunk outlives the plans it held (checked below).
        ++counts_.out_of_memory;
        ++counts_.settles_refused;
        moved = h_.compiler().stats().window_moves != moves;
        if (h_.compiler().stats().mapped_bytes != 0) fail("settle", "it failed but left chunks");
      }
      const std::uint64_t after = h_.compiler().stats().window_moves;
      if (after != moves + (moved ? 1 : 0)) {
        fail("settle", "returned " + std::to_string(moved) + " but the window moved " +
                           std::to_string(after - moves) + " time(s)");
      }
      if (moved && !share_) fail("settle", "the window moved with share_pool_chunk = false");
      for (const auto& [id, b] : live_) {
        if (moved && in_arena(b.p)) {
          fail("settle",
               "the window moved with buffer " + std::to_string(id) + " live in the arena");
        }
      }
      ++counts_.settles;
      if (moved) {
        ++counts_.settle_moves;
        reset_touched();  // the move unmapped every chunk but the plans' at home
      }
      check_state("settle", /*after_trim=*/moved);
      check_loan_dropped_if_unmapped("settle");
    }
    sample("between steps");
  }

  // ---- steps

  // One step of a random name and variant, with pool buffers allocated and freed inside it,
  // leftovers freed inside it, frees skipped (rogues), and now and then an abort.
  void random_step() {
    if (rng_() % 40 == 0) {
      // A step name never seen: recorded, so the window goes home if no rogue is live.
      Name once;
      once.name = "once" + std::to_string(step_);
      once.shape = static_cast<int>(rng_() % 4);
      once.variants.push_back(shaped_program(rng_, target_of(rng_, once.shape)));
      run_program(once, 0);
      return;
    }
    Name& n = names_[rng_() % names_.size()];
    // New variants now and then: the plans grow (the growing name) or branch.
    if (n.shape < 0 && rng_() % 25 == 0 && grow_target_ < grow_cap_) {
      grow_target_ += 64 * kKiB + rng_() % (640 * kKiB);
      n.variants.push_back(shaped_program(rng_, grow_target_));
    } else if (rng_() % 15 == 0 && n.variants.size() < 8) {
      if (n.shape == 4) {
        n.variants.push_back(paused_program(rng_));
      } else if (rng_() % 2 == 0 && n.shape >= 0) {
        n.variants.push_back(shaped_program(rng_, target_of(rng_, n.shape)));
      } else {
        n.variants.push_back(diverged(n.variants[rng_() % n.variants.size()], rng_));
      }
    }
    // Mostly the newest variants of the growing name (its plans keep growing), any of the others.
    const std::size_t v =
        n.shape < 0 && rng_() % 2 == 0 ? n.variants.size() - 1 : rng_() % n.variants.size();
    run_program(n, v);
  }

  void run_program(const Name& n, std::size_t v) {
    const Program& program = n.variants[v];
    const bool abort = rng_() % 40 == 0;
    const std::size_t abort_at = rng_() % (program.size() + 1);
    note("step " + std::to_string(step_) + " " + n.name + " v" + std::to_string(v) +
         (abort ? " abort@" + std::to_string(abort_at) : ""));
    std::map<int, int> ids;  // the program's ids -> the run's
    std::vector<int> due = due_inside();
    std::optional<StepResult> result;
    std::vector<Buf> step_buffers;
    const Stats before = h_.compiler().stats();
    try {
      record({.kind = Event::Begin, .names = n.name});
      auto guard = h_.compiler().step(n.name);
      for (std::size_t i = 0; i < program.size(); ++i) {
        if (abort && i == abort_at) {
          record({.kind = Event::Aborted});
          throw Abort{};
        }
        inside_ops(due);
        const Op& op = program[i];
        if (op.kind == Op::Alloc) {
          ids[op.id] = next_id_++;
          allocate(ids[op.id], op.size, op.paused, op.alignment);
          step_buffers.push_back(live_.at(ids[op.id]));
        } else if (op.paused) {
          release(ids.at(op.id));  // a pause buffer of the program: always freed
        } else if (leftovers_.size() < 6 && rng_() % rogue_one_in_ == 0) {
          note("rogue " + std::to_string(ids[op.id]));  // its free skipped: live at the end
        } else {
          release(ids.at(op.id));
        }
      }
      for (const int id : due) release(id);
      due.clear();
      record({.kind = Event::End});
      result = guard.end();
    } catch (const Abort&) {
      ++counts_.aborted;
    } catch (const OutOfMemory&) {
      record({.kind = Event::Aborted});
      ++counts_.out_of_memory;  // the guard aborted the step, or begin_step failed
    } catch (const std::exception& e) {
      record({.kind = Event::Aborted});
      h_.compiler().abort_step();  // StepGuard::end() threw: the step stays open (compiler.hpp)
      // A step with rogues stuck in its window (under a budget) that breaks after leaving a buffer
      // of its replayed prefix live: end_step's planner finds no plan. That failure is the
      // compiler's, without sharing too (ABufferOfTheReplayedPrefixLeftLive...); counted here so
      // the run goes on to what the loan does.
      if (std::string_view(e.what()).find("no plan exists") != std::string_view::npos) {
        ++counts_.no_plan;
      } else {
        fail("step", std::string("the step threw: ") + e.what());
      }
    }
    for (const int id : due) release(id);  // an abort before their turn: freed after it
    // What the step left live: rogues, kept for a while.
    const bool aborted = !result.has_value();
    for (const auto& [local, id] : ids) {
      if (!live_.contains(id)) continue;
      if (aborted && rng_() % 2 == 0) {
        release(id);
        continue;
      }
      leftovers_.push_back(
          {id, step_ + 1 + static_cast<int>(rng_() % static_cast<unsigned>(rogue_steps_)),
           rng_() % 2 == 0});
      touch(live_.at(id));
    }
    if (aborted) {
      // Recording served it best fit, and an abort trims nothing: the chunks its buffers touched
      // may stay mapped until a trim.
      for (const Buf& b : step_buffers) touch(b);
    }
    if (result) {
      last_result_[n.name] = BranchRef{n.name, result->branch.value_or(0), result->parity};
      note_branch_buffers(n.name, result->replayed() ? step_buffers : std::vector<Buf>{},
                          before.window_moves);
      if (!result->replayed()) ++counts_.recorded;
      check_replay_kept_window(before, *result);
    }
  }

  // A replayed step that leaves no rogue, finds no output of another step carried over and plans
  // no output with period two at its begin (the plans grow there: docs/compiler.md) never moves
  // the window nor changes the loan (window_home.cpp: guarantee 2).
  void check_replay_kept_window(const Stats& before, const StepResult& r) {
    if (!r.replayed() || r.rogues > 0 || before.live_carried_outputs > 0) return;
    const Stats after = h_.compiler().stats();
    if (after.period_two_outputs != before.period_two_outputs) return;
    if (after.window_moves != before.window_moves) fail("replayed step", "the window moved");
    if (after.pool_lent_bytes != before.pool_lent_bytes) {
      fail("replayed step", "the loan changed from " + std::to_string(before.pool_lent_bytes) +
                                " to " + std::to_string(after.pool_lent_bytes));
    }
  }

  void start_p2_streak() {
    p2_left_ = 3 + static_cast<int>(rng_() % 14);
    p2_free_ = static_cast<P2Free>(rng_() % 3);
    note("p2 streak of " + std::to_string(p2_left_));
  }

  // One step of the period-two name: temporaries, then an output kept past the step, the
  // previous output freed as the streak's habit says (and now and then not: the habit breaks).
  void p2_step() {
    note("step " + std::to_string(step_) + " p2");
    const int prev = p2_prev_;
    const bool keep_prev = rng_() % 25 == 0;  // the caller keeps one output longer
    const int out = next_id_++;
    const int t1 = next_id_++;
    const int t2 = next_id_++;
    std::vector<int> due = due_inside();
    const Stats before = h_.compiler().stats();
    std::vector<Buf> step_buffers;
    try {
      record({.kind = Event::Begin, .names = "p2"});
      auto guard = h_.compiler().step("p2");
      inside_ops(due);
      allocate(t1, p2_sizes_[0], false);
      step_buffers.push_back(live_.at(t1));
      allocate(t2, p2_sizes_[1], false);
      step_buffers.push_back(live_.at(t2));
      release(t1);
      inside_ops(due);
      if (prev >= 0 && !keep_prev && p2_free_ == P2Free::EarlyInNext) release(prev);
      allocate(out, p2_sizes_[2], false);
      step_buffers.push_back(live_.at(out));
      if (prev >= 0 && !keep_prev && p2_free_ == P2Free::LateInNext) release(prev);
      inside_ops(due);
      release(t2);
      for (const int id : due) release(id);
      due.clear();
      record({.kind = Event::End});
      const StepResult r = *guard.end();
      last_result_["p2"] = BranchRef{"p2", r.branch.value_or(0), r.parity};
      note_branch_buffers("p2", r.replayed() ? step_buffers : std::vector<Buf>{},
                          before.window_moves);
      if (!r.replayed()) ++counts_.recorded;
      // Its own output carried over is the habit: the window stays for it.
      Stats adjusted = before;
      if (prev >= 0 && before.live_carried_outputs == 1) adjusted.live_carried_outputs = 0;
      check_replay_kept_window(adjusted, r);
    } catch (const OutOfMemory&) {
      // Under a budget: the step was aborted; what it left is freed, and the habit starts over.
      // An abort trims nothing: the chunks its buffers touched (as rogues, the window moved
      // clear of them) may stay mapped until a trim.
      record({.kind = Event::Aborted});
      ++counts_.out_of_memory;
      for (const Buf& b : step_buffers) touch(b);
      for (const int id : due) release(id);
      for (const int id : {t1, t2, out, prev}) {
        if (id >= 0 && live_.contains(id)) release(id);
      }
      p2_prev_ = -1;
      p2_left_ = 0;
      return;
    }
    if (prev >= 0 && live_.contains(prev)) {
      if (keep_prev) {
        leftovers_.push_back({prev, step_ + 1 + static_cast<int>(rng_() % 3), false});
      } else {
        release(prev);
      }
    }
    p2_prev_ = out;
    touch(live_.at(out));
    if (p2_left_ == 1) {
      // The streak ends: the last output lives on a while, as a rogue once another step runs.
      leftovers_.push_back({out, step_ + static_cast<int>(rng_() % 4), rng_() % 2 == 0});
      p2_prev_ = -1;
    }
  }

  // The arena buffers of the last step of `name` that ended, replayed: its branch's planned ranges
  // (a recording serves other addresses than it plans), while the window stays where it was then
  // (`moves_before`: Stats::window_moves at its begin).
  void note_branch_buffers(const std::string& name, const std::vector<Buf>& buffers,
                           std::uint64_t moves_before) {
    BranchBuffers& b = branch_buffers_[name];
    b.window_moves = h_.compiler().stats().window_moves;
    b.buffers.clear();
    if (b.window_moves != moves_before) return;  // the window moved at its end
    for (const Buf& buf : buffers) {
      if (in_arena(buf.p)) b.buffers.push_back(buf);
    }
  }

  // Fills the planned ranges of each held branch (where the window has not moved since its last
  // step, they are mapped and no live buffer lies there) as a graph's state would.
  std::vector<Buf> write_graph_state(const std::vector<BranchRef>& held) {
    std::vector<Buf> written;
    const std::uint64_t moves = h_.compiler().stats().window_moves;
    for (const BranchRef& ref : held) {
      const auto it = branch_buffers_.find(ref.step);
      if (it == branch_buffers_.end() || it->second.window_moves != moves) continue;
      for (const Buf& b : it->second.buffers) {
        std::vector<PhysicalModel::Piece> pieces;
        if (!h_.backend().pieces(b.p, b.size, pieces)) continue;
        const auto a = reinterpret_cast<std::uintptr_t>(b.p);
        const bool clear = std::none_of(live_.begin(), live_.end(), [&](const auto& l) {
          const auto c = reinterpret_cast<std::uintptr_t>(l.second.p);
          return a < c + l.second.size && c < a + b.size;
        });
        if (!clear) continue;
        std::memset(b.p, kGraphState, b.size);
        written.push_back(b);
        ++counts_.graph_state_buffers;
      }
    }
    return written;
  }

  // trim_to keeps the held branches' ranges mapped, their bytes as they were (guarantee 3).
  void check_graph_state(const std::vector<Buf>& state) {
    for (const Buf& b : state) {
      std::vector<PhysicalModel::Piece> pieces;
      if (!h_.backend().pieces(b.p, b.size, pieces)) {
        fail("trim_to", "a held branch's buffer is no longer mapped");
        continue;
      }
      const std::size_t at = HostMemory::first_difference(b.p, b.size, kGraphState);
      if (at != b.size) {
        fail("trim_to", "byte " + std::to_string(at) + " of a held branch's " +
                            std::to_string(b.size) + " B buffer changed");
      }
    }
  }

  std::vector<int> due_inside() {
    std::vector<int> due;
    for (std::size_t i = 0; i < leftovers_.size();) {
      if (leftovers_[i].due <= step_ && leftovers_[i].inside) {
        due.push_back(leftovers_[i].id);
        leftovers_.erase(leftovers_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    return due;
  }

  void inside_ops(std::vector<int>& due) {
    if (!due.empty() && rng_() % 3 == 0) {
      note("free leftover " + std::to_string(due.back()) + " inside");
      release(due.back());
      due.pop_back();
    }
    if (rng_() % 12 == 0) pool_op(true);
  }

  // ---- checks

  bool in_arena(const void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t base = arena_base_;
    return a >= base && a - base < arena_reserved_;
  }

  // Every live buffer mapped, no physical byte shared by two of them, and in the chunk the pool
  // lends: the pool's buffers below the loan, the arena's at or above it.
  void check_physical(const char* where) {
    for (const std::string& e : h_.backend().take_errors()) fail(where, "backend model: " + e);
    const std::size_t lent = h_.compiler().stats().pool_lent_bytes;
    const std::uint64_t borrowed = borrowed_chunk();
    struct Span {
      std::uint64_t chunk;
      std::size_t begin, end;
      int id;
    };
    std::vector<Span> spans;
    std::vector<PhysicalModel::Piece> pieces;
    for (const auto& [id, b] : live_) {
      pieces.clear();
      if (!h_.backend().pieces(b.p, b.size, pieces)) {
        fail(where, "live buffer " + std::to_string(id) + " lies (partly) in unmapped memory");
        continue;
      }
      const bool arena_side = in_arena(b.p);
      for (const auto& piece : pieces) {
        spans.push_back({piece.chunk, piece.begin, piece.end, id});
        if (lent > 0 && piece.chunk == borrowed) {
          const std::size_t from = kChunk - lent;
          if (arena_side && piece.begin < from) {
            fail(where, "arena buffer " + std::to_string(id) + " lies in the pool's bytes [0, " +
                            std::to_string(from) + ") of the lent chunk at " +
                            std::to_string(piece.begin));
          }
          if (!arena_side && piece.end > from) {
            fail(where, "pool buffer " + std::to_string(id) + " lies in the lent bytes [" +
                            std::to_string(from) + ", chunk) up to " + std::to_string(piece.end));
          }
        }
      }
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.chunk != b.chunk ? a.chunk < b.chunk : a.begin < b.begin;
    });
    // Sorted by start: a span overlaps an earlier one of its chunk iff it starts before the
    // furthest end seen so far in that chunk.
    std::size_t furthest = 0;
    int furthest_id = 0;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      if (i == 0 || spans[i].chunk != spans[i - 1].chunk) furthest = 0;
      if (spans[i].begin < furthest) {
        fail(where, "buffers " + std::to_string(furthest_id) + " and " +
                        std::to_string(spans[i].id) + " share physical bytes of chunk " +
                        std::to_string(spans[i].chunk) + " at offset " +
                        std::to_string(spans[i].begin));
      }
      if (spans[i].end > furthest) {
        furthest = spans[i].end;
        furthest_id = spans[i].id;
      }
    }
  }

  // The pool chunk the arena maps (at the slot of the loan), or 0; `slot` gets its slot. More than
  // one, or one while the pool lends nothing, is a failure.
  std::uint64_t borrowed_chunk(std::size_t* slot = nullptr) {
    const std::uintptr_t base = arena_base_;
    std::uint64_t found = 0;
    for (const auto& [va, m] : h_.backend().mappings()) {
      if (va < base || va - base >= arena_reserved_) continue;
      const PhysicalModel::Chunk* c = h_.backend().chunk(m.id);
      if (c == nullptr || in_arena(reinterpret_cast<void*>(c->first_va))) continue;
      if (found != 0) fail("mappings", "the arena maps two chunks of the pool");
      found = m.id;
      if (slot != nullptr) *slot = (va - base) / kChunk;
    }
    if (found != 0 && h_.compiler().stats().pool_lent_bytes == 0) {
      fail("mappings", "the arena maps a chunk of the pool while the pool lends nothing");
    }
    if (!share_ && found != 0) fail("mappings", "a loan with share_pool_chunk = false");
    return found;
  }

  // The stats against the model; `after_trim`: right after trim(), when only the plans' window
  // and the live buffers of the arena may be mapped.
  void check_state(const char* where, bool after_trim) {
    const Stats st = h_.compiler().stats();
    const std::uintptr_t base = arena_base_;
    std::size_t own = 0;
    std::size_t pool = 0;
    std::set<std::size_t> own_slots;
    std::optional<std::size_t> borrowed_slot;  // where the arena maps the pool's chunk
    for (const auto& [va, m] : h_.backend().mappings()) {
      const PhysicalModel::Chunk* c = h_.backend().chunk(m.id);
      const bool arena_va = va >= base && va - base < arena_reserved_;
      const bool arena_chunk = c != nullptr && in_arena(reinterpret_cast<void*>(c->first_va));
      if (arena_va && arena_chunk) {
        own += m.bytes;
        own_slots.insert((va - base) / kChunk);
      } else if (arena_va) {
        borrowed_slot = (va - base) / kChunk;
      } else {
        pool += m.bytes;
        if (arena_chunk) fail(where, "an arena chunk is mapped in the pool");
      }
    }
    if (st.mapped_bytes != own) {
      fail(where, "Stats::mapped_bytes " + std::to_string(st.mapped_bytes) +
                      " but the arena maps " + std::to_string(own) + " of its own");
    }
    if (st.pool_mapped_bytes != pool) {
      fail(where, "Stats::pool_mapped_bytes " + std::to_string(st.pool_mapped_bytes) +
                      " but the pool maps " + std::to_string(pool));
    }
    if (h_.backend().live_bytes() != own + pool) {
      fail(where, "chunks alive " + std::to_string(h_.backend().live_bytes()) +
                      " but mapped by their owners " + std::to_string(own + pool));
    }
    const std::size_t lent = st.pool_lent_bytes;
    if (lent >= kChunk || lent % kLoanAlignment != 0) {
      fail(where, "pool_lent_bytes " + std::to_string(lent));
    }
    if (!share_ && lent != 0) fail(where, "a loan with share_pool_chunk = false");
    // What the plans may have mapped of the arena's own: the window's chunks (with a loan, the
    // first of them is the pool's), besides the chunks of live arena buffers and of buffers that
    // no trim has let go of since.
    const std::size_t need = st.planned_peak_bytes;
    std::set<std::size_t> other;  // chunks of arena buffers outside the window's reach
    for (const std::size_t s : touched_) other.insert(s);
    for (const auto& [id, b] : live_) {
      if (in_arena(b.p)) add_slots(b, other);
    }
    std::size_t window_slots = 0;
    for (const std::size_t s : own_slots) window_slots += other.contains(s) ? 0 : 1;
    const std::size_t allowed = chunks_for(need) + (lent > 0 ? 0 : 1);
    if (window_slots > allowed) {
      fail(where, "the arena maps " + std::to_string(window_slots) +
                      " chunks of its own beside its live buffers, more than the plans' " +
                      std::to_string(need) + " B need (" + std::to_string(allowed) + ")");
    }
    if (after_trim) {
      if (lent > 0 && !borrowed_slot) {
        fail(where, "a loan is out but the arena does not map the lent chunk after trim()");
      }
      // With the loan's chunk kept by the window alone, the window starts in it, at
      // kChunk - lent, and its own chunks are those past that one.
      std::set<std::size_t> live_slots;
      for (const auto& [id, b] : live_) {
        if (in_arena(b.p)) add_slots(b, live_slots);
      }
      if (lent > 0 && borrowed_slot && !live_slots.contains(*borrowed_slot)) {
        const std::size_t home_slots = chunks_for(kChunk - lent + need) - 1;
        std::size_t beside = 0;
        for (const std::size_t s : own_slots) beside += live_slots.contains(s) ? 0 : 1;
        if (beside > home_slots) {
          fail(where, "a window at " + std::to_string(kChunk - lent) + " in the lent chunk with " +
                          std::to_string(need) + " B of plans needs " + std::to_string(home_slots) +
                          " chunks of the arena's own, it maps " + std::to_string(beside));
        }
      }
    }
    check_physical(where);
  }

  void check_loan_dropped_if_unmapped(const char* where) {
    if (h_.compiler().stats().pool_lent_bytes > 0 && borrowed_chunk() == 0) {
      fail(where, "a loan is out but the arena maps no chunk of the pool after unmapping");
    }
  }

  void after_step() {
    ++counts_.steps;
    h_.expect_all_intact();
    const Stats st = h_.compiler().stats();
    if (lent_before_ > 0) ++counts_.steps_with_loan;
    if (st.pool_lent_bytes > 0) {
      std::size_t slot = 0;
      const std::uint64_t borrowed = borrowed_chunk(&slot);
      if (borrowed == 0) ++counts_.loan_with_slot_unmapped;
      if (borrowed != 0 && slot > 0) ++counts_.loan_away_from_home;
      std::vector<PhysicalModel::Piece> pieces;
      for (const auto& [id, b] : live_) {
        if (in_arena(b.p)) continue;
        pieces.clear();
        h_.backend().pieces(b.p, b.size, pieces);
        for (const auto& piece : pieces) {
          if (piece.chunk == borrowed) {
            ++counts_.pool_buffers_beside_loan;
            break;
          }
        }
      }
    }
    check_state("after step", false);
    sample("after step");
  }

  void sample(const char* where) {
    const Stats st = h_.compiler().stats();
    counts_.sampled_peak =
        std::max<std::size_t>(counts_.sampled_peak, st.mapped_bytes + st.pool_mapped_bytes);
    if (lent_before_ == 0 && st.pool_lent_bytes > 0) ++counts_.loans_taken;
    if (lent_before_ > 0 && st.pool_lent_bytes == 0) ++counts_.loans_ended;
    if (lent_before_ > 0 && st.pool_lent_bytes > 0 && lent_before_ != st.pool_lent_bytes) {
      ++counts_.loans_moved;
    }
    lent_before_ = st.pool_lent_bytes;
    if (trace_) {
      std::printf(
          "%s %4d %-14s arena %6zu pool %6zu lent %5zu | live: pool %6zu arena %6zu "
          "rogues %zu carried %zu | need %zu moves %zu\n",
          share_ ? "S" : "C", step_, where, to_kib(st.mapped_bytes), to_kib(st.pool_mapped_bytes),
          to_kib(st.pool_lent_bytes), to_kib(st.pool_live_bytes), to_kib(st.arena_live_bytes),
          static_cast<std::size_t>(st.live_rogues),
          static_cast<std::size_t>(st.live_carried_outputs), to_kib(st.planned_peak_bytes),
          static_cast<std::size_t>(st.window_moves));
    }
  }
  static std::size_t to_kib(std::uint64_t bytes) { return static_cast<std::size_t>(bytes / kKiB); }

  void finish() {
    const Stats st = h_.compiler().stats();
    counts_.window_moves = st.window_moves;
    counts_.rogues = st.rogues;
    counts_.learned_site_allocations = st.learned_site_allocations;
    counts_.period_two_outputs = st.period_two_outputs;
    counts_.carried_outputs = st.carried_outputs;
    counts_.model_peak = h_.backend().peak_bytes();
    counts_.stats_peak = st.peak_mapped_bytes;
    EXPECT_EQ(h_.overlaps(), 0u);
    EXPECT_EQ(h_.mismatches(), 0u);
  }

  // The chunks of the arena that buffers of steps no trim has seen since may keep mapped.
  void touch(const Buf& b) {
    if (in_arena(b.p)) add_slots(b, touched_);
  }
  // After a trim: what is mapped beyond the window is the chunks of the arena's live buffers
  // (which stay mapped once they are freed, until the next trim).
  void reset_touched() {
    touched_.clear();
    for (const auto& [id, b] : live_) touch(b);
  }
  void add_slots(const Buf& b, std::set<std::size_t>& slots) const {
    const std::uintptr_t base = arena_base_;
    const std::size_t first = (reinterpret_cast<std::uintptr_t>(b.p) - base) / kChunk;
    const std::size_t last = (reinterpret_cast<std::uintptr_t>(b.p) - base + b.size - 1) / kChunk;
    for (std::size_t s = first; s <= last; ++s) slots.insert(s);
  }

  void note(std::string what) {
    if (trace_) std::printf("%s   %s\n", share_ ? "S" : "C", what.c_str());
    if (trail_.empty()) {
      recent_.push_back(std::move(what));
      if (recent_.size() > 40) recent_.erase(recent_.begin());
    }
  }
  void fail(const char* where, const std::string& what) {
    if (++failures_ > 6) return;  // the first few tell; the run stops at the step's end
    if (trail_.empty()) {
      for (const std::string& r : recent_) trail_ += r + "; ";
    }
    ADD_FAILURE() << (share_ ? "[shared] " : "[control] ") << "step " << step_ << ", " << where
                  << ": " << what << "\n  last events: " << trail_;
  }

  std::mt19937 rng_;
  ModeledHarness h_;
  bool share_;
  std::uintptr_t arena_base_ = reinterpret_cast<std::uintptr_t>(h_.compiler().arena_base());
  std::size_t arena_reserved_ = ModeledHarness::small_options().reserve_bytes;
  std::vector<Name> names_;
  std::size_t grow_target_ = 0;
  std::size_t grow_cap_ = 0;
  std::size_t weights_cap_ = 0;
  unsigned rogue_one_in_ = 100;
  int rogue_steps_ = 6;
  bool large_weights_ = false;
  std::array<std::size_t, 3> p2_sizes_{};
  int p2_left_ = 0;
  int p2_prev_ = -1;
  P2Free p2_free_ = P2Free::AfterNextStep;

  int step_ = 0;
  int next_id_ = 1;
  std::map<int, Buf> live_;
  std::vector<int> weights_;
  std::size_t weights_bytes_ = 0;
  std::vector<Leftover> leftovers_;
  std::map<std::string, BranchRef> last_result_;
  struct BranchBuffers {
    std::uint64_t window_moves = 0;
    std::vector<Buf> buffers;
  };
  std::map<std::string, BranchBuffers> branch_buffers_;
  static constexpr unsigned char kGraphState = 0xC3;
  std::set<std::size_t> touched_;
  std::size_t lent_before_ = 0;
  RunCounts counts_;
  std::vector<std::string> recent_;
  std::string trail_;
  std::string first_misaligned_;
  int failures_ = 0;
  bool trace_ = std::getenv("MEMPLAN_LOAN_TRACE") != nullptr;  // a line per step and operation
  std::vector<Event>* events_ = nullptr;
};

// Each seed runs kRunsPerSeed times (run seed: seed + 1000 * run, the last with poison), shared
// and control.
constexpr unsigned kSeeds[] = {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u};
constexpr int kRunsPerSeed = 3;
constexpr int kStepsPerRun = 250;

// For a longer hunt: MEMPLAN_LOAN_SEEDS=<n> runs seeds 1..n instead of kSeeds, and
// MEMPLAN_LOAN_STEPS=<n> that many steps per run.
std::vector<unsigned> seeds() {
  if (const char* n = std::getenv("MEMPLAN_LOAN_SEEDS")) {
    std::vector<unsigned> all(static_cast<std::size_t>(std::max(1, std::atoi(n))));
    std::iota(all.begin(), all.end(), 1u);
    return all;
  }
  return {std::begin(kSeeds), std::end(kSeeds)};
}
int steps_per_run() {
  const char* n = std::getenv("MEMPLAN_LOAN_STEPS");
  return n != nullptr ? std::max(1, std::atoi(n)) : kStepsPerRun;
}
// The runs of a test with one run per seed: `defaults`, or MEMPLAN_LOAN_SEEDS' seeds, or the one
// MEMPLAN_LOAN_RUN names; and its steps: 400, or MEMPLAN_LOAN_STEPS.
std::vector<unsigned> one_run_seeds(std::vector<unsigned> defaults) {
  if (const char* one = std::getenv("MEMPLAN_LOAN_RUN")) {
    return {static_cast<unsigned>(std::atoi(one))};
  }
  return std::getenv("MEMPLAN_LOAN_SEEDS") != nullptr ? seeds() : defaults;
}
int one_run_steps() { return std::getenv("MEMPLAN_LOAN_STEPS") != nullptr ? steps_per_run() : 400; }

TEST(PoolChunkLoanRandom, NoBufferIsOverwrittenAndThePeakBesideTheControlIsReported) {
  const auto started = std::chrono::steady_clock::now();
  RunCounts shared;
  RunCounts control;
  std::size_t worst_excess = 0;
  const std::vector<unsigned> all_seeds = seeds();
  for (const unsigned seed : all_seeds) {
    for (int run = 0; run < kRunsPerSeed; ++run) {
      unsigned run_seed = seed + 1000 * static_cast<unsigned>(run);
      if (const char* one = std::getenv("MEMPLAN_LOAN_RUN")) {  // one run: <seed + 1000 * run>
        if (seed != all_seeds.front() || run > 0) break;
        run_seed = static_cast<unsigned>(std::atoi(one));
        run = static_cast<int>(run_seed / 1000);
      }
      SCOPED_TRACE("seed " + std::to_string(run_seed));
      const bool poison = run == kRunsPerSeed - 1;
      LoanRun with(run_seed, /*share=*/true, poison);
      with.run(steps_per_run());
      // MEMPLAN_LOAN_KEEP_GOING: a long hunt goes on to the next run after a failure.
      const bool keep_going = std::getenv("MEMPLAN_LOAN_KEEP_GOING") != nullptr;
      if (keep_going && with.failed()) continue;
      ASSERT_FALSE(with.failed()) << "seed " << run_seed;
      LoanRun without(run_seed, /*share=*/false, poison);
      without.run(steps_per_run());
      if (keep_going && without.failed()) continue;
      ASSERT_FALSE(without.failed()) << "seed " << run_seed << " (control)";
      const RunCounts& a = with.counts();
      const RunCounts& b = without.counts();
      EXPECT_EQ(b.steps_with_loan, 0u);
      // Every pointer is aligned as asked (compiler.hpp: up to the chunk in a step).
      EXPECT_EQ(a.misaligned, 0u) << "seed " << run_seed << ", first: " << with.first_misaligned();
      EXPECT_EQ(b.misaligned, 0u) << "seed " << run_seed
                                  << " (control), first: " << without.first_misaligned();
      // The peaks against the control are reported, not asserted: a loan can cost the pool more
      // than the chunk it saves the arena (DISABLED_SharingNeverMapsMoreThanAChunkOverTheControl,
      // why share_pool_chunk is off by default), and a run's path depends on the addresses the
      // host hands out (rogues are kept by pointer), so a bound would fail now and then.
      EXPECT_EQ(a.model_peak, a.stats_peak) << "Stats::peak_mapped_bytes";
      worst_excess = std::max<std::size_t>(
          worst_excess, a.sampled_peak > b.sampled_peak ? a.sampled_peak - b.sampled_peak : 0);
      std::printf(
          "seed %u: %llu steps, %llu with a loan (%llu taken, %llu ended, %llu moved), %llu "
          "window moves, %llu buffers in the lent chunk; peak mapped+pool %zu KiB shared vs %zu "
          "KiB control, physical %zu vs %zu KiB\n",
          run_seed, static_cast<unsigned long long>(a.steps),
          static_cast<unsigned long long>(a.steps_with_loan),
          static_cast<unsigned long long>(a.loans_taken),
          static_cast<unsigned long long>(a.loans_ended),
          static_cast<unsigned long long>(a.loans_moved),
          static_cast<unsigned long long>(a.window_moves),
          static_cast<unsigned long long>(a.buffers_in_lent_chunk), a.sampled_peak / kKiB,
          b.sampled_peak / kKiB, a.model_peak / kKiB, b.model_peak / kKiB);
      shared.add(a);
      control.add(b);
      shared.sampled_peak = std::max(shared.sampled_peak, a.sampled_peak);
      control.sampled_peak = std::max(control.sampled_peak, b.sampled_peak);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "shared: %llu steps, %llu with a loan, %llu loans taken, %llu ended, %llu moved, %llu "
      "window moves, %llu planned buffers in the lent chunk, %llu pool buffers beside a loan, "
      "%llu step ends with the loan's slot unmapped, %llu with it past slot 0; %llu recorded, %llu "
      "aborted, %llu rogues, "
      "%llu learned-site allocations, %llu period-two outputs (%llu carried), %llu trims, %llu "
      "releases, %llu trim_to (%llu held buffers kept), %llu settles (%llu moved), %llu pool "
      "allocations; worst excess over "
      "the control %zu KiB; "
      "%.1f s\n",
      static_cast<unsigned long long>(shared.steps),
      static_cast<unsigned long long>(shared.steps_with_loan),
      static_cast<unsigned long long>(shared.loans_taken),
      static_cast<unsigned long long>(shared.loans_ended),
      static_cast<unsigned long long>(shared.loans_moved),
      static_cast<unsigned long long>(shared.window_moves),
      static_cast<unsigned long long>(shared.buffers_in_lent_chunk),
      static_cast<unsigned long long>(shared.pool_buffers_beside_loan),
      static_cast<unsigned long long>(shared.loan_with_slot_unmapped),
      static_cast<unsigned long long>(shared.loan_away_from_home),
      static_cast<unsigned long long>(shared.recorded),
      static_cast<unsigned long long>(shared.aborted),
      static_cast<unsigned long long>(shared.rogues),
      static_cast<unsigned long long>(shared.learned_site_allocations),
      static_cast<unsigned long long>(shared.period_two_outputs),
      static_cast<unsigned long long>(shared.carried_outputs),
      static_cast<unsigned long long>(shared.trims),
      static_cast<unsigned long long>(shared.releases),
      static_cast<unsigned long long>(shared.trim_tos),
      static_cast<unsigned long long>(shared.graph_state_buffers),
      static_cast<unsigned long long>(shared.settles),
      static_cast<unsigned long long>(shared.settle_moves),
      static_cast<unsigned long long>(shared.pool_allocations), worst_excess / kKiB, seconds);
  RecordProperty("steps", static_cast<int>(shared.steps));
  RecordProperty("steps_with_loan", static_cast<int>(shared.steps_with_loan));
  RecordProperty("loans_taken", static_cast<int>(shared.loans_taken));
  RecordProperty("planned_buffers_in_lent_chunk", static_cast<int>(shared.buffers_in_lent_chunk));
  RecordProperty("peak_mapped_kib_shared", static_cast<int>(shared.sampled_peak / kKiB));
  RecordProperty("peak_mapped_kib_control", static_cast<int>(control.sampled_peak / kKiB));

  // A run that never lends proves nothing: the loan must have been taken, used and given back
  // often, and the plans must have moved onto the pool's chunk and off it.
  EXPECT_GE(shared.steps_with_loan, shared.steps / 20);
  EXPECT_GE(shared.loans_taken, 2u * all_seeds.size());
  EXPECT_GE(shared.loans_ended, all_seeds.size());
  EXPECT_GE(shared.window_moves, 6u * all_seeds.size());
  EXPECT_GE(shared.buffers_in_lent_chunk, shared.steps / 10);
  EXPECT_GT(shared.pool_buffers_beside_loan, 0u);
  EXPECT_GT(shared.rogues, 0u);
  EXPECT_GT(shared.learned_site_allocations, 0u);
  EXPECT_GT(shared.period_two_outputs, 0u);
  EXPECT_GT(shared.aborted, 0u);
  EXPECT_GT(shared.graph_state_buffers, 0u);
  EXPECT_GT(shared.settle_moves, 0u);  // the runs reach settle() with the window away from home
}

// Under a memory budget the loan's moves, the pool's growth and the steps fail now and then
// (BudgetExceeded): the failure paths of lending, borrowing and moving the window must leave no
// buffer overwritten and no stats wrong either, and the budget holds for the chunks alive.
TEST(PoolChunkLoanRandom, UnderAMemoryBudgetNoBufferIsOverwritten) {
  RunCounts shared;
  const bool share = std::getenv("MEMPLAN_LOAN_CONTROL") == nullptr;
  for (const unsigned run_seed : one_run_seeds({1u, 2u, 3u, 4u})) {
    SCOPED_TRACE("seed " + std::to_string(run_seed));
    std::mt19937 pick(run_seed);
    const std::size_t budget = (12 + pick() % 10) * kMiB;
    LoanRun run(run_seed, share, /*poison=*/false, budget);
    run.run(one_run_steps());
    ASSERT_FALSE(run.failed()) << "seed " << run_seed;
    EXPECT_LE(run.counts().model_peak, budget) << "chunks alive past the budget";
    shared.add(run.counts());
  }
  fmt::print(
      "under a budget: {} steps, {} with a loan, {} loans taken, {} refusals, {} steps with no "
      "plan\n",
      shared.steps, shared.steps_with_loan, shared.loans_taken, shared.out_of_memory,
      shared.no_plan);
  EXPECT_GT(shared.out_of_memory, 0u);
  EXPECT_GT(shared.steps_with_loan, 0u);
}

// The device may refuse a chunk or a mapping past any budget (another process took the memory;
// the host ran out of mappings): every backend call that creates or maps memory fails now and
// then. Each failure must leave the compiler as the model expects: no buffer overwritten, the
// stats equal to the chunks mapped, no chunk kept beside the plans and the live buffers (an
// aborted step's chunks until a trim, settle()'s none). MEMPLAN_LOAN_SEEDS / _STEPS / _RUN as
// above.
TEST(PoolChunkLoanRandom, BackendFailuresAtAnyCallLeaveNoBufferOverwrittenNorChunkBehind) {
  RunCounts shared;
  for (const unsigned run_seed : one_run_seeds({1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u})) {
    SCOPED_TRACE("seed " + std::to_string(run_seed));
    LoanRun run(run_seed, /*share=*/true);
    // Most steps replay without a backend call, so each call that does come fails often.
    run.harness().backend().fail_now_and_then(/*create_one_in=*/5, /*map_one_in=*/12, run_seed);
    run.run(one_run_steps());
    ASSERT_FALSE(run.failed()) << "seed " << run_seed;
    shared.add(run.counts());
  }
  fmt::print(
      "backend failing now and then: {} steps, {} refused calls ({} of them settle), {} with a "
      "loan, {} window moves, {} aborted\n",
      shared.steps, shared.out_of_memory, shared.settles_refused, shared.steps_with_loan,
      shared.window_moves, shared.aborted);
  EXPECT_GT(shared.out_of_memory, shared.steps / 50);
  EXPECT_GT(shared.steps_with_loan, 0u);
  EXPECT_GT(shared.settle_moves, 0u);
}

// ----------------------------------------------------------------------------------------------
// Guarantee 2 with a loan out: replayed steps make no backend memory call once warmed up.

std::uint64_t memory_calls(ModeledHarness& h) {
  return h.compiler().stats().backend_calls.memory_calls();
}

// Weights in the pool, using part of its last chunk: small ones, now and then one of more than a
// chunk whose end is the pool's top.
void allocate_weights(ModeledHarness& h, std::mt19937& rng, int& id) {
  const int n = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < n; ++k) h.allocate(id++, 256 + rng() % (96 * kKiB), {}, /*paused=*/true);
  if (rng() % 2 == 0) h.allocate(id++, kChunk + rng() % (128 * kKiB), {}, /*paused=*/true);
}

// Random step names with plans just over a chunk boundary (room for the pool's bytes), a name
// whose buffer outlives its step and is freed inside the step after next (a learned site the pool
// serves), and a pause buffer allocated and freed inside every step.
TEST(PoolChunkLoanRandom, SteadyReplaysWithALoanAndALearnedPoolSiteMakeNoBackendCall) {
  int seeds_with_loan = 0;
  for (unsigned seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    ModeledHarness h(LoanRun::options(true));
    int id = 1;
    allocate_weights(h, rng, id);
    std::vector<Program> programs;
    const int names = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < names; ++k) {
      programs.push_back(
          shaped_program(rng, (1 + rng() % 2) * kChunk + 4 * kKiB + rng() % (600 * kKiB)));
    }
    const Program leaky = shaped_program(rng, 256 * kKiB + rng() % (1200 * kKiB));
    const std::size_t leak_size = 256 + rng() % (192 * kKiB);
    const std::size_t leak_at = rng() % leaky.size();
    const std::size_t leak_free_at = rng() % leaky.size();
    const std::size_t paused_size = 256 + rng() % (32 * kKiB);
    const std::size_t paused_at = rng() % leaky.size();
    std::vector<int> leaked;  // oldest first
    const auto leaky_step = [&] {
      auto step = h.compiler().step("leaky");
      std::map<int, int> ids;
      int paused = -1;
      for (std::size_t i = 0; i < leaky.size(); ++i) {
        if (i == leak_free_at && leaked.size() >= 2) {
          h.release(leaked.front());
          leaked.erase(leaked.begin());
        }
        if (i == leak_at) {
          leaked.push_back(id);
          h.allocate(id++, leak_size);
        }
        if (i == paused_at) {
          paused = id;
          h.allocate(id++, paused_size, {}, /*paused=*/true);
        }
        const Op& op = leaky[i];
        if (op.kind == Op::Alloc) {
          ids[op.id] = id;
          h.allocate(id++, op.size);
        } else {
          h.release(ids.at(op.id));
        }
      }
      h.release(paused);
    };
    const auto round = [&] {
      for (std::size_t k = 0; k < programs.size(); ++k) {
        Program p = programs[k];
        for (Op& op : p) op.id += id;  // fresh ids: the harness's are global
        id += 1000;
        h.run_step(p, "plan" + std::to_string(k));
      }
      leaky_step();
    };
    for (int r = 0; r < 6; ++r) round();
    // The leaked buffer of the first steps was a rogue in the arena; with none live now, one more
    // recording takes the window home.
    h.run_step({alloc(id, 4096), free_(id)}, "settle");
    ++id;
    for (int r = 0; r < 4; ++r) round();
    h.expect_all_intact();
    const Stats warm = h.compiler().stats();
    ASSERT_GE(warm.learned_rogue_sites, 1u);
    ASSERT_EQ(warm.live_rogues, 0u);
    seeds_with_loan += warm.pool_lent_bytes > 0 ? 1 : 0;
    for (int r = 0; r < 30; ++r) round();
    h.expect_all_intact();
    const Stats st = h.compiler().stats();
    EXPECT_EQ(memory_calls(h) - warm.backend_calls.memory_calls(), 0u)
        << "steady steps made backend calls with " << warm.pool_lent_bytes << " B lent";
    EXPECT_EQ(st.breaks, warm.breaks);
    EXPECT_EQ(st.pool_lent_bytes, warm.pool_lent_bytes);
    EXPECT_EQ(st.window_moves, warm.window_moves);
    EXPECT_GE(st.learned_site_allocations, warm.learned_site_allocations + 30);
    EXPECT_EQ(h.overlaps(), 0u);
  }
  RecordProperty("seeds_with_loan", seeds_with_loan);
  EXPECT_GE(seeds_with_loan, 8) << "the steady state ran with a loan out in too few seeds";
}

// A period-two output (planned in the arena, freed in the next step), with the pool's weights in
// the chunk the plans borrow and a pause buffer inside each step.
TEST(PoolChunkLoanRandom, SteadyPeriodTwoReplaysWithALoanMakeNoBackendCall) {
  int seeds_with_loan = 0;
  for (unsigned seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    ModeledHarness h(LoanRun::options(true));
    int id = 1;
    allocate_weights(h, rng, id);
    // Plans of a little more than a chunk, whichever the habit: the previous output and this
    // one (1 MiB each) with the second temporary beside them, or the first temporary in the
    // previous output's place.
    const std::size_t t1 = kMiB - rng() % (64 * kKiB);
    const std::size_t t2 = 4 * kKiB + rng() % (128 * kKiB);
    const std::size_t out = kMiB;
    const std::size_t paused_size = 256 + rng() % (32 * kKiB);
    const bool late = rng() % 2 == 0;
    // Another step first, whose plan is the largest: recorded with nothing of the arena live, it
    // takes the loan; the loop's outputs, carried from step to step, then keep the window there.
    h.run_step(shaped_program(rng, kChunk + 64 * kKiB + rng() % (128 * kKiB)), "first");
    int prev = -1;
    const auto step = [&] {
      auto guard = h.compiler().step("p2");
      const int a = id++;
      const int b = id++;
      const int c = id++;
      const int o = id++;
      h.allocate(a, t1);
      h.allocate(c, paused_size, {}, /*paused=*/true);
      h.allocate(b, t2);
      h.release(a);
      if (prev >= 0 && !late) h.release(prev);
      h.allocate(o, out);
      if (prev >= 0 && late) h.release(prev);
      h.release(b);
      h.release(c);
      prev = o;
    };
    for (int s = 0; s < 8; ++s) step();
    const Stats warm = h.compiler().stats();
    ASSERT_EQ(warm.period_two_outputs, 1u);
    seeds_with_loan += warm.pool_lent_bytes > 0 ? 1 : 0;
    for (int s = 0; s < 30; ++s) step();
    h.expect_all_intact();
    const Stats st = h.compiler().stats();
    EXPECT_EQ(memory_calls(h) - warm.backend_calls.memory_calls(), 0u)
        << "steady steps made backend calls with " << warm.pool_lent_bytes << " B lent";
    EXPECT_EQ(st.breaks, warm.breaks);
    EXPECT_EQ(st.period_two_fallbacks, 0u);
    EXPECT_EQ(st.pool_lent_bytes, warm.pool_lent_bytes);
    EXPECT_EQ(h.overlaps(), 0u);
  }
  RecordProperty("seeds_with_loan", seeds_with_loan);
  EXPECT_GE(seeds_with_loan, 5) << "the steady state ran with a loan out in too few seeds";
}

// ----------------------------------------------------------------------------------------------
// Failures found on earlier states of the loan while this file was written (the random run, or
// reading window_home.cpp beside it), each as its smallest sequence: regressions now.

std::uintptr_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Every seed of the random run, on the first state: the window started past the pool's bytes at a
// multiple of 4 KiB only (kLoanAlignment), while a step may ask the arena for any alignment up to
// the chunk (compiler.hpp). Plans place buffers aligned from the window, so a buffer aligned to
// more than 4 KiB came back misaligned, replayed or recorded, and stayed so after a release()
// ended the loan (the window stays where it is).
TEST(PoolChunkLoanFound, BuffersAlignedAboveFourKiBStayAlignedWithALoanOut) {
  Harness h;
  h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
  const Program step = {Op{Op::Alloc, 1, 4096, {}, false, 8192}, free_(1)};
  h.run_step(step);  // recorded at offset 0, planned: 4 KiB, the window goes home past the pool
  ASSERT_GT(h.compiler().stats().pool_lent_bytes, 0u);
  const void* replayed = h.run_step(step)[0];
  EXPECT_EQ(address_of(replayed) % 8192, 0u) << "replayed at " << replayed;
  const Program other = {Op{Op::Alloc, 2, 4096, {}, false, 65536}, free_(2)};
  const void* recorded = h.run_step(other, "other")[0];
  EXPECT_EQ(address_of(recorded) % 65536, 0u) << "recorded at " << recorded;
  h.compiler().release();
  const void* after_release = h.run_step(step)[0];
  EXPECT_EQ(address_of(after_release) % 8192, 0u)
      << "replayed after release() at " << after_release;
  h.expect_all_intact();
}

// On the state where the loan first moved with the window (any slot): a loan the window leaves
// behind, pinned by a rogue in its chunk, outlives that rogue; the window, moved below it, then
// reached into the loan's slot and a recorded buffer was served on the pool's bytes there,
// overwriting the weights. The arena maps the pool's chunk wherever the loan's slot is
// (Arena::borrow); rogues were kept clear of (RogueSet::clear_of_chunks, Recording::hold_range),
// the loan's pool bytes were not.
TEST(PoolChunkLoanFound, ThePlansNeverReachThePoolsBytesInALoanLeftBehind) {
  Harness h;
  h.allocate(100, 100 * kKiB, {}, /*paused=*/true);  // weights: the pool's chunk, from offset 0
  // R0 outlives its step at arena offset 0: the window moves clear of it with the loan, to slot 1.
  h.run_step({alloc(1, 64 * kKiB), alloc(2, 256 * kKiB), free_(2)}, "a");
  ASSERT_GT(h.compiler().stats().pool_lent_bytes, 0u);
  // R1 outlives its step in the lent bytes of slot 1: the window moves to slot 2, the loan stays.
  h.run_step({alloc(3, 64 * kKiB), alloc(4, 128 * kKiB), free_(4)}, "b");
  h.release(1);
  // R2 outlives its step at slot 2: the window moves to the lowest chunk clear of rogues, slot 0.
  h.run_step({alloc(5, 64 * kKiB), alloc(6, 128 * kKiB), free_(6)}, "c");
  h.release(3);  // R1 dies; the loan's slot stays mapped with the pool's chunk
  h.expect_all_intact();
  // A step of 2.5 MiB, recorded from the window at 0: its second buffer runs through slot 1.
  const std::vector<void*> p =
      h.run_step({alloc(7, 1024 * kKiB), alloc(8, 1536 * kKiB), free_(7), free_(8)}, "d");
  h.expect_all_intact();  // the weights
  EXPECT_EQ(h.mismatches(), 0u) << "buffers at arena offsets "
                                << static_cast<const char*>(p[0]) -
                                       static_cast<const char*>(h.compiler().arena_base())
                                << " and "
                                << static_cast<const char*>(p[1]) -
                                       static_cast<const char*>(h.compiler().arena_base());
}

// The loop of a model called step after step, `out = model(x)`, each output freed once the next
// exists (period two, docs/compiler.md), beside 300 KiB of weights. The first step's output is a
// rogue, so the window moves; from the third step on an output is carried in the plans at every
// step's end, so the window never goes home again. On the first state the loan was taken only at
// home and this loop never took it: the arena and the pool mapped a chunk each where the plans
// (700 KiB) fit the pool's chunk past the weights.
TEST(PoolChunkLoanFound, AModelCalledInALoopTakesTheLoan) {
  Harness h;
  int previous = -1;
  for (int s = 0; s < 12; ++s) {
    if (s == 1) h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
    const int out = 1000 + s;
    h.run_step(
        {alloc(1, 300 * kKiB), alloc(2, 100 * kKiB), free_(1), alloc(out, 300 * kKiB), free_(2)},
        "model");
    if (previous >= 0) h.release(previous);
    previous = out;
    if (s == 6) h.compiler().trim();
  }
  h.expect_all_intact();
  const Stats st = h.compiler().stats();
  ASSERT_EQ(st.period_two_outputs, 1u);
  EXPECT_GT(st.pool_lent_bytes, 0u);
  EXPECT_LE(st.mapped_bytes + st.pool_mapped_bytes, kChunk)
      << "arena " << st.mapped_bytes << " B, pool " << st.pool_mapped_bytes << " B";
}

// settle() whose mapping failed (the device refusing memory past any budget) left the old
// window's chunks mapped beside plans that had moved home, and a loan whose chunk the arena did
// not map: chunks no plan and no buffer used, until a trim. Now it leaves nothing mapped.
TEST(PoolChunkLoanFound, ASettleThatCannotMapHomeLeavesNothingMappedAndNoLoan) {
  ModeledHarness h;
  h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
  // Buffer 50 outlives the first step (a rogue at the window's start): the window moves clear.
  h.run_step({alloc(50, kChunk / 4), alloc(2, kChunk / 4), free_(2)}, "first");
  const Program work = {alloc(1, kChunk), alloc(2, kChunk / 2), free_(1), free_(2)};
  h.run_step(work, "work");
  h.release(50);
  h.run_step(work, "work");
  const Stats away = h.compiler().stats();
  ASSERT_GT(away.mapped_bytes, 0u);
  h.backend().fail_now_and_then(/*create_one_in=*/1, /*map_one_in=*/1, /*seed=*/1);
  EXPECT_THROW((void)h.compiler().settle(), OutOfMemory);
  const Stats failed = h.compiler().stats();
  EXPECT_EQ(failed.mapped_bytes, 0u);
  EXPECT_EQ(failed.pool_lent_bytes, 0u);
  EXPECT_EQ(h.backend().take_errors(), std::vector<std::string>{});
  h.backend().fail_now_and_then(0, 0, 0);
  h.run_step(work, "work");  // maps its plan where the window is
  h.run_step(work, "work");
  h.expect_all_intact();
  EXPECT_EQ(h.compiler().stats().steps_replayed, away.steps_replayed + 2);
  EXPECT_EQ(h.compiler().stats().live_rogues, 0u);
}

// A pause buffer that every step allocates and frees (a host staging buffer, say) is not a
// learned site, whose room the loan holds. On the first state the loan took the pool's free tail
// where that buffer fit, and the first replayed step after it grew the pool: three backend calls
// in a replayed step where the control makes none, for nothing saved (4 MiB mapped both ways).
TEST(PoolChunkLoanFound, ThePauseBufferOfEveryStepKeepsItsRoomAcrossTheLoan) {
  for (const bool share : {true, false}) {
    SCOPED_TRACE(share ? "shared" : "control");
    CompilerOptions options = Harness::small_options();
    options.share_pool_chunk = share;
    Harness h(options);
    h.allocate(100, 300 * kKiB, {}, /*paused=*/true);
    const Program step = {alloc(1, 512 * kKiB), paused_alloc(2, 1300 * kKiB), free_(2), free_(1)};
    h.run_step(step);  // recorded: the window goes home
    const std::uint64_t calls = h.compiler().stats().backend_calls.memory_calls();
    EXPECT_TRUE(h.compiler().step_so_far() == std::nullopt);
    for (int s = 0; s < 3; ++s) h.run_step(step);
    EXPECT_EQ(h.compiler().stats().backend_calls.memory_calls(), calls)
        << "replayed steps made backend calls; " << h.compiler().stats().pool_lent_bytes
        << " B lent";
    EXPECT_EQ(h.compiler().stats().steps_replayed, 3u);
  }
}

// Shrunk from a run of the random test (500 steps; DISABLED_ShrinkAFailingRun): sharing maps
// 16 MiB at its peak where the control maps 12. The loan that moved with the window clear of two
// rogues ends at trim_to({}) (its slot unmapped) and leaves the window inside a chunk of the
// arena's own; three rogues recorded from there straddle one chunk more than the control's, so the
// next move clear of them, with a loan again, saves the arena nothing (8 MiB both ways); and the
// lent block splits the pool's free bytes, so a 2.1 MiB pause buffer that the control's pool holds
// in the free bytes it has grows the shared pool by two chunks.
// DISABLED: a known cost of the loan, why share_pool_chunk is off by default (2026-12-03): the
// loan takes room the pool needs later (a 395 KiB pause buffer past the pool's 128 KiB margin),
// the pool grows a chunk, and this run peaks at 16 MiB against the control's 12.
TEST(PoolChunkLoanFound, DISABLED_SharingNeverMapsMoreThanAChunkOverTheControl) {
  std::size_t peak[2] = {0, 0};
  for (const bool share : {true, false}) {
    CompilerOptions options = Harness::small_options();
    options.share_pool_chunk = share;
    Harness h(options);
    std::size_t& p = peak[share ? 0 : 1];
    const auto sample = [&] {
      const Stats st = h.compiler().stats();
      p = std::max<std::size_t>(p, st.mapped_bytes + st.pool_mapped_bytes);
    };
    h.run_step({alloc(1, 199704), alloc(2, 774390)}, "f");  // two rogues at arena offset 0
    sample();
    // Recorded beside them; the window moves clear of them, with a loan (its site's room).
    h.run_step(
        {alloc(3, 812005), alloc(4, 507250), alloc(5, 1241228), free_(5), free_(3), free_(4)}, "g");
    sample();
    h.allocate(6, 403992, {}, /*paused=*/true);
    sample();
    h.compiler().trim_to({});  // only the rogues' chunk stays mapped: the loan ends
    sample();
    h.run_step({alloc(7, 115894), alloc(8, 199704), alloc(9, 774390)}, "f");  // a break: rogues
    sample();
    h.allocate(10, 136482, {}, /*paused=*/true);
    sample();
    h.allocate(11, 2163737, {}, /*paused=*/true);
    sample();
    h.expect_all_intact();
  }
  EXPECT_LE(peak[0], peak[1] + kChunk)
      << "shared " << peak[0] / kKiB << " KiB, control " << peak[1] / kKiB << " KiB";
}

// Shrunk from UnderAMemoryBudgetNoBufferIsOverwritten (a run under a 14 MiB budget), with or
// without sharing: rogues fill the budget, so the window cannot move clear of them and stays with
// rogues inside it (replay checks their ranges). A step replays a prefix of its branch, leaves a
// buffer of that prefix live and then breaks; end_step plans the new branch with that buffer twice,
// once as a node of the fixed prefix and once as a rogue fixed from its allocation on
// (fixed_ranges_for_branch), and the planner finds no plan: end_step throws, the guard aborts.
TEST(PoolChunkLoanFound, ABufferOfTheReplayedPrefixLeftLiveIsFixedOnceWhenTheWindowIsStuck) {
  for (const bool share : {true, false}) {
    SCOPED_TRACE(share ? "shared" : "control");
    CompilerOptions options = Harness::small_options();
    options.share_pool_chunk = share;
    options.memory_budget_bytes = 14 * kMiB;
    Harness h(options);
    h.run_step({alloc(1, 1072584), alloc(2, 2230998)}, "a");  // rogues
    h.run_step({alloc(3, 821363), alloc(4, 608686), free_(4), alloc(5, 4313217)}, "b");
    h.run_step({alloc(6, 14766), alloc(7, 12708), alloc(8, 2197), free_(8)}, "c");
    // Replays "c" up to its third buffer, which it leaves live, then breaks.
    auto step = h.compiler().step("c");
    h.allocate(9, 14766);
    h.allocate(10, 12708);
    h.allocate(11, 2197);
    h.allocate(12, 4108);
    EXPECT_NO_THROW(step.end());
    h.expect_all_intact();
  }
}

// Shrunk from UnderAMemoryBudgetNoBufferIsOverwritten (seed 3, 5 steps; the budget plays no
// part). A rogue of the first step sends the window, with the loan, to slot 1; the first output
// of `out = f(x)` is recorded there and outlives its step, in the loan's slot, so the window moves
// to slot 0 without the loan, which stays behind in slot 1. The output is freed in the next step
// (a learned site served by the pool now). At the third step the habit shows and the output is
// planned with period two (plan_period_two_output, at begin_step): the plans grow past slot 0, and
// with no rogue live nothing moves the window; begin_step maps the larger plan from slot 0 on, the
// arena maps the pool's chunk at slot 1 (Arena::borrow), and the first temporary of the step is
// served on the weights there.
TEST(PoolChunkLoanFound, PlansGrownByPeriodTwoNeverReachALoanLeftBehind) {
  Harness h;
  {
    auto step = h.compiler().step("a");
    h.allocate(1, 39824);  // a rogue
    h.allocate(2, 28507);
    h.release(2);
    h.allocate(3, 1578648, {}, /*paused=*/true);  // weights, in the pool's chunk from offset 0
  }
  const auto f = [&](int first, int previous, bool free_rogue) {
    auto step = h.compiler().step("f");
    if (free_rogue) h.release(1);
    h.allocate(first, 1024968);
    h.allocate(first + 1, 370944);
    h.release(first);
    h.allocate(first + 2, 946965);  // the output, kept until the next one exists
    if (previous >= 0) h.release(previous);
    h.release(first + 1);
  };
  f(10, -1, true);
  f(20, 12, false);
  ASSERT_GT(h.compiler().stats().pool_lent_bytes, 0u);
  f(30, 22, false);  // planned with period two: the plans pass 2 MiB
  h.expect_all_intact();
  EXPECT_EQ(h.mismatches(), 0u);
}

// The same with no weights at all (the random run, run seed 1068): what the pool holds in the
// loan's chunk is the loop's own previous output (a learned site then), and the third call's
// temporaries are served on it before the caller has read it.
TEST(PoolChunkLoanFound, PlansGrownByPeriodTwoNeverReachThePreviousOutputInALoanLeftBehind) {
  Harness h;
  h.run_step({alloc(1, 2008292), alloc(2, 755400), free_(2), alloc(3, 288327)}, "a");
  h.release(3);  // 1 stays: a rogue until the loop's first step frees it
  const auto f = [&](int first, int previous) {
    auto step = h.compiler().step("f");
    if (h.is_live(1)) h.release(1);
    h.allocate(first, 571497);
    h.allocate(first + 1, 293323);
    h.release(first);
    h.allocate(first + 2, 2148838);  // the output
    h.release(first + 1);
    if (previous >= 0) h.release(previous);
  };
  f(10, -1);
  f(20, -1);
  h.release(12);  // the first output, freed once the second exists
  f(30, 22);      // planned with period two
  h.expect_all_intact();
  EXPECT_EQ(h.mismatches(), 0u);
}

}  // namespace
}  // namespace memplan::testing

// ----------------------------------------------------------------------------------------------
// Shrinking a failing run: a run records its calls (Event), the calls are replayed without the
// random choices, and whole steps, then single calls, are dropped for as long as the replay still
// fails. A tool, not a test: run it with --gtest_also_run_disabled_tests and
//   MEMPLAN_LOAN_SHRINK=<run seed, as the failure names it> [MEMPLAN_LOAN_STEPS=<steps>]
//   [MEMPLAN_LOAN_SHRINK_PEAK=1: shrink a peak over the control instead of an aliased buffer]
//   [MEMPLAN_LOAN_SHRINK_THROW=1: shrink a call that throws (not OutOfMemory) instead]
//   [MEMPLAN_LOAN_BUDGET_MIB=<n>: under a memory budget, as UnderAMemoryBudget... runs]
namespace memplan::testing {
namespace {

struct Replayed {
  std::size_t peak = 0;  // of mapped + pool mapped bytes, after each top-level call
  bool aliased = false;  // a new buffer shared a physical byte with a live one
  bool threw = false;
};

Replayed replay(const std::vector<Event>& ev, bool share, bool poison, std::size_t budget = 0) {
  ModeledHarness h(LoanRun::options(share, poison, budget));
  std::map<int, std::pair<void*, std::size_t>> live;
  std::map<std::string, BranchRef> last;
  Replayed out;
  const auto sample = [&] {
    const Stats st = h.compiler().stats();
    out.peak = std::max<std::size_t>(out.peak, st.mapped_bytes + st.pool_mapped_bytes);
  };
  const auto allocate = [&](const Event& e) {
    if (live.contains(e.id)) return;
    void* p = nullptr;
    if (e.paused) {
      auto pause = h.compiler().pause();
      p = h.compiler().allocate(e.size, {}, {}, e.alignment);
    } else {
      p = h.compiler().allocate(e.size, {}, {}, e.alignment);
    }
    if (p == nullptr) return;
    std::vector<PhysicalModel::Piece> mine;
    std::vector<PhysicalModel::Piece> theirs;
    h.backend().pieces(p, e.size, mine);
    for (const auto& [id, b] : live) {
      theirs.clear();
      h.backend().pieces(b.first, b.second, theirs);
      for (const auto& a : mine) {
        for (const auto& t : theirs) {
          out.aliased = out.aliased || (a.chunk == t.chunk && a.begin < t.end && t.begin < a.end);
        }
      }
    }
    live[e.id] = {p, e.size};
  };
  const auto release = [&](const Event& e) {
    const auto it = live.find(e.id);
    if (it == live.end()) return;
    h.compiler().deallocate(it->second.first);
    live.erase(it);
  };
  try {
    for (std::size_t i = 0; i < ev.size() && !out.aliased; ++i) {
      const Event& e = ev[i];
      switch (e.kind) {
        case Event::Begin: {
          std::optional<StepResult> r;
          try {
            auto guard = h.compiler().step(e.names);
            for (++i; i < ev.size() && ev[i].kind != Event::End && ev[i].kind != Event::Aborted;
                 ++i) {
              if (ev[i].kind == Event::Alloc) allocate(ev[i]);
              if (ev[i].kind == Event::Free) release(ev[i]);
            }
            if (i < ev.size() && ev[i].kind == Event::Aborted) throw Abort{};
            r = guard.end();
          } catch (const Abort&) {
          } catch (const OutOfMemory&) {  // under a budget: the step aborted
            while (i < ev.size() && ev[i].kind != Event::End && ev[i].kind != Event::Aborted) ++i;
          } catch (const std::exception&) {  // end() threw: the step stays open
            h.compiler().abort_step();
            out.threw = true;
          }
          if (r) last[e.names] = BranchRef{e.names, r->branch.value_or(0), r->parity};
          break;
        }
        case Event::Alloc:
          try {
            allocate(e);
          } catch (const OutOfMemory&) {
          }
          break;
        case Event::Free:
          release(e);
          break;
        case Event::Trim:
          h.compiler().trim();
          break;
        case Event::Release:
          if (h.compiler().stats().live_rogues == 0) h.compiler().release();
          break;
        case Event::Settle:
          h.compiler().settle();
          break;
        case Event::TrimTo: {
          std::vector<BranchRef> held;
          for (std::size_t at = 0; at < e.names.size();) {
            const std::size_t comma = e.names.find(',', at);
            const auto it = last.find(e.names.substr(at, comma - at));
            if (it != last.end()) held.push_back(it->second);
            at = comma + 1;
          }
          try {
            h.compiler().trim_to(held);
          } catch (const OutOfMemory&) {
          }
          break;
        }
        default:
          break;
      }
      sample();
    }
  } catch (const std::exception&) {
    out.threw = true;
  }
  return out;
}

// Steps, from Begin to their End or Aborted, and single calls: [first, last) of each.
std::vector<std::pair<std::size_t, std::size_t>> groups_of(const std::vector<Event>& ev) {
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  for (std::size_t i = 0; i < ev.size();) {
    std::size_t j = i + 1;
    if (ev[i].kind == Event::Begin) {
      while (j < ev.size() && ev[j - 1].kind != Event::End && ev[j - 1].kind != Event::Aborted) ++j;
    }
    groups.emplace_back(i, j);
    i = j;
  }
  return groups;
}

std::vector<Event> without_groups(const std::vector<Event>& ev, std::size_t from, std::size_t to) {
  const auto groups = groups_of(ev);
  std::vector<Event> out;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    if (k >= from && k < to) continue;
    out.insert(out.end(), ev.begin() + static_cast<std::ptrdiff_t>(groups[k].first),
               ev.begin() + static_cast<std::ptrdiff_t>(groups[k].second));
  }
  return out;
}

TEST(PoolChunkLoanRandom, DISABLED_ShrinkAFailingRun) {
  const char* seed = std::getenv("MEMPLAN_LOAN_SHRINK");
  if (seed == nullptr) GTEST_SKIP() << "set MEMPLAN_LOAN_SHRINK=<run seed>";
  const auto run_seed = static_cast<unsigned>(std::atoi(seed));
  const bool poison = static_cast<int>(run_seed / 1000) == kRunsPerSeed - 1;
  const bool peak = std::getenv("MEMPLAN_LOAN_SHRINK_PEAK") != nullptr;
  const bool threw = std::getenv("MEMPLAN_LOAN_SHRINK_THROW") != nullptr;
  const char* budget_mib = std::getenv("MEMPLAN_LOAN_BUDGET_MIB");
  const std::size_t budget = budget_mib != nullptr ? std::atoi(budget_mib) * kMiB : 0;
  const auto fails = [&](const std::vector<Event>& ev) {
    const Replayed shared = replay(ev, true, poison, budget);
    if (threw) return shared.threw;
    if (shared.threw) return false;
    if (!peak) return shared.aliased;
    const Replayed control = replay(ev, false, poison);
    return !control.threw && shared.peak > control.peak + kChunk;
  };
  std::vector<Event> ev;
  {
    LoanRun run(run_seed, true, poison, budget);
    run.record_into(&ev);
    run.run(steps_per_run());
  }
  ASSERT_TRUE(fails(ev)) << "the replay of the " << ev.size() << " calls does not fail";
  for (std::size_t n = groups_of(ev).size() / 2; n >= 1; n /= 2) {
    for (bool dropped = true; dropped;) {
      dropped = false;
      const std::size_t groups = groups_of(ev).size();
      for (std::size_t from = 0; from < groups && !dropped; from += n) {
        std::vector<Event> smaller = without_groups(ev, from, std::min(groups, from + n));
        if (fails(smaller)) {
          ev = std::move(smaller);
          dropped = true;
        }
      }
    }
  }
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (std::size_t i = 0; i < ev.size() && !dropped; ++i) {
      if (ev[i].kind != Event::Alloc && ev[i].kind != Event::Free) continue;
      std::vector<Event> smaller = ev;
      smaller.erase(smaller.begin() + static_cast<std::ptrdiff_t>(i));
      if (fails(smaller)) {
        ev = std::move(smaller);
        dropped = true;
      }
    }
  }
  std::printf("%zu calls (peak shared %zu KiB, control %zu KiB):\n", ev.size(),
              replay(ev, true, poison).peak / kKiB, replay(ev, false, poison).peak / kKiB);
  for (const Event& e : ev) {
    switch (e.kind) {
      case Event::Alloc:
        std::printf("  allocate %d: %zu B%s%s\n", e.id, e.size,
                    e.alignment != 0 ? (", aligned to " + std::to_string(e.alignment)).c_str() : "",
                    e.paused ? ", paused" : "");
        break;
      case Event::Free:
        std::printf("  free %d\n", e.id);
        break;
      case Event::Begin:
        std::printf("step '%s'\n", e.names.c_str());
        break;
      case Event::End:
        std::printf("end\n");
        break;
      case Event::Aborted:
        std::printf("abort\n");
        break;
      case Event::Trim:
        std::printf("trim()\n");
        break;
      case Event::Release:
        std::printf("release()\n");
        break;
      case Event::Settle:
        std::printf("settle()\n");
        break;
      case Event::TrimTo:
        std::printf("trim_to(%s)\n", e.names.c_str());
        break;
    }
  }
}

}  // namespace
}  // namespace memplan::testing
