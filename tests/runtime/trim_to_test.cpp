// Compiler::trim_to: between steps, only the chunks the held branches' plans use (in the plan of
// their parity) and those of live buffers stay mapped. Bytes written where a held branch's
// buffers lie survive it (a graph's state), a step of a held branch makes no backend call, a step
// of another branch maps what it uses back and gets its plan's addresses, and no pointer handed
// out ever lies in unmapped memory (the host backend maps PROT_NONE there: the harness's fill
// would fault, and describe_address says so first).
#include <numeric>
#include <random>
#include <set>

#include "step_program.hpp"

namespace memplan::testing {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kChunk = 2 * kMiB;  // Harness::small_options().chunk_bytes

std::uint64_t memory_calls(Harness& h) { return h.compiler().stats().backend_calls.memory_calls(); }
std::uint64_t mapped(Harness& h) { return h.compiler().stats().mapped_bytes; }

// Runs `program` as one step and says what it did; `pointers` gets each allocation's pointer.
StepResult run(Harness& h, const Program& program, const std::string& name,
               std::vector<void*>* pointers = nullptr) {
  auto step = h.compiler().step(name);
  for (const Op& op : program) {
    if (op.kind == Op::Alloc) {
      void* p = h.allocate(op.id, op.size);
      if (pointers != nullptr) pointers->push_back(p);
    } else {
      h.release(op.id);
    }
  }
  return *step.end();
}

// Every chunk of [p, p + size) is mapped; false (and a failure) when one is not.
bool expect_mapped(Harness& h, const void* p, std::size_t size) {
  const auto* bytes = static_cast<const std::byte*>(p);
  bool all = true;
  for (std::size_t at = 0; at < size; at += kChunk) {
    const bool mapped = h.compiler().describe_address(bytes + at).mapped;
    EXPECT_TRUE(mapped) << p << " + " << at;
    all = all && mapped;
  }
  const bool last = h.compiler().describe_address(bytes + size - 1).mapped;
  EXPECT_TRUE(last) << p << " + " << size - 1;
  return all && last;
}

// A byte at the start of each chunk [p, p + size) touches, and its last byte.
template <class F>
void for_each_probe(void* p, std::size_t size, F&& f) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t at = 0; at < size; at += kChunk) f(bytes[at]);
  f(bytes[size - 1]);
}
unsigned char pattern(int id) { return static_cast<unsigned char>(id * 7 + 1); }

// The offset of `p` in the planned arena.
std::size_t offset_of(Harness& h, const void* p) {
  return static_cast<std::size_t>(static_cast<const std::byte*>(p) -
                                  static_cast<const std::byte*>(h.compiler().arena_base()));
}

// The bytes of the chunks touching [p, p + size).
std::size_t chunks_of(Harness& h, const void* p, std::size_t size) {
  const std::size_t offset = offset_of(h, p);
  return (offset + size + kChunk - 1) / kChunk * kChunk - offset / kChunk * kChunk;
}

// Branch 0: a 6 MiB buffer, then 2 MiB beside it: plan [0, 8) MiB. Branch 1 shares the first
// buffer and then needs 8 MiB beside it: [6, 14) MiB. The tree's extent is 14 MiB, 7 chunks.
const Program kNarrow = {alloc(1, 6 * kMiB), alloc(2, 2 * kMiB), free_(1), free_(2)};
const Program kWide = {alloc(1, 6 * kMiB), alloc(3, 8 * kMiB), free_(3), free_(1)};

TEST(TrimTo, KeepsTheHeldBranchAndAStepOfAnotherMapsBackAtItsPlannedAddresses) {
  Harness h;
  EXPECT_EQ(run(h, kNarrow, "s").branch, 0u);
  EXPECT_EQ(run(h, kWide, "s").branch, 1u);
  std::vector<void*> narrow;
  std::vector<void*> wide;
  ASSERT_TRUE(run(h, kNarrow, "s", &narrow).replayed());
  ASSERT_TRUE(run(h, kWide, "s", &wide).replayed());
  h.compiler().trim();
  ASSERT_EQ(mapped(h), 14 * kMiB);

  // A graph of branch 0 keeps its state in its buffers' bytes between launches.
  std::memset(narrow[0], 0x5a, 6 * kMiB);
  std::memset(narrow[1], 0xa5, 2 * kMiB);
  const BranchRef held{"s", 0, 0};
  h.compiler().trim_to({&held, 1});
  EXPECT_EQ(mapped(h), 8 * kMiB) << "the 3 chunks only branch 1 uses go";
  EXPECT_EQ(HostMemory::first_difference(narrow[0], 6 * kMiB, 0x5a), 6 * kMiB);
  EXPECT_EQ(HostMemory::first_difference(narrow[1], 2 * kMiB, 0xa5), 2 * kMiB);

  // Steps of the held branch: its plan is mapped, no backend call.
  const std::uint64_t calls = memory_calls(h);
  for (int i = 0; i < 2; ++i) {
    std::vector<void*> again;
    EXPECT_TRUE(run(h, kNarrow, "s", &again).replayed());
    EXPECT_EQ(again, narrow);
  }
  EXPECT_EQ(memory_calls(h), calls);
  EXPECT_EQ(mapped(h), 8 * kMiB);

  // A step of branch 1 maps its 8 MiB buffer's chunks back as it is served: same addresses.
  std::vector<void*> wide_again;
  EXPECT_TRUE(run(h, kWide, "s", &wide_again).replayed());
  EXPECT_EQ(wide_again, wide);
  EXPECT_GT(memory_calls(h), calls);
  EXPECT_EQ(mapped(h), 14 * kMiB);
  // Mapped throughout again: the next steps are the plain replays, no call.
  const std::uint64_t after = memory_calls(h);
  EXPECT_TRUE(run(h, kNarrow, "s").replayed());
  EXPECT_TRUE(run(h, kWide, "s").replayed());
  EXPECT_EQ(memory_calls(h), after);
  EXPECT_EQ(h.overlaps(), 0u);
  EXPECT_EQ(h.mismatches(), 0u);
}

// One step of a period-two output (period_two_test.cpp): temporaries of 3 and 1 MiB, then a 4 MiB
// output kept until the next step's output exists, freed after it ends.
StepResult output_step(Harness& h, int out_id) {
  return run(h,
             {alloc(1, 3 * kMiB), alloc(2, 1 * kMiB), free_(1), alloc(out_id, 4 * kMiB), free_(2)},
             "f");
}

// The plan of each parity holds the previous output's 4 MiB for the whole step and places the
// rest around it: 9 MiB (5 chunks) of which the step's own buffers use 5 MiB. Held at one parity,
// the chunks only the previous output used go once it is freed, as Llama's captured branch planned
// around the output the caller still held.
TEST(TrimTo, UnmapsTheRangeAPlanHeldForAnOutputFreedSince) {
  Harness h;
  std::uint8_t parity = 0;
  for (int s = 0; s < 6; ++s) {
    parity = output_step(h, 100 + s).parity;
    if (s > 0) h.release(100 + s - 1);
  }
  ASSERT_EQ(h.compiler().stats().live_carried_outputs, 1u);
  ASSERT_EQ(h.compiler().stats().period_two_fallbacks, 0u);
  h.release(105);  // the caller drops the last output
  h.compiler().trim();
  ASSERT_EQ(mapped(h), 10 * kMiB);
  const BranchTrace trace = h.compiler().branch_trace("f", 0);
  ASSERT_EQ(trace.arena_bytes, static_cast<Bytes>(9 * kMiB));

  const BranchRef held{"f", 0, parity};
  h.compiler().trim_to({&held, 1});
  // The even and odd plans each keep the 3 + 1 MiB temporaries and the output in 5 MiB next to
  // the previous output's 4 MiB: 2 chunks hold nothing of this parity's buffers.
  EXPECT_EQ(mapped(h), 6 * kMiB);

  // The next step runs parity 0 (nothing is carried): with no backend call if that is the plan
  // held, else mapping back what it uses as it is served.
  const std::uint64_t calls = memory_calls(h);
  const StepResult r = output_step(h, 200);
  EXPECT_TRUE(r.replayed());
  EXPECT_EQ(r.parity, 0u);
  if (parity == 0) {
    EXPECT_EQ(memory_calls(h), calls);
  } else {
    EXPECT_GT(memory_calls(h), calls);
  }
  h.expect_all_intact();
  EXPECT_EQ(h.overlaps(), 0u);
}

// What is live stays mapped whatever is held: the output carried into the next step (period two)
// and a rogue, with their bytes.
TEST(TrimTo, KeepsTheLiveCarriedOutputAndTheLiveRogues) {
  Harness h;
  void* out = nullptr;
  for (int s = 0; s < 6; ++s) {
    output_step(h, 100 + s);
    if (s > 0) h.release(100 + s - 1);
  }
  ASSERT_EQ(h.compiler().stats().live_carried_outputs, 1u);
  {
    std::vector<void*> pointers;
    run(h, {alloc(1, 3 * kMiB), alloc(2, 1 * kMiB), free_(1), alloc(106, 4 * kMiB), free_(2)}, "f",
        &pointers);
    out = pointers[2];
    h.release(105);
  }
  ASSERT_EQ(h.compiler().stats().live_carried_outputs, 1u);
  h.compiler().trim_to({});
  EXPECT_EQ(mapped(h), chunks_of(h, out, 4 * kMiB)) << "the carried output's chunks alone";
  expect_mapped(h, out, 4 * kMiB);
  h.expect_all_intact();
  // The next step holds it in its plan and maps the rest as it is served.
  const StepResult next = output_step(h, 107);
  EXPECT_TRUE(next.replayed());
  h.release(106);
  h.release(107);

  // A rogue: a buffer of a step of another name still live at its end.
  std::vector<void*> rogue;
  run(h, {alloc(300, 3 * kMiB)}, "g", &rogue);
  ASSERT_EQ(h.compiler().stats().live_rogues, 1u);
  h.compiler().trim_to({});
  EXPECT_EQ(mapped(h), chunks_of(h, rogue[0], 3 * kMiB));
  expect_mapped(h, rogue[0], 3 * kMiB);
  h.expect_all_intact();
  h.release(300);
  EXPECT_EQ(h.overlaps(), 0u);
  EXPECT_EQ(h.mismatches(), 0u);
}

TEST(TrimTo, RefusesUnknownBranchesAndRunningStepsAndUnmapsNothingThen) {
  Harness h;
  run(h, kNarrow, "s");
  h.compiler().trim();
  const std::uint64_t before = mapped(h);
  const auto refused = [&](const BranchRef& ref, const std::string& words) {
    try {
      h.compiler().trim_to({&ref, 1});
      ADD_FAILURE() << "trim_to accepted " << ref.step << " " << ref.branch;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_EQ(mapped(h), before);
  };
  refused({"t", 0, 0}, "no step named 't' has run");
  refused({"s", 1, 0}, "step 's' has 1 branch(es); there is no branch 1");
  refused({"s", 0, 2}, "parity 2 of step 's' branch 0");
  refused({"s", 0, 1}, "step 's' branch 0 has no plan of parity 1");
  // A valid branch after an unknown one: still nothing unmapped.
  const std::vector<BranchRef> mixed{{"s", 0, 0}, {"s", 7, 0}};
  EXPECT_THROW(h.compiler().trim_to(mixed), InvalidArgument);
  EXPECT_EQ(mapped(h), before);

  auto step = h.compiler().step("s");
  const BranchRef held{"s", 0, 0};
  try {
    h.compiler().trim_to({&held, 1});
    ADD_FAILURE() << "trim_to ran inside a step";
  } catch (const InvalidState& e) {
    EXPECT_STREQ(e.what(), "trim_to: step 's' is running");
  }
}

// Random programs of one step name with 2-3 branches (a shared prefix, then each its own
// allocations), run in random order with random trims between them: trim_to a random set of
// branches (parity 0: no output outlives its step here) or trim(). Every pointer handed out lies
// in mapped memory, every branch keeps its addresses, every byte written survives until its free,
// a step of a branch mapped throughout (held by the last trim_to, or run since) makes no backend
// call, and trim_to leaves exactly the chunks of the held branches' buffers mapped.
TEST(TrimTo, RandomTrimsBetweenStepsNeverServeUnmappedMemoryOrMoveAPlan) {
  std::uint64_t holes = 0;  // trims that unmapped part of the plans, over all seeds
  for (unsigned seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    CompilerOptions options = Harness::small_options();
    options.plan_budget = std::chrono::milliseconds(5);  // the plans' quality is not the point
    Harness h(options);
    const auto size = [&] { return (1 + rng() % 20) * 256 * 1024; };  // 256 KiB to 5 MiB
    // A shared prefix (buffers 0..), then per branch its own buffers, all freed in random order.
    Program prefix;
    const int shared = 1 + static_cast<int>(rng() % 3);
    for (int id = 0; id < shared; ++id) prefix.push_back(alloc(id, size()));
    std::vector<Program> programs;
    const std::size_t branches = 2 + rng() % 2;
    for (std::size_t b = 0; b < branches; ++b) {
      Program p = prefix;
      std::vector<int> live;
      for (int id = 0; id < shared; ++id) live.push_back(id);
      const int own = 2 + static_cast<int>(rng() % 4);
      for (int k = 0; k < own; ++k) {
        const int id = 10 * static_cast<int>(b + 1) + k;
        // The first of its own allocations tells the branches apart: a size no other has.
        p.push_back(alloc(id, k == 0 ? (b + 1) * 5 * kMiB + 4096 : size()));
        live.push_back(id);
        if (rng() % 2 == 0) {
          const std::size_t at = rng() % live.size();
          p.push_back(free_(live[at]));
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
        }
      }
      std::shuffle(live.begin(), live.end(), rng);
      for (const int id : live) p.push_back(free_(id));
      programs.push_back(std::move(p));
    }
    std::vector<std::vector<std::size_t>> sizes(branches);  // of each allocation, in order
    for (std::size_t b = 0; b < branches; ++b) {
      for (const Op& op : programs[b]) {
        if (op.kind == Op::Alloc) sizes[b].push_back(op.size);
      }
    }
    std::vector<std::uint32_t> branch_of(branches);
    std::vector<std::vector<void*>> planned(branches);
    for (std::size_t b = 0; b < branches; ++b) branch_of[b] = *run(h, programs[b], "s").branch;
    for (std::size_t b = 0; b < branches; ++b) {
      ASSERT_TRUE(run(h, programs[b], "s", &planned[b]).replayed());
    }
    // The branches whose every chunk is mapped: all after the first replays; the held ones after
    // trim_to, and each that ran since (trim() unmaps nothing inside the plans).
    std::vector<std::size_t> whole(branches);
    std::iota(whole.begin(), whole.end(), std::size_t{0});
    for (int action = 0; action < 40; ++action) {
      const unsigned what = rng() % 4;
      if (what == 0) {
        h.compiler().trim();
        continue;
      }
      if (what == 1) {
        std::vector<BranchRef> held;
        whole.clear();
        for (std::size_t b = 0; b < branches; ++b) {
          if (rng() % 2 == 0) {
            held.push_back({"s", branch_of[b], 0});
            whole.push_back(b);
          }
        }
        const std::uint64_t before = mapped(h);
        h.compiler().trim_to(held);
        // Exactly the chunks the held branches' buffers touch (nothing else is live).
        std::set<std::size_t> chunks;
        for (const std::size_t b : whole) {
          for (std::size_t i = 0; i < planned[b].size(); ++i) {
            const std::size_t offset = offset_of(h, planned[b][i]);
            for (std::size_t c = offset / kChunk; c <= (offset + sizes[b][i] - 1) / kChunk; ++c) {
              chunks.insert(c);
            }
            expect_mapped(h, planned[b][i], sizes[b][i]);
          }
        }
        EXPECT_EQ(mapped(h), chunks.size() * kChunk);
        holes += mapped(h) < before ? 1 : 0;
        continue;
      }
      const std::size_t b = rng() % branches;
      const bool mapped_before = std::find(whole.begin(), whole.end(), b) != whole.end();
      const std::uint64_t calls = memory_calls(h);
      // The harness's shadow model, by hand and sparse: each pointer is checked before it is
      // written (an unmapped one would fault), then a byte of each of its chunks and its last
      // byte are written, and checked again at its free.
      std::vector<void*> pointers;
      std::map<int, std::pair<void*, std::size_t>> live;
      auto step = h.compiler().step("s");
      for (const Op& op : programs[b]) {
        if (op.kind == Op::Alloc) {
          void* p = h.compiler().allocate(op.size);
          pointers.push_back(p);
          ASSERT_TRUE(expect_mapped(h, p, op.size)) << "branch " << b << ", buffer " << op.id;
          for_each_probe(p, op.size, [&](unsigned char& byte) { byte = pattern(op.id); });
          live[op.id] = {p, op.size};
        } else {
          const auto [p, bytes] = live.at(op.id);
          for_each_probe(p, bytes, [&](unsigned char& byte) { EXPECT_EQ(byte, pattern(op.id)); });
          h.compiler().deallocate(p);
          live.erase(op.id);
        }
      }
      EXPECT_TRUE(step.end()->replayed());
      EXPECT_EQ(pointers, planned[b]) << "branch " << b << " moved";
      if (mapped_before) {
        EXPECT_EQ(memory_calls(h), calls) << "branch " << b << " was mapped, its step mapped more";
      } else {
        whole.push_back(b);
      }
    }
  }
  EXPECT_GT(holes, 8u);
}

}  // namespace
}  // namespace memplan::testing
