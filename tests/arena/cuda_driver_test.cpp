// Without a driver, the VMM backend says so clearly instead of failing to load or crashing.
#include "memplan/arena/cuda_vmm_backend.hpp"
#include "memplan/error.hpp"

#include <gmock/gmock.h>

namespace memplan::arena {
namespace {

TEST(CudaDriver, WithoutADriverTheBackendThrowsAClearError) {
  if (CudaVmmBackend::available()) GTEST_SKIP() << "a CUDA driver and device are present";
  try {
    CudaVmmBackend backend;
    FAIL() << "constructed without a usable driver";
  } catch (const CudaError& e) {
    EXPECT_THAT(e.what(), ::testing::AnyOf(::testing::HasSubstr("CUDA driver not available"),
                                           ::testing::HasSubstr("cuDeviceGetCount")));
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("does not exist"));  // a driver with no device
  }
}

}  // namespace
}  // namespace memplan::arena
