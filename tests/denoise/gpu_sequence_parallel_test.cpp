// The sequence-parallel runtime on GPUs (NCCL, one thread per GPU), and two processes each on its
// own GPU. Skips without a GPU or without NCCL, and the tests that need two GPUs skip with fewer.
// What each one tells, in one run:
//   - one rank through the exchange against the one-device path on GPU 0: the same GEMM shapes
//     and kernels, the exchange only moves bytes, so bit for bit; a failure prints the difference.
//   - two ranks against one GPU: each GEMM runs on half the rows and attention on half the heads,
//     so cuBLAS may pick other kernels; within the runtime's bf16 tolerance, the difference
//     recorded (property max_abs_difference) either way, the two ranks equal bit for bit.
//   - two processes, each on its own GPU, at the same time: both hold the runtime's guarantees
//     and produce the same latents bit for bit.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "memplan/comm/nccl.hpp"
#include "memplan/error.hpp"
#include "sequence_parallel_case.hpp"
#include "support/gpu.hpp"

extern char** environ;

namespace denoise::testing {
namespace {

#define SKIP_WITHOUT_GPUS(n)                                                        \
  do {                                                                              \
    MEMPLAN_SKIP_WITHOUT_GPU();                                                     \
    if (gpu_count() < (n))                                                          \
      GTEST_SKIP() << "needs " << (n) << " GPUs, this machine has " << gpu_count(); \
  } while (0)

#define SKIP_WITHOUT_NCCL()                         \
  do {                                              \
    if (!memplan::comm::NcclLibrary::available()) { \
      try {                                         \
        (void)memplan::comm::NcclLibrary::get();    \
      } catch (const std::exception& e) {           \
        GTEST_SKIP() << e.what();                   \
      }                                             \
    }                                               \
  } while (0)

Config gpu_case() {
  Config c = small_config(true);  // 256 then 384 tokens, dense and sparse steps
  c.heads = 4;
  return c;
}

TEST(GpuSequenceParallel, OneRankThroughTheExchangeIsTheOneDevicePathBitForBit) {
  SKIP_WITHOUT_GPUS(1);
  SKIP_WITHOUT_NCCL();
  const Config c = gpu_case();
  std::vector<ModeResult> one;
  {
    auto platform = make_gpu_platform(0);
    one = run_all(c, *platform);
  }
  const auto sharded = run_ranks(c, 1, true);
  expect_ranks_hold(sharded, one);
  for (std::size_t m = 0; m < one.size(); ++m) {
    EXPECT_TRUE(bitwise_equal(sharded[0].modes[m].latents, one[m].latents))
        << one[m].name << ": max |difference| "
        << max_abs_difference(sharded[0].modes[m].latents, one[m].latents);
  }
}

TEST(GpuSequenceParallel, TwoRanksMatchOneGpuWithinBf16Tolerance) {
  SKIP_WITHOUT_GPUS(2);
  SKIP_WITHOUT_NCCL();
  const Config c = gpu_case();
  std::vector<ModeResult> one;
  {
    auto platform = make_gpu_platform(0);
    one = run_all(c, *platform);
  }
  const auto sharded = run_ranks(c, 2, true);
  expect_ranks_hold(sharded, one);
  double worst = 0;
  for (std::size_t m = 0; m < one.size(); ++m) {
    const OutputCheck check = compare_outputs({one[m], sharded[0].modes[m]});
    EXPECT_TRUE(check.within_tolerance)
        << one[m].name << ": max |difference| " << check.max_abs_diff << ", largest |latent| "
        << check.max_abs;
    std::printf("[ two ranks vs one GPU ] %s: %s, max |difference| %.6g, largest |latent| %.6g\n",
                one[m].name.c_str(), check.bitwise ? "bitwise equal" : "not bitwise",
                check.max_abs_diff, check.max_abs);
    worst = std::max(worst, check.max_abs_diff);
  }
  RecordProperty("max_abs_difference", std::to_string(worst));
}

TEST(GpuSequenceParallel, MoreRanksThanGpusIsRefusedNamingTheCount) {
  SKIP_WITHOUT_GPUS(1);
  Config c = gpu_case();
  const int ranks = gpu_count() + 1;
  c.ranks = ranks;
  c.heads = ranks;
  c.tokens = 64 * ranks;
  c.second_tokens = 0;
  apply_preset(c, true);
  try {
    (void)run_sequence_parallel(c, true);
    ADD_FAILURE() << "no error";
  } catch (const memplan::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("--ranks {} needs {} GPUs (one per rank); "
                                                     "this process sees {}",
                                                     ranks, ranks, gpu_count())),
              std::string::npos)
        << e.what();
  }
}

// The child of TwoProcessesEachOnItsOwnGpuNeverInterfere: the runtime on the device the parent
// names, its guarantees checked here, its latents' fingerprint printed for the parent.
constexpr const char* kChildDevice = "MEMPLAN_TEST_CHILD_DEVICE";

TEST(GpuSequenceParallel, ChildProcessRunsOnItsOwnGpu) {
  const char* device = std::getenv(kChildDevice);
  if (device == nullptr)
    GTEST_SKIP() << "run by TwoProcessesEachOnItsOwnGpuNeverInterfere, in a process of its own";
  auto platform = make_gpu_platform(std::atoi(device));
  const auto results = run_all(small_config(true), *platform);
  expect_runtime_holds(results, false);
  std::printf("child latents %016llx\n",
              static_cast<unsigned long long>(fingerprint(results.front().latents)));
}

TEST(GpuSequenceParallel, TwoProcessesEachOnItsOwnGpuNeverInterfere) {
  SKIP_WITHOUT_GPUS(2);
  std::vector<pid_t> children;
  std::vector<std::string> logs;
  for (int d = 0; d < 2; ++d) {
    logs.push_back(::testing::TempDir() + "sp_child_" + std::to_string(getpid()) + "_" +
                   std::to_string(d) + ".log");
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, logs.back().c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    std::string filter = "--gtest_filter=GpuSequenceParallel.ChildProcessRunsOnItsOwnGpu";
    std::string self = "/proc/self/exe";
    std::vector<char*> argv{self.data(), filter.data(), nullptr};
    std::vector<std::string> env_text{std::string(kChildDevice) + "=" + std::to_string(d)};
    for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
    std::vector<char*> env;
    for (std::string& e : env_text) env.push_back(e.data());
    env.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, "/proc/self/exe", &files, nullptr, argv.data(), env.data());
    posix_spawn_file_actions_destroy(&files);
    ASSERT_EQ(rc, 0) << "posix_spawn: " << std::strerror(rc);
    children.push_back(pid);
  }
  std::vector<std::string> fingerprints;
  for (int d = 0; d < 2; ++d) {
    int status = 0;
    ASSERT_EQ(waitpid(children[d], &status, 0), children[d]);
    std::ifstream in(logs[d]);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child on GPU " << d << " failed:\n"
        << text.str();
    EXPECT_NE(text.str().find("[  PASSED  ] 1 test"), std::string::npos)
        << "child on GPU " << d << " did not run its test:\n"
        << text.str();
    const auto at = text.str().find("child latents ");
    fingerprints.push_back(at == std::string::npos ? "none" : text.str().substr(at + 14, 16));
  }
  EXPECT_NE(fingerprints[0], "none");
  EXPECT_EQ(fingerprints[0], fingerprints[1]) << "the two GPUs' latents differ";
}

}  // namespace
}  // namespace denoise::testing
