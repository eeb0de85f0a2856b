// One arena test suite, several backends: an environment makes a backend and moves bytes in and
// out of its memory (memcpy on the host, cudaMemcpy on a GPU), so every arena and pool behaviour
// is checked the same way on each. The GPU environment skips its tests without a GPU.
#pragma once

#include "memplan/arena/backend.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace memplan::arena::test {

class BackendEnv {
 public:
  virtual ~BackendEnv() = default;
  virtual std::string name() const = 0;
  // Called first in every test's SetUp: GTEST_SKIPs when the backend cannot run here.
  virtual void skip_if_unavailable() const {}
  virtual std::unique_ptr<PhysicalBackend> make_backend() const = 0;
  virtual void write(void* dst, std::span<const std::uint8_t> bytes) const = 0;
  virtual std::vector<std::uint8_t> read(const void* src, std::size_t n) const = 0;
  // How many random pool operations the randomized test can afford here.
  virtual int random_ops() const { return 20000; }

  void fill(void* dst, std::size_t n, std::uint8_t value) const {
    const std::vector<std::uint8_t> bytes(n, value);
    write(dst, bytes);
  }
};

const BackendEnv& host_env();
const BackendEnv& gpu_env();  // in gpu_env.cpp, built with CUDA only

// Deterministic bytes that differ by seed and position, to tell buffers apart.
inline std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> out(n);
  std::uint32_t x = seed * 2654435761u + 1u;
  for (std::uint8_t& b : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::uint8_t>(x);
  }
  return out;
}

}  // namespace memplan::arena::test

// For INSTANTIATE_TEST_SUITE_P: names the instance after the environment.
struct EnvName {
  std::string operator()(const auto& info) const { return info.param->name(); }
};
