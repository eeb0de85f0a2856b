// Test helpers: an owning device buffer and host<->bf16 conversions. Every CUDA call is checked,
// so a failed copy fails the test instead of comparing garbage.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace memplan::attention::test {

inline void cuda_ok(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(status));
  }
}
#define TEST_CUDA(call) ::memplan::attention::test::cuda_ok((call), #call)

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    TEST_CUDA(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes));
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] void* get() const { return ptr_; }
  template <typename T>
  [[nodiscard]] T* as() const {
    return static_cast<T*>(ptr_);
  }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }

  template <typename T>
  void upload(const std::vector<T>& host) {
    TEST_CUDA(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  template <typename T>
  [[nodiscard]] std::vector<T> download(std::size_t count) const {
    std::vector<T> host(count);
    TEST_CUDA(cudaMemcpy(host.data(), ptr_, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  // 0xFF bytes: bf16 NaN, so an element the kernel never wrote fails every comparison.
  void poison() { TEST_CUDA(cudaMemset(ptr_, 0xFF, bytes_)); }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

inline std::uint16_t to_bf16(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, 4);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even (inputs are finite)
  return static_cast<std::uint16_t>(bits >> 16);
}

inline float from_bf16(std::uint16_t value) {
  const std::uint32_t bits = static_cast<std::uint32_t>(value) << 16;
  float out = 0.0f;
  std::memcpy(&out, &bits, 4);
  return out;
}

}  // namespace memplan::attention::test
