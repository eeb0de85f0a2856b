// Perturbed step programs: issue 10's seeded randomized differential test of the compiler.
// A few random base programs, each with a fixed menu of perturbations (skip an allocation, change a
// size, swap two frees, leak a buffer past `end`, move an allocation into or out of a pause). Each
// step runs one base with 0..k entries of its menu, so that paths repeat often and "seen" means
// something. Leaked buffers are freed later, between steps or inside a later step, at random.
// The Harness's shadow model checks every live buffer's bytes and that no two live buffers
// overlap. The runner keys each step by its path (allocations: size, alignment, tag, paused; frees
// of this step's own buffers by allocation index, in order; frees of older buffers are not events
// of the step tree) and counts breaks and backend memory calls in steps whose path was seen before.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "step_script.hpp"

namespace memplan::testing {

struct PerturbConfig {
  unsigned seed = 1;
  int bases = 3;    // distinct base programs
  int events = 10;  // allocations per base program
  int menu = 6;     // perturbations on each base's menu (the first five: one of each kind)
  int max_perturbations = 2;  // per step, 0..max drawn uniformly
  std::string step_name = "denoise";
  bool record_script = false;  // keep the run as a step script up to its first seen-path failure
};

struct Perturbation {
  enum Kind : std::uint8_t { Skip, Resize, SwapFrees, Leak, TogglePause };
  static constexpr int kKinds = 5;
  Kind kind;
  int id;                // the buffer (program-local id)
  int other = 0;         // SwapFrees: the second buffer
  std::size_t size = 0;  // Resize: its new size
};

inline constexpr std::size_t kPerturbedSizes[] = {256, 1000, 4096, 6000, 16384, 65536};

// A random base program: `events` allocations (some tagged, some aligned, some paused), each freed
// at a random later point, all freed by its end.
inline Program random_base_program(std::mt19937& rng, int events) {
  static const std::string kTags[] = {"", "", "x", "kv"};
  static constexpr std::size_t kAlignments[] = {0, 0, 0, 0, 0, 0, 1024, 4096};
  Program program;
  std::vector<int> live;
  const auto free_one = [&] {
    const std::size_t k = rng() % live.size();
    program.push_back(free_(live[k]));
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
  };
  for (int id = 0; id < events; ++id) {
    Op op = alloc(id, kPerturbedSizes[rng() % std::size(kPerturbedSizes)], kTags[rng() % 4]);
    op.paused = rng() % 8 == 0;
    op.alignment = kAlignments[rng() % std::size(kAlignments)];
    program.push_back(op);
    live.push_back(id);
    while (!live.empty() && rng() % 3 == 0) free_one();
  }
  while (!live.empty()) free_one();
  return program;
}

// Pairs of buffers whose frees can trade places: each is still allocated at the other's free.
inline std::vector<std::pair<int, int>> swappable_frees(const Program& program) {
  std::vector<std::pair<int, int>> pairs;
  std::vector<std::pair<int, std::size_t>> freed;  // buffer, position of its free
  std::vector<std::size_t> allocated_at;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const Op& op = program[i];
    if (op.kind == Op::Alloc) {
      if (allocated_at.size() <= static_cast<std::size_t>(op.id)) allocated_at.resize(op.id + 1);
      allocated_at[op.id] = i;
      continue;
    }
    for (const auto& [earlier, at] : freed) {
      if (allocated_at[op.id] < at) pairs.emplace_back(earlier, op.id);
    }
    freed.emplace_back(op.id, i);
  }
  return pairs;
}

// A base's menu: one perturbation of each kind, then kinds at random. A swap takes two frees that
// can trade places, so that it changes the path.
inline std::vector<Perturbation> random_menu(std::mt19937& rng, const Program& base, int entries) {
  const auto events = static_cast<int>(
      std::count_if(base.begin(), base.end(), [](const Op& op) { return op.kind == Op::Alloc; }));
  std::vector<Perturbation> menu;
  for (int e = 0; e < entries; ++e) {
    const auto kind = static_cast<Perturbation::Kind>(
        e < Perturbation::kKinds ? e : static_cast<int>(rng() % Perturbation::kKinds));
    Perturbation p{kind, static_cast<int>(rng() % events)};
    p.other = static_cast<int>(rng() % events);
    if (p.other == p.id) p.other = (p.id + 1) % events;
    if (kind == Perturbation::SwapFrees) {
      const auto pairs = swappable_frees(base);
      if (!pairs.empty()) std::tie(p.id, p.other) = pairs[rng() % pairs.size()];
    }
    const std::size_t old = std::find_if(base.begin(), base.end(), [&](const Op& op) {
                              return op.kind == Op::Alloc && op.id == p.id;
                            })->size;
    do {
      p.size = kPerturbedSizes[rng() % std::size(kPerturbedSizes)];
    } while (p.size == old);
    menu.push_back(p);
  }
  return menu;
}

// `program` with `p` applied; a perturbation whose buffer is gone (skipped) or that would free a
// buffer before its allocation changes nothing.
inline void apply(Program& program, const Perturbation& p) {
  const auto find = [&](Op::Kind kind, int id) {
    return std::find_if(program.begin(), program.end(),
                        [&](const Op& op) { return op.kind == kind && op.id == id; });
  };
  const auto a = find(Op::Alloc, p.id);
  const auto f = find(Op::Free, p.id);
  if (a == program.end()) return;
  switch (p.kind) {
    case Perturbation::Skip:
      if (f != program.end()) program.erase(f);
      program.erase(find(Op::Alloc, p.id));
      break;
    case Perturbation::Resize:
      a->size = p.size;
      break;
    case Perturbation::TogglePause:
      a->paused = !a->paused;
      break;
    case Perturbation::Leak:
      if (f != program.end()) program.erase(f);
      break;
    case Perturbation::SwapFrees: {
      const auto other_alloc = find(Op::Alloc, p.other);
      const auto other_free = find(Op::Free, p.other);
      if (f == program.end() || other_alloc == program.end() || other_free == program.end()) break;
      if (other_alloc < f && a < other_free) std::iter_swap(f, other_free);
      break;
    }
  }
}

inline std::string path_key(const Program& program) {
  PathKey key;
  for (const Op& op : program) {
    if (op.kind == Op::Alloc) {
      key.allocate(op.id, op.size, op.alignment, op.tag, op.paused);
    } else {
      key.free(op.id);
    }
  }
  return key.str();
}

struct PerturbedCounts {
  std::uint64_t steps = 0;
  std::uint64_t overlaps = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t breaks = 0;
  std::uint64_t seen_path_steps = 0;
  std::uint64_t breaks_on_seen_paths = 0;  // breaks in steps of a seen path
  std::array<std::uint64_t, kBreakReasons> seen_path_breaks_by_reason{};
  std::uint64_t seen_path_steps_that_broke = 0;
  std::uint64_t seen_path_memory_calls = 0;  // backend memory calls in those that leak nothing
  std::uint64_t leaking_seen_path_memory_calls = 0;  // ... and in those that leak (their cost)
  std::uint64_t distinct_keys = 0;
  std::uint64_t rogues = 0;
  std::uint64_t dynamic_steps = 0;  // served past the branch cap
  std::uint64_t leaked = 0;         // buffers live past their step's end
  std::uint64_t freed_between_steps = 0;
  std::uint64_t freed_in_later_steps = 0;

  std::string summary() const {
    std::ostringstream s;
    s << steps << " steps: " << overlaps << " overlaps, " << mismatches << " content mismatches, "
      << breaks_on_seen_paths << " breaks on seen paths (in " << seen_path_steps_that_broke
      << " of " << seen_path_steps << " seen-path steps";
    for (std::size_t r = 0; r < kBreakReasons; ++r) {
      if (seen_path_breaks_by_reason[r] == 0) continue;
      s << "; " << seen_path_breaks_by_reason[r] << ' ' << to_string(static_cast<BreakReason>(r));
    }
    s << "), " << seen_path_memory_calls << " memory calls in seen-path steps that leak nothing ("
      << leaking_seen_path_memory_calls << " in those that leak), " << breaks << " breaks in all, "
      << distinct_keys << " distinct paths, " << rogues << " rogues, " << dynamic_steps
      << " steps past the branch cap, " << leaked << " buffers leaked past end (freed "
      << freed_between_steps << " between steps, " << freed_in_later_steps
      << " inside later steps)";
    return s.str();
  }
};

// Runs perturbed steps on a harness. A path counts as seen once a step that followed it ended
// without being served past the branch cap: a path first met past the cap was never recorded,
// so it cannot replay.
class PerturbedRunner {
 public:
  PerturbedRunner(Harness& h, PerturbConfig config) : h_(h), config_(std::move(config)) {
    rng_.seed(config_.seed);
    for (int b = 0; b < config_.bases; ++b) {
      bases_.push_back(random_base_program(rng_, config_.events));
      menus_.push_back(random_menu(rng_, bases_.back(), config_.menu));
    }
  }

  void run(std::uint64_t steps) {
    for (std::uint64_t s = 0; s < steps; ++s) step();
  }

  // One step, and the free of some older buffers before it (outside any step). Every 64 steps,
  // the bytes of every live buffer are checked too.
  void step() {
    for (std::size_t k = pending_.size(); k-- > 0;) {
      if (rng_() % 3 == 0) free_pending(k, counts_.freed_between_steps);
    }
    const Program program = next_program();
    const std::string key = path_key(program);
    const bool seen = seen_.contains(key);
    all_keys_.insert(key);

    const Stats before = h_.compiler().stats();
    const std::uint64_t calls_before = h_.backend().calls().memory_calls();
    const int first_id = next_id_;
    next_id_ += config_.events;
    {
      auto step = h_.compiler().step(config_.step_name);
      if (recording()) script_ << "step " << config_.step_name << '\n';
      for (const Op& op : program) {
        if (!pending_.empty() && rng_() % 8 == 0) {
          free_pending(rng_() % pending_.size(), counts_.freed_in_later_steps);
        }
        if (op.kind == Op::Alloc) {
          h_.allocate(first_id + op.id, op.size, op.tag, op.paused, op.alignment);
          if (recording()) {
            script_ << "A " << first_id + op.id << ' ' << op.size << ' '
                    << (op.tag.empty() ? "-" : op.tag) << (op.paused ? " P" : "");
            if (op.alignment != 0) script_ << " @" << op.alignment;
            script_ << '\n';
          }
        } else {
          h_.release(first_id + op.id);
          if (recording()) script_ << "F " << first_id + op.id << '\n';
        }
      }
    }
    if (recording()) script_ << "end\n";
    const Stats after = h_.compiler().stats();
    const std::uint64_t breaks = after.breaks - before.breaks;
    const std::uint64_t calls = h_.backend().calls().memory_calls() - calls_before;
    bool leaks = false;
    for (const Op& op : program) {
      if (op.kind == Op::Alloc && h_.is_live(first_id + op.id)) {
        pending_.push_back(first_id + op.id);
        ++counts_.leaked;
        leaks = true;
      }
    }
    if (seen) {
      ++counts_.seen_path_steps;
      counts_.breaks_on_seen_paths += breaks;
      for (std::size_t r = 0; r < kBreakReasons; ++r) {
        counts_.seen_path_breaks_by_reason[r] +=
            after.breaks_by_reason[r] - before.breaks_by_reason[r];
      }
      counts_.seen_path_steps_that_broke += breaks > 0 ? 1 : 0;
      // A step that leaks pays for its leak at its end (the plans move clear of a new rogue, the
      // pool maps room for a learned site's next buffer); every other step must make no call.
      (leaks ? counts_.leaking_seen_path_memory_calls : counts_.seen_path_memory_calls) += calls;
      if (recording() && (breaks > 0 || (calls > 0 && !leaks))) failed_ = true;
    }
    if (after.steps_dynamic == before.steps_dynamic) seen_.insert(key);
    if (++counts_.steps % 64 == 0) h_.expect_all_intact();
  }

  // Frees every leaked buffer (checked) and checks all that is still live.
  void finish() {
    while (!pending_.empty()) free_pending(pending_.size() - 1, counts_.freed_between_steps);
    h_.expect_all_intact();
  }

  // The run as a step script (step_script.hpp), up to and including its first step that broke or
  // called the backend on a seen path; empty unless PerturbConfig::record_script.
  std::string script() const { return script_.str(); }

  PerturbedCounts counts() const {
    PerturbedCounts c = counts_;
    const Stats stats = h_.compiler().stats();
    c.overlaps = h_.overlaps();
    c.mismatches = h_.mismatches();
    c.breaks = stats.breaks;
    c.rogues = stats.rogues;
    c.dynamic_steps = stats.steps_dynamic;
    c.distinct_keys = all_keys_.size();
    return c;
  }

 private:
  Program next_program() {
    const std::size_t b = rng_() % bases_.size();
    Program program = bases_[b];
    const auto& menu = menus_[b];
    std::vector<std::size_t> chosen(menu.size());
    for (std::size_t i = 0; i < chosen.size(); ++i) chosen[i] = i;
    std::shuffle(chosen.begin(), chosen.end(), rng_);
    const auto n = std::min<std::size_t>(rng_() % (config_.max_perturbations + 1), menu.size());
    chosen.resize(n);
    std::sort(chosen.begin(), chosen.end());  // menu order: one program per subset
    for (const std::size_t i : chosen) apply(program, menu[i]);
    return program;
  }

  bool recording() const { return config_.record_script && !failed_; }

  void free_pending(std::size_t k, std::uint64_t& counter) {
    h_.release(pending_[k]);
    if (recording()) script_ << "F " << pending_[k] << '\n';
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(k));
    ++counter;
  }

  Harness& h_;
  PerturbConfig config_;
  std::mt19937 rng_;
  std::vector<Program> bases_;
  std::vector<std::vector<Perturbation>> menus_;
  std::unordered_set<std::string> seen_;
  std::unordered_set<std::string> all_keys_;
  std::vector<int> pending_;  // leaked buffers, not yet freed
  PerturbedCounts counts_;
  int next_id_ = 0;
  std::ostringstream script_;
  bool failed_ = false;  // a seen-path step broke or called the backend: the script stops there
};

}  // namespace memplan::testing
