// A stand-in for a producer kernel (a RoPE kernel, say) that writes Q or K and, with BlockMeans
// (memplan/attention/pooled_means.cuh), their pooled means: it copies `src` to `dst` and writes
// the means of what it wrote. The pooled-means tests check that selection from these means is
// the selection that pools itself.
#pragma once

#include <cstdint>

#include "memplan/attention/shape.hpp"

namespace memplan::attention::test {

// dst, src: bf16 [batch, tokens, heads, head_dim]; means: the workspace region (fp32 rows, or
// split words when `split`), [batch, heads, blocks]. A null `means` copies only.
void copy_with_means(void* dst, const void* src, const AttentionShape& shape, void* means,
                     bool split, void* stream);

}  // namespace memplan::attention::test
