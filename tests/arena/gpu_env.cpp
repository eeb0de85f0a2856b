// The GPU environment (CUDA VMM backend, bytes moved with cudaMemcpy), and the GPU instances of
// the shared suites. Every test skips without a GPU (MEMPLAN_SKIP_WITHOUT_GPU in SetUp).
#include "arena_suite.hpp"
#include "memplan/arena/cuda_vmm_backend.hpp"
#include "support/gpu.hpp"

#include <stdexcept>

namespace memplan::arena::test {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

class GpuEnv final : public BackendEnv {
 public:
  std::string name() const override { return "Gpu"; }
  void skip_if_unavailable() const override { skip(); }
  std::unique_ptr<PhysicalBackend> make_backend() const override {
    check(cudaSetDevice(0), "cudaSetDevice");
    return std::make_unique<CudaVmmBackend>();
  }
  void write(void* dst, std::span<const std::uint8_t> bytes) const override {
    check(cudaMemcpy(dst, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  std::vector<std::uint8_t> read(const void* src, std::size_t n) const override {
    std::vector<std::uint8_t> out(n);
    check(cudaMemcpy(out.data(), src, n, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return out;
  }
  int random_ops() const override { return 4000; }

 private:
  static void skip() { MEMPLAN_SKIP_WITHOUT_GPU(); }
};

}  // namespace

const BackendEnv& gpu_env() {
  static const GpuEnv env;
  return env;
}

INSTANTIATE_TEST_SUITE_P(Gpu, ArenaSuite, ::testing::Values(&gpu_env()), EnvName{});
INSTANTIATE_TEST_SUITE_P(Gpu, PoolSuite, ::testing::Values(&gpu_env()), EnvName{});
INSTANTIATE_TEST_SUITE_P(Gpu, CheckHeapSuite, ::testing::Values(&gpu_env()), EnvName{});

}  // namespace memplan::arena::test
