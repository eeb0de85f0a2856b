// CPU references for the GPU attention tests, in double precision over the bf16-rounded inputs:
// attention restricted to a block list (expanded to a token mask), the coarse branch, and the
// selection rule checked as sets with a tolerance band around the decision boundary. Pooling,
// scores and the rule's pieces come from the library's host reference selection
// (memplan/attention/host_selection.hpp), the same code the example's CPU twin selects with.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "memplan/attention/host_selection.hpp"
#include "memplan/attention/policy.hpp"
#include "memplan/attention/shape.hpp"

namespace memplan::attention::test {

// Inputs as float (already rounded to bf16) and as bf16 bits for upload.
struct Tensor {
  std::vector<float> values;
  std::vector<std::uint16_t> bits;
};

// Gaussian noise; `structure` > 0 adds a smooth per-block pattern shared by tokens of a block
// (video-like: neighbouring tokens alike), which makes block scores spread out.
Tensor random_tensor(const AttentionShape& shape, std::mt19937& rng, float structure);

// Host block list; count[row] == blocks means a dense row. Empty vectors mean all rows dense.
struct HostBlockList {
  std::vector<int> idx;
  std::vector<int> count;
  int max_k = 0;
};

// out[b,t,h,d] of softmax(Q K^T / sqrt(d)) V over the listed key blocks, plus gate * coarse.
std::vector<float> reference_attention(const AttentionShape& shape, const Tensor& q,
                                       const Tensor& k, const Tensor& v, const HostBlockList& list,
                                       const std::vector<float>* coarse = nullptr,
                                       float gate = 0.0f);

// Coarse output [rows, head_dim]: softmax of a score row applied to the pooled V.
std::vector<double> reference_coarse(const AttentionShape& shape, const std::vector<double>& scores,
                                     const std::vector<double>& vbar);

// Checks one device row, the list of query blocks `queries` (one block, or the pair sharing it:
// list_queries), against the rule of the policy's mode (its count from rule_blocks: the top-k
// count, or the threshold rule's cap) on `scores`, the list's scores over the row's `blocks` key
// blocks (list_scores: a single block's own row). Returns an empty string when it conforms, else
// what is wrong.
std::string check_selection_row(const AttentionPolicy& policy, BlockRange queries, int blocks,
                                const double* scores, const int* idx, int count, int max_k);

// Relative L2 error ||got - want|| / ||want||; NaN in `got` gives +inf.
double relative_l2(const std::vector<float>& got, const std::vector<float>& want);

}  // namespace memplan::attention::test
