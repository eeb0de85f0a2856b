// Streamed and naive weights, and the streaming plan of a run (see weight_sources.hpp).
#include "weight_sources.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <utility>

#include "memplan/arena/host_backend.hpp"
#include "memplan/types.hpp"

namespace denoise {
namespace {

// The step's allocations into a compiler, launches dropped: the probe runs no kernel.
class ProbeMemory final : public StepMemory {
 public:
  explicit ProbeMemory(memplan::Compiler& compiler) : compiler_(compiler) {}
  void* alloc(std::size_t bytes, std::string_view tag) override {
    return compiler_.allocate(bytes, {}, tag);
  }
  void free(void* p) override { compiler_.deallocate(p); }
  void* alloc_kept(std::size_t bytes, std::string_view tag, bool) override {
    auto pause = compiler_.pause();  // kept buffers are not the step's: the pool
    return compiler_.allocate(bytes, {}, tag);
  }
  void depends_on(const void*) override {}
  void launch(memplan::capture::Launch) override {}

 private:
  memplan::Compiler& compiler_;
};

// Blocks without weights: the probe's launches never run.
class NoWeights final : public BlockSource {
 public:
  BlockWeights enter(int) override { return {}; }
  void leave(int) override {}
};

}  // namespace

BlockWeights StreamedBlocks::enter(int block) {
  return layout_.at(step_.enter(static_cast<std::size_t>(block)));
}

void StreamedBlocks::leave(int block) { step_.leave(static_cast<std::size_t>(block)); }

BlockWeights NaiveBlocks::enter(int block) {
  const std::size_t bytes = model_.layout().bytes;
  slot_ = mem_.alloc(bytes, memplan::stream::kSlotTag);
  const void* host = model_.host_block(block);
  mem_.depends_on(host);
  mem_.launch([&ops = ops_, slot = slot_, host, bytes](Stream s) {
    ops.copy_blocking(slot, host, bytes, s);
  });
  return model_.layout().at(slot_);
}

void NaiveBlocks::leave(int) { mem_.free(std::exchange(slot_, nullptr)); }

std::vector<memplan::stream::WeightBlock> host_blocks(const Model& model) {
  std::vector<memplan::stream::WeightBlock> out;
  for (int b = 0; b < model.blocks(); ++b)
    out.push_back({model.host_block(b), model.layout().bytes});
  return out;
}

std::size_t activation_peak(Model& model, const memplan::CompilerOptions& options) {
  memplan::arena::HostBackend backend(memplan::arena::HostBackendOptions{.commit = false});
  memplan::CompilerOptions probe = options;
  probe.memory_budget_bytes = 0;  // the probe measures; the budget is the real run's
  memplan::Compiler compiler(backend, probe);
  ProbeMemory mem(compiler);
  NoWeights weights;
  std::map<std::int64_t, void*> rope;
  for (const Pass& pass : model.passes()) {
    std::set<Attn> paths;
    for (int i = 0; i < pass.steps; ++i) paths.insert(model.attention_for(pass, i));
    for (Attn attn : paths) {
      auto step = compiler.step("probe");
      model.step(pass, attn, rope, mem, weights);
    }
  }
  for (auto& [tokens, p] : rope) compiler.deallocate(p);
  // A recording step maps more than its plan (best fit, online), and the budget holds during
  // recording too: the larger of the plan and what the probe's arena mapped at most. (The pool
  // only grows here, so peak mapped less the pool's mapped bytes is the arena's peak.)
  const memplan::Stats s = compiler.stats();
  return std::max<std::size_t>(s.planned_peak_bytes, s.peak_mapped_bytes - s.pool_mapped_bytes);
}

memplan::stream::StreamingInputs streaming_inputs(const Config& config, Model& model,
                                                  const memplan::CompilerOptions& options) {
  memplan::stream::StreamingInputs in;
  in.block_bytes.assign(static_cast<std::size_t>(model.blocks()), model.layout().bytes);
  in.budget_bytes = config.vram_budget;
  // Outside the plan: the model's own device memory, and the rope tables in the pool.
  std::size_t rope_bytes = 0;
  for (const Pass& pass : model.passes())
    rope_bytes += static_cast<std::size_t>(pass.dims.tokens) *
                  static_cast<std::size_t>(pass.dims.head_dim) * 4;
  in.fixed_bytes = model.fixed_bytes() + memplan::align_up(rope_bytes, options.pool_chunk_bytes);
  in.activation_peak_bytes = activation_peak(model, options);
  in.arena_chunk_bytes = options.chunk_bytes;
  in.pool_chunk_bytes = options.pool_chunk_bytes;
  return in;
}

memplan::stream::StreamingPlan plan_streaming(const Config& config, Model& model,
                                              const memplan::CompilerOptions& options) {
  if (config.vram_budget == 0) {
    return memplan::stream::all_resident(
        std::vector<std::size_t>(static_cast<std::size_t>(model.blocks()), model.layout().bytes));
  }
  return memplan::stream::choose_streaming(streaming_inputs(config, model, options));
}

double measure_h2d_bandwidth(const Model& model, Ops& ops, int repeats) {
  const std::size_t bytes = model.layout().bytes;
  void* device = ops.alloc_fixed(bytes);
  ops.copy_blocking(device, model.host_block(0), bytes, Stream{});  // warm up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) ops.copy_blocking(device, model.host_block(0), bytes, Stream{});
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - t0;
  ops.free_fixed(device);
  return static_cast<double>(bytes) * repeats / elapsed.count();
}

}  // namespace denoise
