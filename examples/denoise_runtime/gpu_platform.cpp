// The GPU platform: one non-blocking stream, the CUDA VMM backend for memplan, CUDA Graphs, and the
// baseline: cudaMallocAsync from a dedicated pool whose release threshold is unlimited (a warm
// pool: memory freed in a step is kept for the next), its high-water marks read from the pool.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <limits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpu_ops.hpp"
#include "memplan/arena/cuda_vmm_backend.hpp"
#include "memplan/capture/cuda_graph_capturer.hpp"
#include "memplan/cuda_check.hpp"
#include "memplan/error.hpp"
#include "memplan/stream/cuda_copy_engine.hpp"
#include "platform.hpp"

namespace denoise {
namespace {

class AsyncMemory final : public BaselineMemory {
 public:
  explicit AsyncMemory(cudaStream_t stream) : stream_(stream) {
    int device = 0;
    memplan::check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    memplan::check_cuda(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    memplan::check_cuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold),
                        "cudaMemPoolSetAttribute(release threshold)");
  }
  ~AsyncMemory() override {
    (void)cudaStreamSynchronize(stream_);
    for (void* p : kept_) (void)cudaFree(p);
    if (cudaMemPoolDestroy(pool_) != cudaSuccess)
      fmt::print(stderr, "denoise: cudaMemPoolDestroy failed\n");
  }
  void* alloc(std::size_t bytes, std::string_view) override {
    void* p = nullptr;
    ++calls_;
    memplan::check_cuda(cudaMallocFromPoolAsync(&p, bytes, pool_, stream_),
                        "cudaMallocFromPoolAsync");
    return p;
  }
  void free(void* p) override {
    ++calls_;
    memplan::check_cuda(cudaFreeAsync(p, stream_), "cudaFreeAsync");
  }
  // Kept buffers (the rope cache) are not step memory: plain cudaMalloc, outside the pool.
  void* alloc_kept(std::size_t bytes, std::string_view, bool) override {
    void* p = nullptr;
    memplan::check_cuda(cudaMalloc(&p, bytes), "cudaMalloc(kept)");
    kept_.insert(p);
    return p;
  }
  void free_kept(void* p) override {
    if (kept_.erase(p) == 0) throw memplan::InvalidPointer("async baseline: kept pointer not live");
    memplan::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    memplan::check_cuda(cudaFree(p), "cudaFree(kept)");
  }
  void depends_on(const void*) override {}
  void launch(memplan::capture::Launch f) override { f(Stream{stream_}); }
  std::uint64_t reserved_high_bytes() const override {
    return attribute(cudaMemPoolAttrReservedMemHigh);
  }
  std::uint64_t used_high_bytes() const override { return attribute(cudaMemPoolAttrUsedMemHigh); }
  std::uint64_t calls() const override { return calls_; }

 private:
  std::uint64_t attribute(cudaMemPoolAttr attr) const {
    std::uint64_t v = 0;
    memplan::check_cuda(cudaMemPoolGetAttribute(pool_, attr, &v), "cudaMemPoolGetAttribute");
    return v;
  }
  cudaStream_t stream_;
  cudaMemPool_t pool_ = nullptr;
  std::unordered_set<void*> kept_;
  std::uint64_t calls_ = 0;
};

// CUDA events around each span, recorded on the stream; pairs are made once and reused.
class EventSpans final : public SpanTimer {
 public:
  explicit EventSpans(cudaStream_t stream) : stream_(stream) {}
  ~EventSpans() override {
    for (auto& [begin, end] : events_) {
      (void)cudaEventDestroy(begin);
      (void)cudaEventDestroy(end);
    }
  }
  void begin(Stream s) override {
    if (used_ == events_.size()) {
      std::pair<cudaEvent_t, cudaEvent_t> pair{};
      memplan::check_cuda(cudaEventCreate(&pair.first), "cudaEventCreate");
      memplan::check_cuda(cudaEventCreate(&pair.second), "cudaEventCreate");
      events_.push_back(pair);
    }
    memplan::check_cuda(cudaEventRecord(events_[used_].first, on(s)), "cudaEventRecord(begin)");
  }
  void end(Stream s) override {
    memplan::check_cuda(cudaEventRecord(events_[used_].second, on(s)), "cudaEventRecord(end)");
    ++used_;
  }
  double take_ms() override {
    double total = 0;
    for (std::size_t i = 0; i < used_; ++i) {
      memplan::check_cuda(cudaEventSynchronize(events_[i].second), "cudaEventSynchronize");
      float ms = 0;
      memplan::check_cuda(cudaEventElapsedTime(&ms, events_[i].first, events_[i].second),
                          "cudaEventElapsedTime");
      total += ms;
    }
    used_ = 0;
    return total;
  }

 private:
  cudaStream_t on(Stream s) const {
    return s.native != nullptr ? static_cast<cudaStream_t>(s.native) : stream_;
  }
  cudaStream_t stream_;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events_;
  std::size_t used_ = 0;
};

class GpuPlatform final : public Platform {
 public:
  GpuPlatform(int device, std::vector<int> peers) : device_(device), peers_(std::move(peers)) {
    memplan::check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    cudaDeviceProp prop{};
    memplan::check_cuda(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = fmt::format("{} ({} SMs, {} MiB){}", prop.name, prop.multiProcessorCount,
                        prop.totalGlobalMem >> 20,
                        device_ != 0 ? fmt::format(", device {}", device_) : std::string());
    memplan::check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                        "cudaStreamCreateWithFlags");
    ops_ = make_gpu_ops(stream_);
    used_at_start_ = used_now();
  }
  ~GpuPlatform() override {
    ops_.reset();
    if (stream_ != nullptr) {
      (void)cudaStreamSynchronize(stream_);
      (void)cudaStreamDestroy(stream_);
    }
  }
  bool gpu() const override { return true; }
  std::string device_name() const override { return name_; }
  Ops& ops() override { return *ops_; }
  Stream stream() override { return Stream{stream_}; }
  void synchronize() override {
    memplan::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  std::unique_ptr<memplan::arena::PhysicalBackend> make_backend() override {
    return std::make_unique<memplan::arena::CudaVmmBackend>(
        memplan::arena::CudaVmmOptions{.device = device_, .peer_devices = peers_});
  }
  memplan::capture::StepCapturer& capturer() override { return capturer_; }
  std::unique_ptr<BaselineMemory> make_baseline() override {
    return std::make_unique<AsyncMemory>(stream_);
  }
  std::unique_ptr<memplan::stream::CopyEngine> make_copy_engine() override {
    return std::make_unique<memplan::stream::CudaCopyEngine>();
  }
  std::optional<std::uint64_t> device_used_bytes() override {
    const std::uint64_t used = used_now();
    return used > used_at_start_ ? used - used_at_start_ : 0;
  }
  std::unique_ptr<SpanTimer> make_span_timer() override {
    return std::make_unique<EventSpans>(stream_);
  }

 private:
  static std::uint64_t used_now() {
    std::size_t free = 0, total = 0;
    memplan::check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return total - free;
  }

  int device_;
  std::vector<int> peers_;  // devices mapped into this one's memory (the VMM backend's)
  std::string name_;
  cudaStream_t stream_ = nullptr;
  std::uint64_t used_at_start_ = 0;  // the context, cuBLAS and its workspace: not the run's
  std::unique_ptr<Ops> ops_;
  memplan::capture::CudaGraphCapturer capturer_;
};

}  // namespace

std::unique_ptr<Platform> make_gpu_platform(int device, std::vector<int> peer_devices) {
  std::vector<int> peers;
  for (int peer : peer_devices) {
    int reach = 0;
    memplan::check_cuda(cudaDeviceCanAccessPeer(&reach, peer, device), "cudaDeviceCanAccessPeer");
    if (reach != 0) peers.push_back(peer);
  }
  return std::make_unique<GpuPlatform>(device, std::move(peers));
}

int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

bool gpu_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return count > 0 && memplan::arena::CudaVmmBackend::available();
}

}  // namespace denoise
