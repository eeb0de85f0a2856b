// The step program and the synthetic weights. Launch closures capture pointers and shapes by
// value and the Ops by reference (it lives as long as the model), so a captured graph replays
// exactly what the step launched.
#include "model.hpp"

#include <cmath>
#include <cstddef>

#include "memplan/error.hpp"
#include "memplan/types.hpp"
#include "sequence_parallel.hpp"

namespace denoise {

BlockWeights BlockLayout::at(void* base) const {
  auto* b = static_cast<std::byte*>(base);
  return BlockWeights{b + norm1, b + qkv, b + out, b + norm2, b + mlp1, b + mlp2};
}

class Model::Resident final : public BlockSource {
 public:
  explicit Resident(const std::vector<BlockWeights>& blocks) : blocks_(blocks) {}
  BlockWeights enter(int block) override { return blocks_.at(block); }
  void leave(int) override {}

 private:
  const std::vector<BlockWeights>& blocks_;
};

Model::Model(const Config& config, Ops& ops) : config_(config), ops_(ops) {
  ops.set_query_blocks_per_list(config.query_blocks_per_list);
  const Stream s{};
  const int h = config.hidden();
  const std::size_t hh = static_cast<std::size_t>(h) * static_cast<std::size_t>(h);
  const std::size_t mlp = static_cast<std::size_t>(h) * static_cast<std::size_t>(config.mlp_ratio);
  const float scale = 1.0f / std::sqrt(static_cast<float>(h));
  const float scale_mlp = 1.0f / std::sqrt(static_cast<float>(mlp));
  const std::size_t act = ops.act_bytes();
  auto place = [&](std::size_t elements) {
    const std::size_t at = layout_.bytes;
    layout_.bytes = memplan::align_up(at + elements * act, std::size_t{256});
    return at;
  };
  layout_.norm1 = place(static_cast<std::size_t>(h));
  layout_.qkv = place(3 * hh);
  layout_.out = place(hh);
  layout_.norm2 = place(static_cast<std::size_t>(h));
  layout_.mlp1 = place(h * mlp);
  layout_.mlp2 = place(mlp * static_cast<std::size_t>(h));
  // Each block is made on the device; a block that does not stay there goes to host memory, so
  // the device holds one such block at a time and every placement has the same bits.
  for (int b = 0; b < config.blocks; ++b) {
    void* dev = ops_.alloc_fixed(layout_.bytes);
    const BlockWeights w = layout_.at(dev);
    fill_weight(w.norm1, static_cast<std::size_t>(h), 0.0f, true, s);
    fill_weight(w.qkv, 3 * hh, scale, true, s);
    fill_weight(w.out, hh, scale, true, s);
    fill_weight(w.norm2, static_cast<std::size_t>(h), 0.0f, true, s);
    fill_weight(w.mlp1, h * mlp, scale, true, s);
    fill_weight(w.mlp2, mlp * static_cast<std::size_t>(h), scale_mlp, true, s);
    if (config.weights == Weights::Resident) {
      fixed_.push_back(dev);
      fixed_bytes_ += layout_.bytes;
      blocks_.push_back(w);
    } else {
      void* host = ops_.alloc_host(layout_.bytes);
      host_blocks_.push_back(host);
      ops_.download(host, dev, layout_.bytes);  // waits for the fills
      ops_.free_fixed(dev);
    }
  }
  resident_ = std::make_unique<Resident>(blocks_);
  temb_ = weight(static_cast<std::size_t>(h), 1.0f, true, s);
  final_norm_ = weight(static_cast<std::size_t>(h), 0.0f, true, s);
  final_out_ = weight(hh, scale, true, s);

  auto add_pass = [&](std::int64_t tokens, int steps, float t_start) {
    Pass p;
    p.index = static_cast<int>(passes_.size());
    p.dims = Dims{tokens, config.heads, config.head_dim};
    p.steps = steps;
    p.t_start = t_start;
    p.latents = static_cast<float*>(alloc_fixed(static_cast<std::size_t>(tokens) * h * 4));
    p.sched = static_cast<float*>(alloc_fixed(static_cast<std::size_t>(steps + 1) * 4));
    p.counter = static_cast<int*>(alloc_fixed(sizeof(int)));
    std::vector<float> sched(static_cast<std::size_t>(steps) + 1);
    for (int i = 0; i <= steps; ++i)
      sched[i] = t_start * (1.0f - static_cast<float>(i) / static_cast<float>(steps));
    ops_.upload(p.sched, sched.data(), sched.size() * 4);
    passes_.push_back(p);
  };
  add_pass(config.tokens, config.steps, 1.0f);
  if (config.second_tokens != 0) add_pass(config.second_tokens, config.second_steps, 0.6f);
}

Model::~Model() {
  for (void* p : fixed_) ops_.free_fixed(p);
  for (void* p : host_blocks_) ops_.free_host(p);
}

BlockSource& Model::resident_weights() {
  if (config_.weights != Weights::Resident)
    throw memplan::InvalidState("the model's weights are not resident (--weights)");
  return *resident_;
}

void* Model::alloc_fixed(std::size_t bytes) {
  void* p = ops_.alloc_fixed(bytes);
  fixed_.push_back(p);
  fixed_bytes_ += bytes;
  return p;
}

void* Model::weight(std::size_t elements, float scale, bool act, Stream s) {
  void* p = alloc_fixed(elements * (act ? ops_.act_bytes() : 4));
  fill_weight(p, elements, scale, act, s);
  return p;
}

void Model::fill_weight(void* p, std::size_t elements, float scale, bool act, Stream s) {
  const auto seed = config_.seed * 1000003u + ++weights_made_;
  // Norm gains are 1 + small noise; projections are scaled to keep activations O(1).
  if (scale == 0.0f) {
    ops_.fill(p, static_cast<std::int64_t>(elements), seed, 0.05f, act, s);
    ops_.add(p, nullptr, static_cast<std::int64_t>(elements), s);  // + 1 (o == nullptr)
  } else {
    ops_.fill(p, static_cast<std::int64_t>(elements), seed, scale * 1.7f, act, s);
  }
}

void Model::reset_pass(const Pass& pass, Stream s) {
  const std::int64_t n = pass.dims.tokens * pass.dims.hidden();
  ops_.fill(pass.latents, n, config_.seed * 7919u + static_cast<std::uint64_t>(pass.index), 1.0f,
            false, s);
  const int zero = 0;
  ops_.upload(pass.counter, &zero, sizeof zero);
}

void Model::seed_from(const Pass& pass, const Pass& previous, Stream s) {
  ops_.blend(pass.latents, previous.latents, pass.dims.tokens, previous.dims.tokens,
             pass.dims.hidden(), pass.t_start, s);
}

Attn Model::attention_for(const Pass& pass, int step) const {
  const double fraction = pass.steps > 1 ? static_cast<double>(step) / (pass.steps - 1) : 0.0;
  return fraction >= config_.window_start && fraction <= config_.window_end ? Attn::Sparse
                                                                            : Attn::Dense;
}

void Model::step(const Pass& pass, Attn attn, std::map<std::int64_t, void*>& rope, StepMemory& mem,
                 BlockSource& weights, SequenceParallel* sp) const {
  Ops& ops = ops_;
  const Dims d = pass.dims;
  // The rows this rank runs: every token, or a sequence-parallel rank's shard.
  const TokenShard shard = sp != nullptr ? sp->shard(d.tokens) : TokenShard{0, d.tokens};
  const std::int64_t t = shard.rows;
  const Dims local{t, d.heads, d.head_dim};
  const int h = d.hidden();
  const int mlp = h * config_.mlp_ratio;
  const std::size_t act = ops.act_bytes();
  const std::size_t th = static_cast<std::size_t>(t) * static_cast<std::size_t>(h) * act;

  // The rope table of this token count: built once, kept across steps (the field's cache).
  auto& table_slot = rope[d.tokens];
  if (table_slot == nullptr) {
    const std::int64_t tokens = d.tokens;
    const std::size_t bytes =
        static_cast<std::size_t>(tokens) * static_cast<std::size_t>(d.head_dim) * 4;
    table_slot = mem.alloc_kept(bytes, "rope_freqs", config_.rope == RopeCache::Paused);
    auto* table = static_cast<float*>(table_slot);
    mem.launch(
        [&ops, table, tokens, d](Stream s) { ops.rope_table(table, tokens, d.head_dim, s); });
  }
  const auto* table = static_cast<const float*>(table_slot);
  mem.depends_on(table);
  mem.depends_on(pass.latents);
  // The shard's rows of the latents and of the rope table (its global token positions).
  const float* x = pass.latents + shard.first * h;
  const float* rope_rows = table + shard.first * d.head_dim;

  void* hs = mem.alloc(th, "residual");
  mem.launch([&ops, hs, x, pass, t, h, temb = temb_](Stream s) {
    ops.embed(hs, x, temb, pass.sched, pass.counter, t, h, s);
  });
  const std::size_t ws_bytes = sp != nullptr ? 0 : ops.attention_workspace(d, attn);
  const bool rope_pools = config_.pooled_means == PooledMeansBy::Rope && ops.rope_can_pool();
  for (int b = 0; b < config_.blocks; ++b) {
    const BlockWeights w = weights.enter(b);
    void* n1 = mem.alloc(th);
    mem.launch([&ops, n1, hs, w, t, h](Stream s) { ops.rmsnorm(n1, hs, w.norm1, t, h, s); });
    void* qkv = mem.alloc(3 * th, "qkv");
    mem.launch([&ops, qkv, n1, w, t, h](Stream s) { ops.gemm_qkv(qkv, n1, w.qkv, t, h, s); });
    mem.free(n1);
    auto* q = static_cast<std::byte*>(qkv);
    std::byte* k = q + th;
    std::byte* v = k + th;
    void* att = nullptr;
    if (sp != nullptr) {
      mem.launch([&ops, q, k, rope_rows, local, attn](Stream s) {
        ops.rope(q, k, rope_rows, local, nullptr, attn, s);
      });
      att = sp->attend(mem, qkv, d, attn);  // frees qkv
    } else {
      // A sparse call's workspace comes first, so rope can write the pooled means into it.
      void* ws = ws_bytes != 0 ? mem.alloc(ws_bytes, "attn_workspace") : nullptr;
      const bool means = ws != nullptr && rope_pools;
      mem.launch([&ops, q, k, rope_rows, local, attn, ws, means](Stream s) {
        ops.rope(q, k, rope_rows, local, means ? ws : nullptr, attn, s);
      });
      att = mem.alloc(th);
      mem.launch([&ops, att, q, k, v, ws, ws_bytes, d, attn, means](Stream s) {
        ops.attention(att, q, k, v, ws, ws_bytes, d, attn, means, s);
      });
      if (ws != nullptr) mem.free(ws);
      mem.free(qkv);
    }
    void* o = mem.alloc(th);
    mem.launch([&ops, o, att, w, t, h](Stream s) { ops.gemm(o, att, w.out, t, h, h, s); });
    mem.free(att);
    mem.launch([&ops, hs, o, t, h](Stream s) { ops.add(hs, o, t * h, s); });
    mem.free(o);
    void* n2 = mem.alloc(th);
    mem.launch([&ops, n2, hs, w, t, h](Stream s) { ops.rmsnorm(n2, hs, w.norm2, t, h, s); });
    void* m1 = mem.alloc(th * static_cast<std::size_t>(config_.mlp_ratio), "mlp");
    mem.launch([&ops, m1, n2, w, t, h, mlp](Stream s) {
      ops.gemm(m1, n2, w.mlp1, t, h, mlp, s);
      ops.gelu(m1, t * mlp, s);
    });
    mem.free(n2);
    void* m2 = mem.alloc(th);
    mem.launch([&ops, m2, m1, w, t, h, mlp](Stream s) { ops.gemm(m2, m1, w.mlp2, t, mlp, h, s); });
    mem.free(m1);
    mem.launch([&ops, hs, m2, t, h](Stream s) { ops.add(hs, m2, t * h, s); });
    mem.free(m2);
    weights.leave(b);
  }
  void* nf = mem.alloc(th);
  mem.launch([&ops, nf, hs, t, h, g = final_norm_](Stream s) { ops.rmsnorm(nf, hs, g, t, h, s); });
  mem.free(hs);
  void* vel = mem.alloc(th, "velocity");
  mem.launch(
      [&ops, vel, nf, t, h, wout = final_out_](Stream s) { ops.gemm(vel, nf, wout, t, h, h, s); });
  mem.free(nf);
  if (sp != nullptr) {
    sp->update_latents(mem, pass, vel);
  } else {
    mem.launch([&ops, vel, pass, t, h](Stream s) {
      ops.euler(pass.latents, vel, pass.sched, pass.counter, t * h, s);
      ops.advance(pass.counter, s);
    });
  }
  mem.free(vel);
}

std::vector<float> Model::read_latents(const Pass& pass) const {
  std::vector<float> out(static_cast<std::size_t>(pass.dims.tokens * pass.dims.hidden()));
  ops_.download(out.data(), pass.latents, out.size() * 4);
  return out;
}

}  // namespace denoise
