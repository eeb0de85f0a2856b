// Inputs too large to build on the host and upload (600k tokens x 16 heads x 128 is 2.5 G
// elements a tensor): each element is a function of its index, computed on the device to fill the
// tensors and on the host for the few rows a test checks, to the same bf16 bits. Half noise, half
// a pattern shared by the 64 tokens of a block (video-like), so block scores spread out and
// selection has something to choose. Every term is exact in float (a 24-bit integer times a power
// of two), so host and device agree whatever the compiler contracts.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define MEMPLAN_TEST_HD __host__ __device__
#else
#define MEMPLAN_TEST_HD
#endif

namespace memplan::attention::test {

struct HashedShape {
  std::int64_t tokens = 0;
  int heads = 0;
  int head_dim = 0;
  std::uint32_t seed = 0;
  float structure = 0.0f;  // 0: noise only (V); 0.5: the block pattern as large as the noise
};

MEMPLAN_TEST_HD inline std::uint32_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x);
}

// In [-1, 1): 24 bits, exact.
MEMPLAN_TEST_HD inline float unit(std::uint32_t h) {
  return static_cast<float>(static_cast<std::int32_t>(h >> 8) - (1 << 23)) * (1.0f / (1 << 23));
}

// The float value (before bf16 rounding) of element [b, t, h, d].
MEMPLAN_TEST_HD inline float hashed_value(const HashedShape& s, std::int64_t b, std::int64_t t,
                                          int h, int d) {
  const std::int64_t index = ((b * s.tokens + t) * s.heads + h) * s.head_dim + d;
  const float noise = unit(mix(static_cast<std::uint64_t>(index) ^ (std::uint64_t{s.seed} << 40)));
  const std::int64_t block = ((b * s.heads + h) * (s.tokens / 64 + 1) + t / 64) * s.head_dim + d;
  const float pattern =
      unit(mix(static_cast<std::uint64_t>(block) ^ (std::uint64_t{s.seed + 1} << 40)));
  return 0.5f * noise + s.structure * pattern;
}

// bf16 round to nearest even, as the device conversion does (values are finite).
MEMPLAN_TEST_HD inline std::uint16_t hashed_bits(float value) {
  std::uint32_t bits = 0;
#ifdef __CUDA_ARCH__
  bits = __float_as_uint(value);
#else
  __builtin_memcpy(&bits, &value, 4);
#endif
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

// Fills a [batch, tokens, heads, head_dim] bf16 tensor on the device (long_sequence_kernels.cu).
void fill_hashed(void* tensor, std::int64_t batch, const HashedShape& shape, void* stream);

}  // namespace memplan::attention::test
