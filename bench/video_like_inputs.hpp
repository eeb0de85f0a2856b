// The attention benches' inputs, element by element: one definition for the device fill of
// attention_bench.cu and the host fill of selection_granularity.cpp, so both benches measure the
// same distribution. Gaussian noise, plus for `smooth` a low-frequency wave over the (frame, row,
// column) position of each token in 45x80 frames, with a random direction and phase per (head,
// dim) channel: nearby tokens, in space and time, get similar vectors, as in a video latent.
// (Host and device math libraries may differ in the last bits; the benches need the
// distribution, not bit equality.)
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define MEMPLAN_BENCH_HD __host__ __device__
#else
#define MEMPLAN_BENCH_HD
#endif

namespace memplan::bench {

MEMPLAN_BENCH_HD inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// In (0, 1): 24 bits.
MEMPLAN_BENCH_HD inline float uniform(std::uint64_t x) {
  return (static_cast<float>(mix(x) >> 40) + 0.5f) * (1.0f / 16777216.0f);
}

// Element `i` of a [batch, tokens, heads, head_dim] tensor with `channels` = heads * head_dim,
// before bf16 rounding.
MEMPLAN_BENCH_HD inline float video_like_value(std::uint64_t i, std::uint64_t channels,
                                               std::uint64_t seed, bool smooth) {
  const float u1 = uniform(seed * 0x100000001ull + 2 * i);
  const float u2 = uniform(seed * 0x100000001ull + 2 * i + 1);
  float value = sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
  if (smooth) {
    const std::uint64_t t = i / channels;
    const std::uint64_t c = i % channels;
    const auto col = static_cast<float>(t % 80);
    const auto row = static_cast<float>((t / 80) % 45);
    const auto frame = static_cast<float>(t / 3600);
    const std::uint64_t key = seed * 7919ull + c;
    const float wx = 0.3f * (uniform(key * 4) - 0.5f);
    const float wy = 0.3f * (uniform(key * 4 + 1) - 0.5f);
    const float wf = 0.6f * (uniform(key * 4 + 2) - 0.5f);
    const float phase = 6.2831853f * uniform(key * 4 + 3);
    value = 0.3f * value + 2.0f * sinf(wx * col + wy * row + wf * frame + phase);
  }
  return value;
}

}  // namespace memplan::bench
