// Block-sparse attention benchmark on [1, N, 24, 128] bf16 (the issue's shapes): dense TFLOP/s,
// selection time, kept-block TFLOP/s and end-to-end time at ~10% density, and the error of each
// sparse mode against the dense output on random and on smooth (video-like) inputs.
// Timing: CUDA events around each launch, median of repeats after warm-up.
// The flash kernel is timed on each Hopper path in turn (MEMPLAN_ATTENTION_KERNEL, read at every
// launch): tma (the default) and wgmma; each path's dense output is compared with the first
// path's, and the kept-block rate of each path's flash kernel is timed on the same lists.
// Selection and the end-to-end call run on the first path.
// Usage: attention_bench [tokens...]   (default 8192 32768 75600)
// ATTENTION_BENCH_KERNELS=tma,wgmma,mma picks the paths (comma-separated; default tma,wgmma).
// ATTENTION_BENCH_FULL_LIST=1 adds top-k 100 % (every block listed): the block-list path at dense's
// work. Modes named "/2" select one list per pair of query blocks (query_blocks_per_list 2).
// ATTENTION_BENCH_MODES=topk10/2,tau1.5/2 runs only the named modes (default: all).
// Tau's lists are timed as launch_attention visits them (rotated, BlockList::rotate_visits) and,
// on a line of their own, in list order.
// Each mode's second line: the selection's share of the call, and the same with the pooled means
// given (PooledMeans::InWorkspace; bench/rope_means_bench measures what writing them costs a
// producer).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "memplan/attention/attention.hpp"
#include "video_like_inputs.hpp"

namespace {

using namespace memplan::attention;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}
#define CHECK(call) check((call), #call)

// The inputs of bench/video_like_inputs.hpp, rounded to bf16.
__global__ void fill(__nv_bfloat16* x, long long n, int hd, unsigned long long seed, bool smooth) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  x[i] = __float2bfloat16(memplan::bench::video_like_value(
      static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(hd), seed, smooth));
}

__global__ void error_sums(const __nv_bfloat16* got, const __nv_bfloat16* want, long long n,
                           double* sums) {
  double err = 0.0;
  double ref = 0.0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const double a = __bfloat162float(got[i]);
    const double b = __bfloat162float(want[i]);
    err += (a - b) * (a - b);
    ref += b * b;
  }
  atomicAdd(&sums[0], err);
  atomicAdd(&sums[1], ref);
}

template <typename F>
double median_ms(F&& launch, int reps) {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 2; ++i) launch();  // warm-up: module load, attribute setting, clocks
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Inputs {
  AttentionShape shape;
  // out: the launch's output; dense: the first path's dense output; sparse: the first path's
  // output of the mode being timed.
  __nv_bfloat16 *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr, *dense = nullptr,
                *sparse = nullptr;
  explicit Inputs(const AttentionShape& s) : shape(s) {
    const auto bytes = static_cast<std::size_t>(s.elements()) * 2;
    for (auto** p : {&q, &k, &v, &out, &dense, &sparse}) CHECK(cudaMalloc(p, bytes));
  }
  ~Inputs() {
    for (auto* p : {q, k, v, out, dense, sparse}) cudaFree(p);
  }
  void randomise(unsigned long long seed, bool smooth) {
    const long long n = shape.elements();
    const int hd = shape.heads * shape.head_dim;
    const auto grid = static_cast<unsigned>((n + 255) / 256);
    fill<<<grid, 256>>>(q, n, hd, seed, smooth);
    fill<<<grid, 256>>>(k, n, hd, seed + 1, smooth);
    fill<<<grid, 256>>>(v, n, hd, seed + 2, smooth);
    CHECK(cudaGetLastError());
  }
  [[nodiscard]] AttentionTensors tensors(bool to_dense = false) const {
    return {q, k, v, to_dense ? dense : out};
  }
  void keep_sparse() const {
    CHECK(cudaMemcpy(sparse, out, static_cast<std::size_t>(shape.elements()) * 2,
                     cudaMemcpyDeviceToDevice));
  }
  [[nodiscard]] double error_vs_dense(double* sums) const { return error_vs(dense, sums); }
  [[nodiscard]] double error_vs(const __nv_bfloat16* want, double* sums) const {
    CHECK(cudaMemset(sums, 0, 2 * sizeof(double)));
    error_sums<<<1024, 256>>>(out, want, shape.elements(), sums);
    CHECK(cudaGetLastError());
    double host[2];
    CHECK(cudaMemcpy(host, sums, sizeof(host), cudaMemcpyDeviceToHost));
    return std::sqrt(host[0] / host[1]);
  }
};

// The comma-separated items of environment variable `name`, or of `fallback` when it is unset.
std::vector<std::string> env_list(const char* name, const char* fallback) {
  const char* list = std::getenv(name);
  std::string text = list != nullptr && *list != '\0' ? list : fallback;
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

// The paths to time, from ATTENTION_BENCH_KERNELS or the Hopper paths; the first is the
// reference.
std::vector<std::string> kernel_paths() { return env_list("ATTENTION_BENCH_KERNELS", "tma,wgmma"); }

void use_kernel(const std::string& path) { setenv("MEMPLAN_ATTENTION_KERNEL", path.c_str(), 1); }

#ifdef MEMPLAN_FLASH_TIMELINE
}  // namespace
namespace memplan::attention::detail {
std::vector<long long> flash_tma_timeline();  // flash_tma.cu, built with the same option
}  // namespace memplan::attention::detail
namespace {

// The last TMA launch's per-CTA phases (flash_tma.cu's slots), averaged over its CTAs, in SM
// cycles and in units of the loop's own time a tile: where a CTA's time goes besides its tiles.
void print_timeline(const char* label) {
  const std::vector<long long> t = memplan::attention::detail::flash_tma_timeline();
  struct Cta {
    long long entry, end;
  };
  std::vector<std::vector<Cta>> per_sm(256);
  double q = 0, k0 = 0, step0 = 0, loop = 0, loop_tiles = 0, epi = 0, second = 0;
  long long n = 0;
  for (std::size_t c = 0; c + 8 <= t.size(); c += 8) {
    const long long* s = &t[c];
    const int tiles = static_cast<int>(s[7] & 0xffffffff);
    const int sm = static_cast<int>(s[7] >> 32);
    if (tiles < 2 || s[0] == 0 || sm < 0 || sm >= 256) continue;
    ++n;
    q += static_cast<double>(s[1] - s[0]);
    k0 += static_cast<double>(s[2] - s[1]);
    step0 += static_cast<double>(s[3] - s[2]);
    loop += static_cast<double>(s[4] - s[3]);
    loop_tiles += tiles - 1;
    epi += static_cast<double>(s[5] - s[4]);
    second += static_cast<double>(s[6] - s[5]);
    per_sm[static_cast<std::size_t>(sm)].push_back(Cta{s[0], std::max(s[5], s[6])});
  }
  double gap = 0;
  long long gaps = 0;
  for (auto& ctas : per_sm) {
    std::sort(ctas.begin(), ctas.end(),
              [](const Cta& a, const Cta& b) { return a.entry < b.entry; });
    for (std::size_t i = 1; i < ctas.size(); ++i) {
      gap += static_cast<double>(ctas[i].entry - ctas[i - 1].end);
      ++gaps;
    }
  }
  if (n == 0) return;
  const double per_tile = loop / loop_tiles;
  auto show = [&](const char* name, double total, long long count) {
    const double cycles = count > 0 ? total / static_cast<double>(count) : 0.0;
    std::printf(" %s %.0f (%.2f)", name, cycles, cycles / per_tile);
  };
  std::printf("  timeline %-22s %lld CTAs, %.1f tiles each; cycles (tiles):", label, n,
              loop_tiles / static_cast<double>(n) + 1.0);
  show("q", q, n);
  show("k0", k0, n);
  show("step0", step0, n);
  std::printf(" tile %.0f", per_tile);
  show("epilogue", epi, n);
  show("group1 later", second, n);
  show("gap", gap, gaps);
  std::printf("\n");
}
#else
void print_timeline(const char*) {}
#endif

double dense_flops(const AttentionShape& s) {
  return 4.0 * s.batch * s.heads * static_cast<double>(s.tokens) * static_cast<double>(s.tokens) *
         s.head_dim;
}

// Visited key blocks summed over rows, read back from the workspace's kv_count.
long long visited_blocks(const WorkspaceLayout& layout, const void* workspace,
                         const AttentionShape& shape) {
  std::vector<int> counts(static_cast<std::size_t>(shape.rows()));
  CHECK(cudaMemcpy(counts.data(), static_cast<const char*>(workspace) + layout.kv_count,
                   counts.size() * sizeof(int), cudaMemcpyDeviceToHost));
  long long total = 0;
  for (int c : counts) total += c;
  return total;
}

void run(std::int64_t tokens) {
  const AttentionShape shape{1, tokens, 24, 128};
  Inputs in(shape);
  double* sums = nullptr;
  CHECK(cudaMalloc(&sums, 2 * sizeof(double)));
  const int reps = tokens > 40000 ? 7 : 15;
  const double total_blocks = static_cast<double>(shape.rows()) * shape.blocks();
  const double block_flops = 4.0 * 64 * 64 * shape.head_dim;

  const std::vector<std::string> paths = kernel_paths();
  for (const bool smooth : {false, true}) {
    in.randomise(tokens * 3 + (smooth ? 1 : 0), smooth);
    const char* kind = smooth ? "smooth" : "random";
    // Each path's dense output lands in `out` and is compared with the first path's (`dense`).
    double dense_ms = 0.0;
    for (std::size_t i = 0; i < paths.size(); ++i) {
      use_kernel(paths[i]);
      const bool first = i == 0;
      const double ms = median_ms(
          [&] {
            launch_flash_forward(shape, in.tensors(first), BlockList{}, nullptr, 0.0f, nullptr);
          },
          reps);
      if (first) dense_ms = ms;
      if (paths[i] == "tma") print_timeline("dense");
      std::printf("%-7s N=%-6lld dense [%-7s] %9.3f ms  %6.1f TFLOP/s", kind,
                  static_cast<long long>(tokens), paths[i].c_str(), ms,
                  dense_flops(shape) / ms * 1e-9);
      if (first) {
        std::printf("\n");
      } else {
        std::printf("  rel-L2 vs [%s] %.2e\n", paths[0].c_str(), in.error_vs_dense(sums));
      }
    }
    use_kernel(paths[0]);

    struct Mode {
      const char* name;
      SparsityMode mode;
      float tau;
      float keep;
      int query_blocks_per_list = 1;
    };
    // Each mode with a list per query block, then (names ending "/2") one per pair of blocks.
    std::vector<Mode> modes;
    for (const int per_list : {1, 2}) {
      const bool pair = per_list == 2;
      modes.push_back(
          Mode{pair ? "topk10/2" : "topk10", SparsityMode::TopK, 0.0f, 10.0f, per_list});
      modes.push_back(Mode{pair ? "tau1.0/2" : "tau1.0", SparsityMode::Tau, 1.0f, 0.0f, per_list});
      modes.push_back(Mode{pair ? "tau1.5/2" : "tau1.5", SparsityMode::Tau, 1.5f, 0.0f, per_list});
      modes.push_back(Mode{pair ? "tau2.0/2" : "tau2.0", SparsityMode::Tau, 2.0f, 0.0f, per_list});
    }
    // ATTENTION_BENCH_FULL_LIST=1: also every block listed (top-k 100 %), the block-list path at
    // dense's work: what the list path itself costs against the dense launch.
    if (const char* full = std::getenv("ATTENTION_BENCH_FULL_LIST");
        full != nullptr && *full == '1') {
      modes.push_back(Mode{"topk100", SparsityMode::TopK, 0.0f, 100.0f});
    }
    const std::vector<std::string> wanted = env_list("ATTENTION_BENCH_MODES", "");
    for (const Mode& m : modes) {
      if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), m.name) == wanted.end()) {
        continue;
      }
      AttentionPolicy policy;
      policy.mode = m.mode;
      policy.tau = m.tau;
      if (m.keep > 0.0f) policy.keep_percent = m.keep;
      policy.query_blocks_per_list = m.query_blocks_per_list;
      // Caps tau's workspace (rows above 30 % are rare); top-k 100 % needs every block.
      policy.max_keep_percent = std::max(30.0f, m.keep);
      const WorkspaceLayout layout = workspace_layout(shape, policy);
      void* workspace = nullptr;
      CHECK(cudaMalloc(&workspace, layout.bytes));
      // The lists as launch_attention visits them: tau's rotated (BlockList::rotate_visits).
      BlockList list = workspace_block_list(layout, workspace);
      list.rotate_visits = m.mode == SparsityMode::Tau;
      const double select_ms = median_ms(
          [&] { launch_selection(shape, in.tensors(), policy, workspace, layout.bytes, nullptr); },
          reps);
      // Kept-block TFLOP/s of the flash kernel on each path (the lists are the same), and each
      // later path's output against the first's.
      std::vector<double> attend(paths.size());
      std::vector<double> vs_first(paths.size());
      for (std::size_t i = 0; i < paths.size(); ++i) {
        use_kernel(paths[i]);
        attend[i] = median_ms(
            [&] { launch_flash_forward(shape, in.tensors(), list, nullptr, 0.0f, nullptr); }, reps);
        if (paths[i] == "tma") print_timeline(m.name);
        if (i == 0) {
          in.keep_sparse();
        } else {
          vs_first[i] = in.error_vs(in.sparse, sums);
        }
      }
      use_kernel(paths[0]);
      const double attend_ms = attend[0];
      // Rotated lists also visited in order, on the first path: what rotation gains.
      double in_order_ms = 0.0;
      if (list.rotate_visits) {
        BlockList in_order = list;
        in_order.rotate_visits = false;
        in_order_ms = median_ms(
            [&] { launch_flash_forward(shape, in.tensors(), in_order, nullptr, 0.0f, nullptr); },
            reps);
      }
      const double total_ms = median_ms(
          [&] {
            launch_attention(shape, in.tensors(), policy, 0.5, workspace, layout.bytes, nullptr);
          },
          reps);
      // With the pooled means given (PooledMeans::InWorkspace: a producer such as the runtime's
      // rope kernel wrote them; here they are the ones the calls above left in the workspace).
      const double select_given_ms = median_ms(
          [&] {
            launch_selection(shape, in.tensors(), policy, workspace, layout.bytes, nullptr,
                             PooledMeans::InWorkspace);
          },
          reps);
      const double total_given_ms = median_ms(
          [&] {
            launch_attention(shape, in.tensors(), policy, 0.5, workspace, layout.bytes, nullptr,
                             PooledMeans::InWorkspace);
          },
          reps);
      const long long visited = visited_blocks(layout, workspace, shape);
      const double density = static_cast<double>(visited) / total_blocks;
      const double error = in.error_vs_dense(sums);
      std::printf(
          "%-7s N=%-6lld %-8s density %5.2f%%  select %7.3f ms  attend %8.3f ms (%6.1f TFLOP/s "
          "kept)  total %8.3f ms  speedup vs own dense %5.2fx  rel-L2 vs dense %.4f\n",
          kind, static_cast<long long>(tokens), m.name, 100.0 * density, select_ms, attend_ms,
          static_cast<double>(visited) * block_flops / attend_ms * 1e-9, total_ms,
          dense_ms / total_ms, error);
      std::printf(
          "%-7s N=%-6lld %-8s selection share %5.2f%%; means given: select %7.3f ms  total "
          "%8.3f ms  selection share %5.2f%%\n",
          kind, static_cast<long long>(tokens), m.name, 100.0 * select_ms / total_ms,
          select_given_ms, total_given_ms, 100.0 * select_given_ms / total_given_ms);
      if (in_order_ms > 0.0) {
        std::printf("%-7s N=%-6lld %-8s attend in list order %8.3f ms (%6.1f TFLOP/s kept)\n", kind,
                    static_cast<long long>(tokens), m.name, in_order_ms,
                    static_cast<double>(visited) * block_flops / in_order_ms * 1e-9);
      }
      for (std::size_t i = 1; i < paths.size(); ++i) {
        std::printf(
            "%-7s N=%-6lld %-8s attend [%-7s] %8.3f ms (%6.1f TFLOP/s kept)  rel-L2 vs [%s] "
            "%.2e\n",
            kind, static_cast<long long>(tokens), m.name, paths[i].c_str(), attend[i],
            static_cast<double>(visited) * block_flops / attend[i] * 1e-9, paths[0].c_str(),
            vs_first[i]);
      }
      CHECK(cudaFree(workspace));
    }
  }
  CHECK(cudaFree(sums));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::int64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {8192, 32768, 75600};
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs; batch 1, 24 heads, head_dim 128, bf16\n", prop.name,
              prop.multiProcessorCount);
  for (const std::int64_t n : sizes) run(n);
  return 0;
}
