// One allocation mode over every pass. The memplan modes drive the step through the capture
// layer's StepRunner (graphs on or off); the baseline calls the allocator directly. The same step
// program (Model::step) runs in all of them.
#include "run_modes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>

#include "memplan/capture/step_runner.hpp"
#include "memplan/runtime/compiler.hpp"
#include "memplan/stream/weight_streamer.hpp"
#include "weight_sources.hpp"

namespace denoise {
namespace {

using Clock = std::chrono::steady_clock;
double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// StepMemory over the capture layer's context: the compiler, launches maybe deferred.
class RunnerMemory final : public StepMemory {
 public:
  explicit RunnerMemory(memplan::capture::StepContext& ctx) : ctx_(ctx) {}
  void* alloc(std::size_t bytes, std::string_view tag) override {
    return ctx_.allocate(bytes, tag);
  }
  void free(void* p) override { ctx_.deallocate(p); }
  void* alloc_kept(std::size_t bytes, std::string_view tag, bool paused) override {
    if (!paused) return ctx_.allocate(bytes, tag);  // live at the step's end: a rogue
    auto pause = ctx_.compiler().pause();
    return ctx_.allocate(bytes, tag);
  }
  void depends_on(const void* p) override { ctx_.depends_on(p); }
  void launch(memplan::capture::Launch f) override { ctx_.launch(std::move(f)); }

 private:
  memplan::capture::StepContext& ctx_;
};

void print_row(const ModeResult& r, const StepRow& row) {
  fmt::print(
      "[{:<15}] pass {} step {:>2} {:<6} {:<7} host {:>8.3f} ms  step {:>8.3f} ms  breaks {:>2}  "
      "rogues {:>2}  mapped {:>9.2f} MiB  pool {:>7.2f} MiB  mem calls {}\n",
      r.name, row.pass, row.step, row.attn == Attn::Sparse ? "sparse" : "dense", row.path,
      row.host_ms, row.step_ms, row.breaks, row.rogues, static_cast<double>(row.mapped) / (1 << 20),
      static_cast<double>(row.pool) / (1 << 20), row.mem_calls);
}

void prepare(Model& model, std::vector<Pass>& passes, std::size_t p, Stream s) {
  model.reset_pass(passes[p], s);
  if (p > 0) model.seed_from(passes[p], passes[p - 1], s);
}

// Times the collectives of `sp` in every mode but graphs (whose captured steps hold no timing),
// for as long as it lives.
class CollectiveTiming {
 public:
  CollectiveTiming(SequenceParallel* sp, Mode mode, Platform& platform) : sp_(sp) {
    if (sp_ == nullptr || mode == Mode::Graphs) return;
    timer_ = platform.make_span_timer();
    sp_->time_collectives(timer_.get());
  }
  CollectiveTiming(const CollectiveTiming&) = delete;
  CollectiveTiming& operator=(const CollectiveTiming&) = delete;
  ~CollectiveTiming() {
    if (timer_) sp_->time_collectives(nullptr);
  }
  [[nodiscard]] SpanTimer* timer() const { return timer_.get(); }

 private:
  SequenceParallel* sp_;
  std::unique_ptr<SpanTimer> timer_;
};

// "memplan eager", or "memplan eager r1" for rank 1 of several.
std::string mode_name(Mode mode, bool gpu, const SequenceParallel* sp) {
  if (sp == nullptr || sp->ranks() == 1) return to_string(mode, gpu);
  return fmt::format("{} r{}", to_string(mode, gpu), sp->rank());
}

// Runs every step of every pass: `issue(pass, step, attn, row)` issues one step and fills the
// row's counters; the time to issue it and until the stream finished it are measured here, and
// the collectives' time when `timer` is set.
template <class Issue>
void run_passes(const Config& c, Platform& platform, Model& model, ModeResult& r, SpanTimer* timer,
                Issue&& issue) {
  auto& passes = model.passes();
  for (std::size_t p = 0; p < passes.size(); ++p) {
    prepare(model, passes, p, platform.stream());
    platform.synchronize();
    const Pass& pass = passes[p];
    for (int i = 0; i < pass.steps; ++i) {
      StepRow row{.pass = pass.index, .step = i, .attn = model.attention_for(pass, i)};
      const auto t0 = Clock::now();
      issue(pass, row);
      const auto t1 = Clock::now();
      platform.synchronize();
      const auto t2 = Clock::now();
      row.host_ms = ms(t1 - t0);
      row.step_ms = ms(t2 - t0);
      if (timer != nullptr) row.collective_ms = timer->take_ms();
      if (const auto used = platform.device_used_bytes()) {
        r.device_peak_bytes = std::max(r.device_peak_bytes, *used);
        r.device_peak_measured = true;
      }
      r.rows.push_back(row);
      if (c.per_step) print_row(r, r.rows.back());
    }
  }
  r.latents = model.read_latents(passes.back());
}

// DIR/<mode>-<step>-branch<N>.html for every recorded branch: what each path's plan holds, and
// what is live at its peak. The mode's name becomes a file name ("memplan+graphs" ->
// "memplan-graphs").
void draw_branches(const memplan::Compiler& compiler, const std::string& dir,
                   const std::string& mode) {
  std::filesystem::create_directories(dir);
  std::string stem = mode;
  std::replace_if(
      stem.begin(), stem.end(), [](char ch) { return !std::isalnum(ch); }, '-');
  for (const auto& [step, branches] : compiler.step_branches()) {
    for (std::size_t b = 0; b < branches; ++b) {
      memplan::write_branch_trace(
          std::filesystem::path(dir) / fmt::format("{}-{}-branch{}.html", stem, step, b),
          compiler.branch_trace(step, b));
    }
  }
}

ModeResult run_memplan(Mode mode, const Config& c, Platform& platform, Model& model,
                       SequenceParallel* sp) {
  ModeResult r;
  r.mode = mode;
  r.name = mode_name(mode, platform.gpu(), sp);
  auto backend = platform.make_backend();
  memplan::CompilerOptions o;
  o.reserve_bytes = platform.gpu() ? std::size_t{64} << 30 : std::size_t{8} << 30;
  o.chunk_bytes = c.chunk_mib << 20;
  o.pool_reserve_bytes = std::size_t{8} << 30;
  o.pool_chunk_bytes = c.chunk_mib << 20;  // small against a tight budget
  if (c.vram_budget != 0) {
    // The compiler maps at most what the budget leaves beside the model's own device memory.
    if (model.fixed_bytes() >= c.vram_budget) {
      throw memplan::OutOfMemory(fmt::format(
          "--vram-budget {}: the model's own device memory (latents, schedules{}) is {} already",
          memplan::human_bytes(static_cast<memplan::Bytes>(c.vram_budget)),
          c.weights == Weights::Resident ? ", every block's weights" : "",
          memplan::human_bytes(static_cast<memplan::Bytes>(model.fixed_bytes()))));
    }
    o.memory_budget_bytes = c.vram_budget - model.fixed_bytes();
  }
  memplan::Compiler compiler(*backend, o);
  // Streamed weights: the plan for the budget, the resident blocks into the pool. Declared after
  // the compiler: the streamer frees its blocks and the engine finishes its copies first.
  std::unique_ptr<memplan::stream::CopyEngine> engine;
  std::unique_ptr<memplan::stream::WeightStreamer> streamer;
  if (c.weights == Weights::Streamed) {
    r.streaming = plan_streaming(c, model, o);
    r.streamed_bytes_per_step = r.streaming->streamed_bytes;
    engine = platform.make_copy_engine();
    streamer = std::make_unique<memplan::stream::WeightStreamer>(compiler, *engine,
                                                                 host_blocks(model), *r.streaming);
    streamer->load_resident(platform.stream());
  } else if (c.weights == Weights::Naive) {
    r.streamed_bytes_per_step = static_cast<std::uint64_t>(model.blocks()) * model.layout().bytes;
  }
  memplan::capture::StepRunner runner(
      compiler, platform.capturer(), platform.stream(),
      {.enabled = mode == Mode::Graphs, .capture_after = c.capture_after});
  std::map<std::int64_t, void*> rope;
  const CollectiveTiming timing(sp, mode, platform);
  run_passes(c, platform, model, r, timing.timer(), [&](const Pass& pass, StepRow& row) {
    const std::string key =
        fmt::format("pass{}/{}", pass.index, row.attn == Attn::Sparse ? "sparse" : "dense");
    const auto before = compiler.stats();
    const auto path = runner.run("denoise", key, [&](memplan::capture::StepContext& ctx) {
      RunnerMemory mem(ctx);
      if (streamer) {
        memplan::stream::StreamedStep streamed(*streamer, ctx);
        StreamedBlocks weights(streamed, model.layout());
        model.step(pass, row.attn, rope, mem, weights, sp);
      } else if (c.weights == Weights::Naive) {
        NaiveBlocks weights(mem, platform.ops(), model);
        model.step(pass, row.attn, rope, mem, weights, sp);
      } else {
        model.step(pass, row.attn, rope, mem, model.resident_weights(), sp);
      }
    });
    const auto after = compiler.stats();
    row.path = memplan::capture::to_string(path);
    row.replayed = runner.last_step()->replayed();
    row.breaks = after.breaks;
    row.rogues = after.rogues;
    row.mapped = after.mapped_bytes;
    row.pool = after.pool_mapped_bytes;
    row.mem_calls = (after.backend_calls - before.backend_calls).memory_calls();
    if (row.replayed) r.replayed_step_mem_calls += row.mem_calls;
    r.peak_bytes = std::max(r.peak_bytes, row.mapped);
  });
  if (!r.device_peak_measured)
    r.device_peak_bytes = model.fixed_bytes() + compiler.stats().peak_mapped_bytes;
  for (auto& [tokens, p] : rope) compiler.deallocate(p);
  const auto s = compiler.stats();
  r.planned_bytes = s.planned_peak_bytes;
  r.lower_bound = s.lower_bound_bytes;
  r.breaks = s.breaks;
  r.rogues = s.rogues;
  r.branches = s.branches;
  r.steps_replayed = s.steps_replayed;
  r.captures = runner.stats().captures;
  r.graph_launches = runner.stats().graph_launches;
  r.invalidations = runner.stats().invalidations;
  r.report = compiler.report();
  if (!c.draw.empty()) draw_branches(compiler, c.draw, r.name);
  platform.synchronize();
  return r;
}

ModeResult run_baseline(const Config& c, Platform& platform, Model& model, SequenceParallel* sp) {
  ModeResult r;
  r.mode = Mode::Baseline;
  r.name = mode_name(Mode::Baseline, platform.gpu(), sp);
  auto mem = platform.make_baseline();
  std::map<std::int64_t, void*> rope;
  if (c.weights == Weights::Naive)
    r.streamed_bytes_per_step = static_cast<std::uint64_t>(model.blocks()) * model.layout().bytes;
  const CollectiveTiming timing(sp, Mode::Baseline, platform);
  run_passes(c, platform, model, r, timing.timer(), [&](const Pass& pass, StepRow& row) {
    const auto calls = mem->calls();
    if (c.weights == Weights::Naive) {
      NaiveBlocks weights(*mem, platform.ops(), model);
      model.step(pass, row.attn, rope, *mem, weights, sp);
    } else {
      model.step(pass, row.attn, rope, *mem, model.resident_weights(), sp);
    }
    row.mapped = mem->reserved_high_bytes();
    row.mem_calls = mem->calls() - calls;
    if (!r.rows.empty()) r.replayed_step_mem_calls += row.mem_calls;  // every warm step
  });
  platform.synchronize();
  for (auto& [tokens, p] : rope) mem->free_kept(p);
  r.peak_bytes = mem->reserved_high_bytes();
  r.lower_bound = mem->used_high_bytes();
  if (!r.device_peak_measured) r.device_peak_bytes = model.fixed_bytes() + r.peak_bytes;
  return r;
}

}  // namespace

ModeResult run_mode(Mode mode, const Config& config, Platform& platform, Model& model,
                    SequenceParallel* sp) {
  return mode == Mode::Baseline ? run_baseline(config, platform, model, sp)
                                : run_memplan(mode, config, platform, model, sp);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace denoise
