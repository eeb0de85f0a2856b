// The CPU platform: float loops, the host backend (mmap/memfd, the VMM model on Linux) for
// memplan, the host step capturer, and malloc as the baseline.
#include <chrono>
#include <cstdlib>
#include <unordered_map>

#include "cpu_ops.hpp"
#include "memplan/arena/host_backend.hpp"
#include "memplan/error.hpp"
#include "platform.hpp"

namespace denoise {
namespace {

class MallocMemory final : public BaselineMemory {
 public:
  ~MallocMemory() override {
    for (auto& [p, bytes] : live_) std::free(p);
  }
  void* alloc(std::size_t bytes, std::string_view) override {
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (p == nullptr) throw memplan::OutOfMemory("malloc baseline: aligned_alloc failed");
    ++calls_;
    live_[p] = bytes;
    used_ += bytes;
    high_ = std::max(high_, used_);
    return p;
  }
  void free(void* p) override {
    const auto it = live_.find(p);
    if (it == live_.end()) throw memplan::InvalidPointer("malloc baseline: pointer not live");
    ++calls_;
    used_ -= it->second;
    live_.erase(it);
    std::free(p);
  }
  void* alloc_kept(std::size_t bytes, std::string_view tag, bool) override {
    void* p = alloc(bytes, tag);  // kept buffers are not step memory: not counted
    used_ -= bytes;
    kept_ += bytes;
    return p;
  }
  void free_kept(void* p) override {
    const auto it = live_.find(p);
    if (it == live_.end()) throw memplan::InvalidPointer("malloc baseline: kept pointer not live");
    kept_ -= it->second;
    used_ += it->second;
    free(p);
  }
  void depends_on(const void*) override {}
  void launch(memplan::capture::Launch f) override { f(Stream{}); }
  std::uint64_t reserved_high_bytes() const override { return high_; }
  std::uint64_t used_high_bytes() const override { return high_; }
  std::uint64_t calls() const override { return calls_; }

 private:
  std::unordered_map<void*, std::size_t> live_;
  std::uint64_t used_ = 0, high_ = 0, kept_ = 0, calls_ = 0;
};

// Ops run at the call here: the host clock around each span is the span.
class ClockSpans final : public SpanTimer {
 public:
  void begin(Stream) override { start_ = std::chrono::steady_clock::now(); }
  void end(Stream) override { total_ += std::chrono::steady_clock::now() - start_; }
  double take_ms() override {
    const double ms = std::chrono::duration<double, std::milli>(total_).count();
    total_ = {};
    return ms;
  }

 private:
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::duration total_{};
};

class CpuPlatform final : public Platform {
 public:
  bool gpu() const override { return false; }
  std::string device_name() const override { return "CPU, memplan on the host backend"; }
  Ops& ops() override { return *ops_; }
  Stream stream() override { return Stream{}; }  // ops run at once on this thread
  void synchronize() override {}
  std::unique_ptr<memplan::arena::PhysicalBackend> make_backend() override {
    return std::make_unique<memplan::arena::HostBackend>();
  }
  memplan::capture::StepCapturer& capturer() override { return capturer_; }
  std::unique_ptr<BaselineMemory> make_baseline() override {
    return std::make_unique<MallocMemory>();
  }
  // The copies run on their own thread, beside the compute on this one.
  std::unique_ptr<memplan::stream::CopyEngine> make_copy_engine() override {
    return std::make_unique<memplan::stream::HostCopyEngine>();
  }
  std::optional<std::uint64_t> device_used_bytes() override { return std::nullopt; }
  std::unique_ptr<SpanTimer> make_span_timer() override { return std::make_unique<ClockSpans>(); }

 private:
  std::unique_ptr<Ops> ops_ = make_cpu_ops();
  memplan::capture::HostStepCapturer capturer_;
};

}  // namespace

std::unique_ptr<Platform> make_cpu_platform() { return std::make_unique<CpuPlatform>(); }

#ifndef MEMPLAN_HAVE_CUDA_GRAPHS
std::unique_ptr<Platform> make_gpu_platform(int, std::vector<int>) {
  throw memplan::CudaError("this build of denoise_runtime has no CUDA; use --device=cpu");
}
bool gpu_available() { return false; }
int gpu_count() { return 0; }
#endif

}  // namespace denoise
