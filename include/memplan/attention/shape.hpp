// The shape of one attention call: Q, K, V and the output are [batch, tokens, heads, head_dim]
// bf16 tensors, contiguous. Blocks are 64 tokens; the last one may be partial (a masked tail).
#pragma once

#include <cstdint>

#include "memplan/attention/policy.hpp"

namespace memplan::attention {

struct AttentionShape {
  int batch = 1;
  std::int64_t tokens = 0;
  int heads = 1;
  int head_dim = 128;

  [[nodiscard]] constexpr int blocks() const {
    return static_cast<int>((tokens + kBlockTokens - 1) / kBlockTokens);
  }
  // Rows of the block list: one per (batch, head, query block).
  [[nodiscard]] constexpr std::int64_t rows() const {
    return static_cast<std::int64_t>(batch) * heads * blocks();
  }
  [[nodiscard]] constexpr std::int64_t elements() const {
    return static_cast<std::int64_t>(batch) * tokens * heads * head_dim;
  }
};

// Largest block count selection supports: a row's scores live in shared memory (4 B a block), and
// one row beside the CTA's fixed scratch (~34 KB) must fit the 227 KB an H100/H200 CTA may use.
// 32,768 blocks: 2,097,152 tokens.
inline constexpr int kMaxBlocks = 32768;

// Throws InvalidArgument unless head_dim is 64 or 128 and every extent is positive and in range.
void validate(const AttentionShape& shape);

}  // namespace memplan::attention
