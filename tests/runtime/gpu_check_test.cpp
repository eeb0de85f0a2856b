// Check mode on the H200: the planted bug of the field report. A kernel on a side stream reads a
// buffer that the main stream frees with no event after that read; the side kernel first spins
// for 100 ms, so its read lands after the main stream's free and the next buffer's write. In
// normal mode the next buffer reuses the freed range and the reader silently gets its data; in
// check mode (poison, no reuse, guard gaps) it reads the poison, and describe_address names the
// buffer it read. Skips without a GPU.
#include <cuda_runtime.h>
#include <gmock/gmock.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "arena/gpu_kernels.hpp"
#include "memplan/arena/cuda_vmm_backend.hpp"
#include "memplan/runtime/compiler.hpp"
#include "support/gpu.hpp"

namespace memplan::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

constexpr std::size_t kWords = std::size_t{256} << 10;  // 1 MiB
constexpr std::uint32_t kNext = 0x02000000u;            // the next buffer holds kNext + i
constexpr std::uint64_t kSpinNs = 100'000'000;

struct Outcome {
  std::vector<std::uint32_t> seen;  // what the late reader copied out
  bool reused = false;              // whether the next buffer got the freed one's address
  std::string report;               // describe_address of an address the reader read
  bool mapped_after_trim = true;
};

Outcome planted_bug(const CheckOptions& check) {
  cuda_ok(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t main_stream = nullptr;
  cudaStream_t side = nullptr;
  cudaEvent_t written = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_ok(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_ok(cudaEventCreateWithFlags(&written, cudaEventDisableTiming), "cudaEventCreate");
  Outcome out;
  {
    arena::CudaVmmBackend backend;
    CompilerOptions options;
    options.reserve_bytes = std::size_t{4} << 30;
    options.chunk_bytes = std::size_t{2} << 20;
    options.pool_reserve_bytes = std::size_t{1} << 30;
    options.pool_chunk_bytes = std::size_t{2} << 20;
    options.check = check;
    Compiler compiler(backend, options);
    // The side stream's output, allocated there: the side stream becomes a user of memplan's
    // memory.
    auto* side_output =
        static_cast<std::uint32_t*>(compiler.allocate(4 * kWords, StreamRef{side}, "side output"));
    for (int s = 0; s < 2; ++s) {  // recorded, then replayed
      auto step = compiler.step("denoise");
      auto* a = static_cast<std::uint32_t*>(
          compiler.allocate(4 * kWords, StreamRef{main_stream}, "activations"));
      arena::test::launch_iota(a, kWords, 0x1000u, main_stream);
      // The reader waits for the writer (correct), then reads late...
      cuda_ok(cudaEventRecord(written, main_stream), "cudaEventRecord");
      cuda_ok(cudaStreamWaitEvent(side, written, 0), "cudaStreamWaitEvent");
      arena::test::launch_spin_then_copy(a, side_output, kWords, kSpinNs, side);
      cuda_ok(cudaGetLastError(), "launch");
      // ... but the main stream frees `a` with no event from the side stream: the planted bug.
      compiler.deallocate(a, StreamRef{main_stream});
      auto* b = static_cast<std::uint32_t*>(
          compiler.allocate(4 * kWords, StreamRef{main_stream}, "next"));
      arena::test::launch_iota(b, kWords, kNext, main_stream);
      cuda_ok(cudaGetLastError(), "launch");
      cuda_ok(cudaStreamSynchronize(side), "cudaStreamSynchronize(side)");
      cuda_ok(cudaStreamSynchronize(main_stream), "cudaStreamSynchronize(main)");
      out.seen.assign(kWords, 0);
      cuda_ok(cudaMemcpy(out.seen.data(), side_output, 4 * kWords, cudaMemcpyDeviceToHost),
              "cudaMemcpy");
      out.reused = a == b;
      out.report = compiler.describe_address(a + kWords / 2).text;
      compiler.deallocate(b, StreamRef{main_stream});
      step.end();
      compiler.trim();  // check mode: the freed pages go back once every stream passed their frees
      out.mapped_after_trim = compiler.describe_address(a).mapped;
    }
    compiler.deallocate(side_output, StreamRef{side});
  }
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cuda_ok(cudaEventDestroy(written), "cudaEventDestroy");
  cuda_ok(cudaStreamDestroy(side), "cudaStreamDestroy");
  cuda_ok(cudaStreamDestroy(main_stream), "cudaStreamDestroy");
  return out;
}

TEST(GpuCheckMode, ALateSideStreamReaderSeesPoisonAndTheReportNamesTheBuffer) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const Outcome normal = planted_bug({});
  ASSERT_TRUE(normal.reused)
      << "the premise: in normal mode the next buffer reuses the freed range";
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kWords; ++i)
    wrong += normal.seen[i] == kNext + static_cast<std::uint32_t>(i) ? 1 : 0;
  EXPECT_EQ(wrong, kWords) << "normal mode: the reader should silently get the next buffer's data";
  EXPECT_THAT(normal.report, HasSubstr("check mode is off"));

  const Outcome checked = planted_bug({.poison = true, .no_reuse = true, .guard_gaps = true});
  EXPECT_FALSE(checked.reused);
  std::size_t poisoned = 0;
  for (const std::uint32_t w : checked.seen) poisoned += w == kPoisonFreed ? 1 : 0;
  EXPECT_EQ(poisoned, kWords) << "check mode: the reader should see the free's poison everywhere";
  float as_float = 0;
  std::memcpy(&as_float, &checked.seen[0], 4);
  EXPECT_TRUE(std::isnan(as_float));
  EXPECT_THAT(checked.report, AllOf(HasSubstr("byte 524288 of buffer 'activations'"),
                                    HasSubstr("allocated in step 1 'denoise' at event 0"),
                                    HasSubstr("freed in step 1 'denoise' at event 1")));
  EXPECT_FALSE(checked.mapped_after_trim);
  RecordProperty("check_mode_report", checked.report);
}

}  // namespace
}  // namespace memplan::testing
