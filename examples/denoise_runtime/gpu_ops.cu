// GPU kernels of the model (see gpu_ops.hpp). No fmt/spdlog here: nvcc compiles this file.
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "attention_policy.hpp"
#include "gpu_ops.hpp"
#include "memplan/attention/attention.hpp"
#include "memplan/attention/rope.hpp"
#include "memplan/cuda_check.hpp"
#include "memplan/error.hpp"

namespace denoise {
namespace {

using bf16 = __nv_bfloat16;

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw memplan::CudaError(std::string(call) + " failed: " + cublasGetStatusString(status) +
                             " (" + std::to_string(static_cast<int>(status)) + ")");
  }
}

unsigned grid(std::int64_t n, int threads = 256) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

__device__ float hash_uniform(unsigned long long seed, unsigned long long i) {
  unsigned long long z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f;
}

__global__ void fill_kernel(void* p, std::int64_t n, unsigned long long seed, float scale,
                            bool act) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float v = scale * hash_uniform(seed, static_cast<unsigned long long>(i));
  if (act)
    static_cast<bf16*>(p)[i] = __float2bfloat16(v);
  else
    static_cast<float*>(p)[i] = v;
}

__global__ void embed_kernel(bf16* h, const float* x, const bf16* temb, const float* sched,
                             const int* counter, std::int64_t n, int hidden) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float t = sched[*counter];
  h[i] = __float2bfloat16(x[i] + t * __bfloat162float(temb[i % hidden]));
}

__global__ void rmsnorm_kernel(bf16* out, const bf16* in, const bf16* gain, int cols) {
  const std::int64_t row = blockIdx.x;
  const bf16* x = in + row * cols;
  float ss = 0;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += blockDim.x) {
    const float v = __bfloat162float(x[c]);
    ss += v * v;
  }
  __shared__ float partial[32];
  for (int o = 16; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    ss = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x == 0) partial[0] = ss;
  }
  __syncthreads();
  const float inv = rsqrtf(partial[0] / static_cast<float>(cols) + 1e-6f);
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += blockDim.x) {
    out[row * cols + c] =
        __float2bfloat16(__bfloat162float(x[c]) * inv * __bfloat162float(gain[c]));
  }
}

__global__ void rope_table_kernel(float* table, std::int64_t tokens, int head_dim) {
  const int half = head_dim / 2;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= tokens * half) return;
  const std::int64_t t = i / half;
  const int j = static_cast<int>(i % half);
  const double angle = static_cast<double>(t) * pow(10000.0, -2.0 * j / head_dim);
  table[2 * i] = static_cast<float>(cos(angle));
  table[2 * i + 1] = static_cast<float>(sin(angle));
}

__global__ void gelu_kernel(bf16* x, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float v = __bfloat162float(x[i]);
  x[i] = __float2bfloat16(0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))));
}

__global__ void add_kernel(bf16* h, const bf16* o, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  h[i] = __float2bfloat16(__bfloat162float(h[i]) + (o != nullptr ? __bfloat162float(o[i]) : 1.0f));
}

__global__ void euler_kernel(float* x, const bf16* v, const float* sched, const int* counter,
                             std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int c = *counter;
  x[i] += (sched[c + 1] - sched[c]) * __bfloat162float(v[i]);
}

__global__ void advance_kernel(int* counter) { ++*counter; }

__global__ void blend_kernel(float* x2, const float* x1, std::int64_t t2, std::int64_t t1,
                             int hidden, float a) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= t2 * hidden) return;
  const std::int64_t t = i / hidden;
  const int c = static_cast<int>(i % hidden);
  x2[i] = a * x1[(t % t1) * hidden + c] + (1.0f - a) * x2[i];
}

// dst[j][i] = src[i][j] (i < a, j < b), each element a chunk of `words` Words; one thread a word.
template <class Word>
__global__ void transpose_blocks_kernel(Word* dst, const Word* src, std::int64_t a, std::int64_t b,
                                        std::int64_t words, std::int64_t total) {
  const std::int64_t w = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (w >= total) return;
  const std::int64_t chunk = w / words;  // j * a + i
  const std::int64_t i = chunk % a, j = chunk / a;
  dst[w] = src[(i * b + j) * words + w % words];
}

template <class Word>
void launch_transpose_blocks(void* dst, const void* src, std::int64_t a, std::int64_t b,
                             std::size_t chunk_bytes, cudaStream_t stream) {
  const auto words = static_cast<std::int64_t>(chunk_bytes / sizeof(Word));
  const std::int64_t total = a * b * words;
  if (total == 0) return;
  transpose_blocks_kernel<Word><<<grid(total), 256, 0, stream>>>(
      static_cast<Word*>(dst), static_cast<const Word*>(src), a, b, words, total);
  memplan::check_launch("transpose_blocks_kernel");
}

class GpuOps final : public Ops {
 public:
  explicit GpuOps(cudaStream_t stream) : stream_(stream) {
    check_cublas(cublasCreate(&handle_), "cublasCreate");
    memplan::check_cuda(cudaMalloc(&cublas_ws_, kCublasWorkspace), "cudaMalloc(cuBLAS workspace)");
    bind(stream_);
  }
  ~GpuOps() override {
    if (handle_ != nullptr && cublasDestroy(handle_) != CUBLAS_STATUS_SUCCESS) {
      std::fputs("denoise_runtime: cublasDestroy failed\n", stderr);  // destructors never throw
    }
    if (cublas_ws_ != nullptr) (void)cudaFree(cublas_ws_);
  }

  std::string name() const override { return "cuBLAS bf16 + memplan attention"; }
  std::size_t act_bytes() const override { return 2; }
  std::size_t attention_workspace(const Dims& d, Attn attn) const override {
    return memplan::attention::workspace_bytes(shape(d),
                                               attention_policy(attn, query_blocks_per_list()));
  }

  void* alloc_fixed(std::size_t bytes) override {
    void* p = nullptr;
    memplan::check_cuda(cudaMalloc(&p, bytes), "cudaMalloc(fixed)");
    return p;
  }
  void free_fixed(void* p) noexcept override { (void)cudaFree(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    memplan::check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_),
                        "cudaMemcpyAsync(upload)");
    memplan::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    memplan::check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
                        "cudaMemcpyAsync(download)");
    memplan::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void* alloc_host(std::size_t bytes) override {
    void* p = nullptr;
    memplan::check_cuda(cudaMallocHost(&p, bytes), "cudaMallocHost(weights)");
    return p;
  }
  void free_host(void* p) noexcept override { (void)cudaFreeHost(p); }
  void copy_blocking(void* dst, const void* src, std::size_t bytes, Stream s) override {
    memplan::check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, on(s)),
                        "cudaMemcpyAsync(naive weights)");
    memplan::check_cuda(cudaStreamSynchronize(on(s)), "cudaStreamSynchronize(naive weights)");
  }

  void fill(void* p, std::int64_t n, std::uint64_t seed, float scale, bool act, Stream s) override {
    fill_kernel<<<grid(n), 256, 0, on(s)>>>(p, n, seed, scale, act);
    memplan::check_launch("fill_kernel");
  }
  void embed(void* h, const float* x, const void* temb, const float* sched, const int* counter,
             std::int64_t tokens, int hidden, Stream s) override {
    const std::int64_t n = tokens * hidden;
    embed_kernel<<<grid(n), 256, 0, on(s)>>>(
        static_cast<bf16*>(h), x, static_cast<const bf16*>(temb), sched, counter, n, hidden);
    memplan::check_launch("embed_kernel");
  }
  void rmsnorm(void* out, const void* in, const void* gain, std::int64_t rows, int cols,
               Stream s) override {
    rmsnorm_kernel<<<static_cast<unsigned>(rows), 256, 0, on(s)>>>(
        static_cast<bf16*>(out), static_cast<const bf16*>(in), static_cast<const bf16*>(gain),
        cols);
    memplan::check_launch("rmsnorm_kernel");
  }
  void gemm(void* out, const void* in, const void* w, std::int64_t m, int k, int n,
            Stream s) override {
    bind(on(s));
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major out[m,n] = in[m,k] w[k,n] is column-major out^T = w^T in^T.
    check_cublas(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, static_cast<int>(m), k, &alpha,
                              w, CUDA_R_16BF, n, in, CUDA_R_16BF, k, &beta, out, CUDA_R_16BF, n,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }
  void gemm_qkv(void* qkv, const void* in, const void* w, std::int64_t m, int hidden,
                Stream s) override {
    bind(on(s));
    const float alpha = 1.0f, beta = 0.0f;
    const long long hh = static_cast<long long>(hidden) * hidden;
    check_cublas(cublasGemmStridedBatchedEx(
                     handle_, CUBLAS_OP_N, CUBLAS_OP_N, hidden, static_cast<int>(m), hidden, &alpha,
                     w, CUDA_R_16BF, hidden, hh, in, CUDA_R_16BF, hidden, 0, &beta, qkv,
                     CUDA_R_16BF, hidden, m * hidden, 3, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx");
  }
  void rope_table(float* table, std::int64_t tokens, int head_dim, Stream s) override {
    rope_table_kernel<<<grid(tokens * head_dim / 2), 256, 0, on(s)>>>(table, tokens, head_dim);
    memplan::check_launch("rope_table_kernel");
  }
  bool rope_can_pool() const override { return true; }
  // The library's RoPE kernel (memplan/attention/rope.hpp), with the pooled means when given.
  void rope(void* q, void* k, const float* table, const Dims& d, void* means, Attn attn,
            Stream s) override {
    const memplan::attention::RopeTable rope{table, memplan::attention::RopePairs::Interleaved};
    if (means == nullptr) {
      memplan::attention::launch_rope(shape(d), q, k, rope, on(s));
      return;
    }
    const auto policy = attention_policy(attn, query_blocks_per_list());
    memplan::attention::launch_rope_with_means(
        shape(d), q, k, rope, policy, means,
        memplan::attention::workspace_layout(shape(d), policy).bytes, on(s));
  }
  void attention(void* out, const void* q, const void* k, const void* v, void* ws,
                 std::size_t ws_bytes, const Dims& d, Attn attn, bool means_given,
                 Stream s) override {
    (void)memplan::attention::launch_attention(
        shape(d), {q, k, v, out}, attention_policy(attn, query_blocks_per_list()), 0.5, ws,
        ws_bytes, on(s),
        means_given ? memplan::attention::PooledMeans::InWorkspace
                    : memplan::attention::PooledMeans::Compute);
  }
  void gelu(void* x, std::int64_t n, Stream s) override {
    gelu_kernel<<<grid(n), 256, 0, on(s)>>>(static_cast<bf16*>(x), n);
    memplan::check_launch("gelu_kernel");
  }
  void add(void* h, const void* o, std::int64_t n, Stream s) override {
    add_kernel<<<grid(n), 256, 0, on(s)>>>(static_cast<bf16*>(h), static_cast<const bf16*>(o), n);
    memplan::check_launch("add_kernel");
  }
  void euler(float* x, const void* v, const float* sched, const int* counter, std::int64_t n,
             Stream s) override {
    euler_kernel<<<grid(n), 256, 0, on(s)>>>(x, static_cast<const bf16*>(v), sched, counter, n);
    memplan::check_launch("euler_kernel");
  }
  void advance(int* counter, Stream s) override {
    advance_kernel<<<1, 1, 0, on(s)>>>(counter);
    memplan::check_launch("advance_kernel");
  }
  void blend(float* x2, const float* x1, std::int64_t t2, std::int64_t t1, int hidden, float a,
             Stream s) override {
    blend_kernel<<<grid(t2 * hidden), 256, 0, on(s)>>>(x2, x1, t2, t1, hidden, a);
    memplan::check_launch("blend_kernel");
  }
  void copy(void* dst, const void* src, std::size_t bytes, Stream s) override {
    memplan::check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, on(s)),
                        "cudaMemcpyAsync(device to device)");
  }
  // The widest word (16 bytes down to 1) that divides the chunk and both addresses.
  void transpose_blocks(void* dst, const void* src, std::int64_t a, std::int64_t b,
                        std::size_t chunk_bytes, Stream s) override {
    const std::size_t align =
        chunk_bytes | reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src);
    if (align % 16 == 0)
      launch_transpose_blocks<uint4>(dst, src, a, b, chunk_bytes, on(s));
    else if (align % 8 == 0)
      launch_transpose_blocks<uint2>(dst, src, a, b, chunk_bytes, on(s));
    else if (align % 4 == 0)
      launch_transpose_blocks<unsigned>(dst, src, a, b, chunk_bytes, on(s));
    else if (align % 2 == 0)
      launch_transpose_blocks<unsigned short>(dst, src, a, b, chunk_bytes, on(s));
    else
      launch_transpose_blocks<unsigned char>(dst, src, a, b, chunk_bytes, on(s));
  }

 private:
  static constexpr std::size_t kCublasWorkspace = std::size_t{32} << 20;

  static memplan::attention::AttentionShape shape(const Dims& d) {
    return {1, d.tokens, d.heads, d.head_dim};
  }
  cudaStream_t on(Stream s) const {
    return s.native != nullptr ? static_cast<cudaStream_t>(s.native) : stream_;
  }
  // cublasSetStream resets the workspace to cuBLAS's own pool, so both are set together, and only
  // when the stream changes (never inside a capture in this runtime: one stream).
  void bind(cudaStream_t stream) {
    if (bound_ && stream == bound_stream_) return;
    check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
    check_cublas(cublasSetWorkspace(handle_, cublas_ws_, kCublasWorkspace), "cublasSetWorkspace");
    bound_ = true;
    bound_stream_ = stream;
  }

  cudaStream_t stream_;
  cublasHandle_t handle_ = nullptr;
  void* cublas_ws_ = nullptr;
  bool bound_ = false;
  cudaStream_t bound_stream_ = nullptr;
};

}  // namespace

std::unique_ptr<Ops> make_gpu_ops(cudaStream_t stream) { return std::make_unique<GpuOps>(stream); }

}  // namespace denoise
