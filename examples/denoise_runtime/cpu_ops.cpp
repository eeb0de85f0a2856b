// CPU kernels in float (see cpu_ops.hpp). Deterministic: same inputs, same bits.
#include "cpu_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "attention_policy.hpp"
#include "memplan/attention/host_selection.hpp"
#include "memplan/error.hpp"

namespace denoise {
namespace {

constexpr int kBlock = memplan::attention::kBlockTokens;

float hash_uniform(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f;
}

float* f(void* p) { return static_cast<float*>(p); }
const float* f(const void* p) { return static_cast<const float*>(p); }

// The CPU workspace of a sparse step: pooled Q and K (float), then the block list with rows of
// every block (max_k = n), each region 256-byte aligned as on the GPU.
struct SparseLayout {
  int n = 0;
  std::size_t pooled_q = 0, pooled_k = 0, idx = 0, count = 0, bytes = 0;
};

memplan::attention::AttentionShape shape_of(const Dims& d) {
  return {1, d.tokens, d.heads, d.head_dim};
}

SparseLayout layout(const Dims& d) {
  SparseLayout l;
  l.n = shape_of(d).blocks();
  const auto up = [](std::size_t x) { return (x + 255) / 256 * 256; };
  const std::size_t rows = static_cast<std::size_t>(d.heads) * static_cast<std::size_t>(l.n);
  l.pooled_q = 0;
  l.pooled_k = up(rows * d.head_dim * 4);
  l.idx = l.pooled_k + up(rows * d.head_dim * 4);
  l.count = l.idx + up(rows * static_cast<std::size_t>(l.n) * 4);
  l.bytes = l.count + up(rows * 4);
  return l;
}

class CpuOps final : public Ops {
 public:
  std::string name() const override { return "float loops"; }
  std::size_t act_bytes() const override { return 4; }
  std::size_t attention_workspace(const Dims& d, Attn attn) const override {
    return attn == Attn::Dense ? 0 : layout(d).bytes;
  }

  void* alloc_fixed(std::size_t bytes) override {
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (p == nullptr) throw memplan::OutOfMemory(fmt_oom(bytes));
    return p;
  }
  void free_fixed(void* p) noexcept override { std::free(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void* alloc_host(std::size_t bytes) override { return alloc_fixed(bytes); }
  void free_host(void* p) noexcept override { std::free(p); }
  void copy_blocking(void* dst, const void* src, std::size_t bytes, Stream) override {
    std::memcpy(dst, src, bytes);
  }

  void fill(void* p, std::int64_t n, std::uint64_t seed, float scale, bool, Stream) override {
    for (std::int64_t i = 0; i < n; ++i)
      f(p)[i] = scale * hash_uniform(seed, static_cast<std::uint64_t>(i));
  }
  void embed(void* h, const float* x, const void* temb, const float* sched, const int* counter,
             std::int64_t tokens, int hidden, Stream) override {
    const float t = sched[*counter];
    for (std::int64_t r = 0; r < tokens; ++r)
      for (int c = 0; c < hidden; ++c) f(h)[r * hidden + c] = x[r * hidden + c] + t * f(temb)[c];
  }
  void rmsnorm(void* out, const void* in, const void* gain, std::int64_t rows, int cols,
               Stream) override {
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* x = f(in) + r * cols;
      float ss = 0;
      for (int c = 0; c < cols; ++c) ss += x[c] * x[c];
      const float inv = 1.0f / std::sqrt(ss / static_cast<float>(cols) + 1e-6f);
      for (int c = 0; c < cols; ++c) f(out)[r * cols + c] = x[c] * inv * f(gain)[c];
    }
  }
  void gemm(void* out, const void* in, const void* w, std::int64_t m, int k, int n,
            Stream) override {
    for (std::int64_t i = 0; i < m; ++i) {
      float* o = f(out) + i * n;
      std::fill(o, o + n, 0.0f);
      for (int kk = 0; kk < k; ++kk) {
        const float a = f(in)[i * k + kk];
        const float* row = f(w) + static_cast<std::int64_t>(kk) * n;
        for (int j = 0; j < n; ++j) o[j] += a * row[j];
      }
    }
  }
  void gemm_qkv(void* qkv, const void* in, const void* w, std::int64_t m, int hidden,
                Stream s) override {
    const std::int64_t mh = m * hidden;
    const std::int64_t hh = static_cast<std::int64_t>(hidden) * hidden;
    for (int p = 0; p < 3; ++p) gemm(f(qkv) + p * mh, in, f(w) + p * hh, m, hidden, hidden, s);
  }
  void rope_table(float* table, std::int64_t tokens, int head_dim, Stream) override {
    const int half = head_dim / 2;
    for (std::int64_t t = 0; t < tokens; ++t)
      for (int j = 0; j < half; ++j) {
        const double angle = static_cast<double>(t) * std::pow(10000.0, -2.0 * j / head_dim);
        table[(t * half + j) * 2] = static_cast<float>(std::cos(angle));
        table[(t * half + j) * 2 + 1] = static_cast<float>(std::sin(angle));
      }
  }
  // The CPU twin pools inside attention (rope_can_pool() is false, so `means` is always null).
  void rope(void* q, void* k, const float* table, const Dims& d, void*, Attn, Stream) override {
    const int half = d.head_dim / 2;
    for (float* x : {f(q), f(k)})
      for (std::int64_t t = 0; t < d.tokens; ++t)
        for (int hd = 0; hd < d.heads; ++hd)
          for (int j = 0; j < half; ++j) {
            float* pair = x + (t * d.heads + hd) * d.head_dim + 2 * j;
            const float c = table[(t * half + j) * 2], sn = table[(t * half + j) * 2 + 1];
            const float a = pair[0], b = pair[1];
            pair[0] = a * c - b * sn;
            pair[1] = a * sn + b * c;
          }
  }
  void attention(void* out, const void* q, const void* k, const void* v, void* ws,
                 std::size_t ws_bytes, const Dims& d, Attn attn, bool, Stream) override {
    const int n = shape_of(d).blocks();
    std::vector<int> all(static_cast<std::size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    SparseLayout l;
    if (attn == Attn::Sparse) {
      l = layout(d);
      if (ws == nullptr || ws_bytes < l.bytes)
        throw memplan::InvalidArgument("cpu attention: workspace too small");
      select(q, k, ws, d, l);
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
    const std::int64_t stride = static_cast<std::int64_t>(d.heads) * d.head_dim;
    std::vector<float> scores, acc(static_cast<std::size_t>(d.head_dim));
    for (int hd = 0; hd < d.heads; ++hd)
      for (int qb = 0; qb < n; ++qb) {
        const int* list = all.data();
        int count = n;
        if (attn == Attn::Sparse) {
          const std::size_t row = static_cast<std::size_t>(hd) * n + qb;
          list = reinterpret_cast<const int*>(static_cast<std::byte*>(ws) + l.idx) + row * n;
          count = reinterpret_cast<const int*>(static_cast<std::byte*>(ws) + l.count)[row];
        }
        for (std::int64_t t = qb * kBlock; t < std::min<std::int64_t>(d.tokens, (qb + 1) * kBlock);
             ++t) {
          const float* qr = f(q) + t * stride + hd * d.head_dim;
          scores.clear();
          float mx = -INFINITY;
          for (int li = 0; li < count; ++li)
            for (std::int64_t u = list[li] * kBlock;
                 u < std::min<std::int64_t>(d.tokens, (list[li] + 1) * kBlock); ++u) {
              const float* kr = f(k) + u * stride + hd * d.head_dim;
              float dot = 0;
              for (int c = 0; c < d.head_dim; ++c) dot += qr[c] * kr[c];
              scores.push_back(dot * scale);
              mx = std::max(mx, dot * scale);
            }
          std::fill(acc.begin(), acc.end(), 0.0f);
          float sum = 0;
          std::size_t si = 0;
          for (int li = 0; li < count; ++li)
            for (std::int64_t u = list[li] * kBlock;
                 u < std::min<std::int64_t>(d.tokens, (list[li] + 1) * kBlock); ++u) {
              const float p = std::exp(scores[si++] - mx);
              sum += p;
              const float* vr = f(v) + u * stride + hd * d.head_dim;
              for (int c = 0; c < d.head_dim; ++c) acc[c] += p * vr[c];
            }
          float* o = f(out) + t * stride + hd * d.head_dim;
          for (int c = 0; c < d.head_dim; ++c) o[c] = acc[c] / sum;
        }
      }
  }
  void gelu(void* x, std::int64_t n, Stream) override {
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = f(x)[i];
      f(x)[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
  }
  void add(void* h, const void* o, std::int64_t n, Stream) override {
    for (std::int64_t i = 0; i < n; ++i) f(h)[i] += o != nullptr ? f(o)[i] : 1.0f;
  }
  void euler(float* x, const void* v, const float* sched, const int* counter, std::int64_t n,
             Stream) override {
    const float dt = sched[*counter + 1] - sched[*counter];
    for (std::int64_t i = 0; i < n; ++i) x[i] += dt * f(v)[i];
  }
  void advance(int* counter, Stream) override { ++*counter; }
  void blend(float* x2, const float* x1, std::int64_t t2, std::int64_t t1, int hidden, float a,
             Stream) override {
    for (std::int64_t t = 0; t < t2; ++t)
      for (int c = 0; c < hidden; ++c)
        x2[t * hidden + c] = a * x1[(t % t1) * hidden + c] + (1.0f - a) * x2[t * hidden + c];
  }
  void copy(void* dst, const void* src, std::size_t bytes, Stream) override {
    std::memcpy(dst, src, bytes);
  }
  void transpose_blocks(void* dst, const void* src, std::int64_t a, std::int64_t b,
                        std::size_t chunk_bytes, Stream) override {
    auto* out = static_cast<std::byte*>(dst);
    const auto* in = static_cast<const std::byte*>(src);
    for (std::int64_t i = 0; i < a; ++i)
      for (std::int64_t j = 0; j < b; ++j)
        std::memcpy(out + static_cast<std::size_t>(j * a + i) * chunk_bytes,
                    in + static_cast<std::size_t>(i * b + j) * chunk_bytes, chunk_bytes);
  }

 private:
  static std::string fmt_oom(std::size_t bytes) {
    return "cpu ops: aligned_alloc of " + std::to_string(bytes) + " bytes failed";
  }

  // The GPU's selection under the GPU's policy, by memplan's host reference: pooled block means
  // of Q and K (kept in the workspace, as the GPU keeps them), block scores, and per (head, query
  // block, or pair of them) the forced blocks plus those the tau rule keeps, ascending.
  void select(const void* q, const void* k, void* ws, const Dims& d, const SparseLayout& l) const {
    namespace attn = memplan::attention;
    const attn::AttentionShape shape = shape_of(d);
    const auto elements = static_cast<std::size_t>(shape.elements());
    const auto rows = static_cast<std::size_t>(shape.rows());
    const std::vector<double> pooled_q = attn::pool_blocks(shape, {f(q), elements});
    const std::vector<double> pooled_k = attn::pool_blocks(shape, {f(k), elements});
    auto* base = static_cast<std::byte*>(ws);
    std::copy(pooled_q.begin(), pooled_q.end(), reinterpret_cast<float*>(base + l.pooled_q));
    std::copy(pooled_k.begin(), pooled_k.end(), reinterpret_cast<float*>(base + l.pooled_k));
    attn::select_blocks(shape, attention_policy(Attn::Sparse, query_blocks_per_list()),
                        attn::block_scores(shape, pooled_q, pooled_k),
                        {reinterpret_cast<int*>(base + l.idx), rows * l.n},
                        {reinterpret_cast<int*>(base + l.count), rows}, l.n);
  }
};

}  // namespace

std::unique_ptr<Ops> make_cpu_ops() { return std::make_unique<CpuOps>(); }

}  // namespace denoise
