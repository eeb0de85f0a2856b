// Long sequences (issue 16: at least 1,048,576 tokens; checked at batch 2 x 600,017 tokens x 16
// heads, 2.46 G elements a tensor, past 2^31): the sparse call runs, and on sampled rows (the
// first and last tokens, block boundaries, the last batch and head, where offsets are largest)
// its output matches an fp64 reference over the rows' own block lists, and the lists follow the
// rule on scores the host computes from the same inputs; the TMA kernel's dense set-up matches
// fp64 attention over every key on sampled rows. Inputs are made on the device from
// a hash (hashed_inputs.hpp), so nothing of 15 GB crosses PCIe. Skips without a GPU or with less
// than 40 GB free.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "device_buffer.hpp"
#include "gpu_case.hpp"
#include "hashed_inputs.hpp"
#include "kernel_choice.hpp"
#include "memplan/attention/attention.hpp"
#include "memplan/attention/host_selection.hpp"
#include "reference.hpp"
#include "support/gpu.hpp"

namespace memplan::attention::test {
namespace {

constexpr std::int64_t kTokens = 600'017;  // a partial last block
constexpr int kBatch = 2;
constexpr int kHeads = 16;
constexpr int kDim = 128;

struct SampledRow {
  int batch;
  std::int64_t token;
  int head;
  bool check_list;  // recompute the row's block scores on the host (seconds: 77 M elements)
};

// Pooled means of every block of one (batch, head), from the hashed values (as bf16).
std::vector<double> pooled(const HashedShape& s, int b, int h) {
  const int blocks = static_cast<int>((s.tokens + 63) / 64);
  std::vector<double> out(static_cast<std::size_t>(blocks) * kDim, 0.0);
  for (int blk = 0; blk < blocks; ++blk) {
    const std::int64_t first = std::int64_t{blk} * 64;
    const std::int64_t last = std::min<std::int64_t>(first + 64, s.tokens);
    for (std::int64_t t = first; t < last; ++t) {
      for (int d = 0; d < kDim; ++d) {
        out[static_cast<std::size_t>(blk) * kDim + d] +=
            from_bf16(hashed_bits(hashed_value(s, b, t, h, d)));
      }
    }
    for (int d = 0; d < kDim; ++d) {
      out[static_cast<std::size_t>(blk) * kDim + d] /= static_cast<double>(last - first);
    }
  }
  return out;
}

const HashedShape kQ{kTokens, kHeads, kDim, 11, 0.5f};
const HashedShape kK{kTokens, kHeads, kDim, 23, 0.5f};
const HashedShape kV{kTokens, kHeads, kDim, 37, 0.0f};

// fp64 attention of one query row over the keys of `key_blocks`, from the hashed values.
std::vector<float> reference_row(const SampledRow& r, const std::vector<int>& key_blocks) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(kDim));
  std::vector<double> qrow(kDim);
  for (int d = 0; d < kDim; ++d) {
    qrow[d] = from_bf16(hashed_bits(hashed_value(kQ, r.batch, r.token, r.head, d)));
  }
  std::vector<double> logits;
  std::vector<std::int64_t> keys;
  for (const int j : key_blocks) {
    for (std::int64_t t = std::int64_t{j} * 64; t < std::min<std::int64_t>((j + 1) * 64, kTokens);
         ++t) {
      double dot = 0;
      for (int d = 0; d < kDim; ++d) {
        dot += qrow[d] * from_bf16(hashed_bits(hashed_value(kK, r.batch, t, r.head, d)));
      }
      logits.push_back(dot * scale);
      keys.push_back(t);
    }
  }
  const double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> want(kDim, 0.0);
  double sum = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const double p = std::exp(logits[i] - top);
    sum += p;
    for (int d = 0; d < kDim; ++d) {
      want[d] += p * from_bf16(hashed_bits(hashed_value(kV, r.batch, keys[i], r.head, d)));
    }
  }
  std::vector<float> out(kDim);
  for (int d = 0; d < kDim; ++d) out[d] = static_cast<float>(want[d] / sum);
  return out;
}

AttentionShape long_shape() { return {kBatch, kTokens, kHeads, kDim}; }

bool enough_free_memory() {
  std::size_t free_bytes = 0, total_bytes = 0;
  TEST_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes >= (std::size_t{40} << 30);
}

// Q, K and V of the long shape filled from the hashes on the device, the output poisoned.
struct LongTensors {
  static std::size_t bytes() { return static_cast<std::size_t>(long_shape().elements()) * 2; }
  DeviceBuffer q{bytes()}, k{bytes()}, v{bytes()}, out{bytes()};
  LongTensors() {
    fill_hashed(q.get(), kBatch, kQ, nullptr);
    fill_hashed(k.get(), kBatch, kK, nullptr);
    fill_hashed(v.get(), kBatch, kV, nullptr);
    out.poison();
  }
  [[nodiscard]] AttentionTensors tensors() const { return {q.get(), k.get(), v.get(), out.get()}; }
};

// The device's output row of `r`.
std::vector<float> output_row(const DeviceBuffer& out, const SampledRow& r) {
  std::vector<std::uint16_t> bits(kDim);
  const std::int64_t at = ((std::int64_t{r.batch} * kTokens + r.token) * kHeads + r.head) * kDim;
  TEST_CUDA(
      cudaMemcpy(bits.data(), out.as<std::uint16_t>() + at, kDim * 2, cudaMemcpyDeviceToHost));
  std::vector<float> got(kDim);
  for (int d = 0; d < kDim; ++d) got[d] = from_bf16(bits[d]);
  return got;
}

// On both Hopper kernels: TMA (the default; its tensor maps take 600,017 tokens as a 32-bit
// coordinate; rows are 64-bit offsets in its list reads) and wgmma, with a list per query block
// and one per pair of query blocks (the TMA kernel's shared ring over a list).
struct LongCase {
  const char* kernel;
  int query_blocks_per_list;
};
class LongSequence : public ::testing::TestWithParam<LongCase> {};

TEST_P(LongSequence, SparseAtTwoTimes600kTokensMatchesTheReferenceOnSampledRows) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const ScopedKernel kernel(GetParam().kernel);
  const int per_list = GetParam().query_blocks_per_list;
  if (!enough_free_memory()) GTEST_SKIP() << "needs 40 GB of free device memory";
  const AttentionShape shape = long_shape();
  ASSERT_GT(shape.elements(), std::int64_t{1} << 31);
  const LongTensors t;

  AttentionPolicy policy;
  policy.mode = SparsityMode::TopK;
  policy.keep_percent = 10;
  policy.window_start = 0;
  policy.window_end = 1;
  policy.query_blocks_per_list = per_list;
  const WorkspaceLayout layout = workspace_layout(shape, policy);
  DeviceBuffer workspace(layout.bytes);
  const SparsityMode ran =
      launch_attention(shape, t.tensors(), policy, 0.5, workspace.get(), layout.bytes, nullptr);
  ASSERT_EQ(ran, SparsityMode::TopK);
  TEST_CUDA(cudaDeviceSynchronize());

  const int blocks = shape.blocks();
  const std::vector<SampledRow> rows{{0, 0, 0, true},
                                     {0, 64, 3, false},
                                     {1, 300'000, 7, true},
                                     {1, kTokens - 1, kHeads - 1, true},
                                     {1, kTokens - 18, kHeads - 1, false},
                                     {1, 599'999, kHeads - 2, false}};
  const double scale = 1.0 / std::sqrt(static_cast<double>(kDim));
  for (const SampledRow& r : rows) {
    SCOPED_TRACE(::testing::Message()
                 << "batch " << r.batch << " token " << r.token << " head " << r.head);
    const int q_block = static_cast<int>(r.token / 64);
    // The query blocks of the row's list: the block, or its pair (the last block of an odd
    // count alone).
    const int first = q_block - q_block % per_list;
    const int last = std::min(first + per_list - 1, blocks - 1);
    const std::int64_t head_row0 = (std::int64_t{r.batch} * kHeads + r.head) * blocks;
    auto read_list = [&](int block) {
      const std::int64_t list_row = head_row0 + block;
      int count = 0;
      TEST_CUDA(cudaMemcpy(
          &count,
          static_cast<const char*>(workspace.get()) + layout.kv_count + list_row * sizeof(int),
          sizeof(int), cudaMemcpyDeviceToHost));
      std::vector<int> list(static_cast<std::size_t>(std::clamp(count, 0, layout.max_k)));
      TEST_CUDA(cudaMemcpy(list.data(),
                           static_cast<const char*>(workspace.get()) + layout.kv_idx +
                               list_row * layout.max_k * sizeof(int),
                           list.size() * sizeof(int), cudaMemcpyDeviceToHost));
      return std::pair{count, list};
    };
    const auto row_list = read_list(q_block);
    const auto& [count, idx] = row_list;
    ASSERT_GT(count, 0);
    ASSERT_LE(count, layout.max_k);
    for (int block = first; block <= last; ++block) {
      EXPECT_EQ(read_list(block), row_list) << "the lists of one pair differ";
    }

    // The list follows the rule on the host's scores (the mean of its query blocks' rows; with
    // the checker's tolerance band).
    if (r.check_list) {
      const std::vector<double> pq = pooled(kQ, r.batch, r.head);
      const std::vector<double> pk = pooled(kK, r.batch, r.head);
      std::vector<double> scores(static_cast<std::size_t>(blocks), 0.0);
      for (int block = first; block <= last; ++block) {
        for (int j = 0; j < blocks; ++j) {
          double dot = 0;
          for (int d = 0; d < kDim; ++d) {
            dot += pq[static_cast<std::size_t>(block) * kDim + d] *
                   pk[static_cast<std::size_t>(j) * kDim + d];
          }
          scores[static_cast<std::size_t>(j)] += dot * scale / (last - first + 1);
        }
      }
      EXPECT_EQ(check_selection_row(policy, BlockRange{first, last + 1}, blocks, scores.data(),
                                    idx.data(), count, layout.max_k),
                "");
    }

    // The output row against fp64 attention over the listed blocks.
    EXPECT_LT(relative_l2(output_row(t.out, r), reference_row(r, idx)), kMaxRelativeL2);
  }
}

// Dense at the same length (600,017 x 600,017 keys a head; seconds on the H200) on the TMA
// kernel's dense set-up, which the sparse test above does not run: four sampled rows against
// fp64 attention over every key, computed once per process.
class LongDense : public ::testing::TestWithParam<const char*> {};

TEST_P(LongDense, DenseAtTwoTimes600kTokensMatchesTheReferenceOnSampledRows) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const ScopedKernel kernel(GetParam());
  if (!enough_free_memory()) GTEST_SKIP() << "needs 40 GB of free device memory";
  const AttentionShape shape = long_shape();
  const LongTensors t;
  launch_flash_forward(shape, t.tensors(), BlockList{}, nullptr, 0.0f, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());

  std::vector<int> every_block(static_cast<std::size_t>(shape.blocks()));
  for (std::size_t j = 0; j < every_block.size(); ++j) every_block[j] = static_cast<int>(j);
  static const std::vector<SampledRow> rows{{0, 0, 0, false},
                                            {0, 64 * 4'000 + 17, 5, false},
                                            {1, 300'000, 7, false},
                                            {1, kTokens - 1, kHeads - 1, false}};
  static const std::vector<std::vector<float>> want = [&] {
    std::vector<std::vector<float>> w;
    for (const SampledRow& r : rows) w.push_back(reference_row(r, every_block));
    return w;
  }();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SampledRow& r = rows[i];
    SCOPED_TRACE(::testing::Message()
                 << "batch " << r.batch << " token " << r.token << " head " << r.head);
    EXPECT_LT(relative_l2(output_row(t.out, r), want[i]), kMaxRelativeL2);
  }
}

std::string kernel_name(const ::testing::TestParamInfo<const char*>& param_info) {
  std::string name = param_info.param;
  std::replace(name.begin(), name.end(), '-', '_');  // test names allow no '-'
  return name;
}

INSTANTIATE_TEST_SUITE_P(Kernels, LongSequence,
                         ::testing::Values(LongCase{"tma", 1}, LongCase{"wgmma", 1},
                                           LongCase{"tma", 2}),
                         [](const ::testing::TestParamInfo<LongCase>& param_info) {
                           return std::string(param_info.param.kernel) +
                                  (param_info.param.query_blocks_per_list == 2 ? "_pairs" : "");
                         });
INSTANTIATE_TEST_SUITE_P(Kernels, LongDense, ::testing::Values("tma"), kernel_name);

}  // namespace
}  // namespace memplan::attention::test
