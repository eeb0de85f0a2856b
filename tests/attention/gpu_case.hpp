// One GPU test case: fresh random bf16 Q/K/V for a shape, uploaded, and a poisoned output.
// Every case draws new inputs (its seed is printed on failure), so a kernel cannot pass by
// matching one lucky input.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "device_buffer.hpp"
#include "memplan/attention/attention.hpp"
#include "reference.hpp"

namespace memplan::attention::test {

inline unsigned next_seed() {
  static unsigned counter = 1234;
  return counter += 7919;
}

struct GpuCase {
  AttentionShape shape;
  unsigned seed;
  Tensor q, k, v;
  std::unique_ptr<DeviceBuffer> dq, dk, dv, dout;

  GpuCase(const AttentionShape& s, float structure) : shape(s), seed(next_seed()) {
    std::mt19937 rng(seed);
    q = random_tensor(shape, rng, structure);
    k = random_tensor(shape, rng, structure);
    v = random_tensor(shape, rng, 0.0f);
    const std::size_t bytes = static_cast<std::size_t>(shape.elements()) * 2;
    dq = std::make_unique<DeviceBuffer>(bytes);
    dk = std::make_unique<DeviceBuffer>(bytes);
    dv = std::make_unique<DeviceBuffer>(bytes);
    dout = std::make_unique<DeviceBuffer>(bytes);
    dq->upload(q.bits);
    dk->upload(k.bits);
    dv->upload(v.bits);
    dout->poison();
  }

  [[nodiscard]] AttentionTensors tensors() const {
    return AttentionTensors{dq->get(), dk->get(), dv->get(), dout->get()};
  }

  [[nodiscard]] std::vector<float> output() const {
    const auto bits = dout->download<std::uint16_t>(static_cast<std::size_t>(shape.elements()));
    std::vector<float> out(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) out[i] = from_bf16(bits[i]);
    return out;
  }
};

// Relative L2 bound for bf16 outputs against the double reference.
inline constexpr double kMaxRelativeL2 = 1e-2;

}  // namespace memplan::attention::test
