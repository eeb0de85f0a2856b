// Block lists visited rotated (BlockList::rotate_visits; the TMA kernel's): the first
// visit's warp search against std::lower_bound, rotated launches against the double reference
// and against the same lists visited in order, repeat launches bit for bit, launch_attention
// rotating tau's lists and not top-k's, and MEMPLAN_ATTENTION_ROTATE (auto rotates only where a
// head's K and V outgrow half the L2, so the small shapes here ask for `always`).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "first_visit_probe.hpp"
#include "gpu_case.hpp"
#include "kernel_choice.hpp"
#include "memplan/error.hpp"
#include "support/gpu.hpp"

namespace memplan::attention::test {
namespace {

TEST(FirstVisit, IsTheFirstListedBlockAtOrPastTheStartWrappingToZero) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  std::mt19937 rng(20261202);
  std::vector<int> lists;
  std::vector<FirstVisitQuery> queries;
  std::vector<int> want;
  // Counts around the warp's rounds (32, 1,024) and the largest rows (32,768 blocks).
  for (const int count : {0, 1, 2, 31, 32, 33, 100, 1023, 1024, 1025, 4000, 32767, 32768}) {
    const int blocks = std::max(1, count + static_cast<int>(rng() % (count + 2)));
    std::vector<int> all(static_cast<std::size_t>(blocks));
    for (int j = 0; j < blocks; ++j) all[static_cast<std::size_t>(j)] = j;
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int> list(all.begin(), all.begin() + count);
    std::sort(list.begin(), list.end());
    const int offset = static_cast<int>(lists.size());
    lists.insert(lists.end(), list.begin(), list.end());
    std::vector<int> starts = {0, blocks - 1};
    for (int s = 0; s < 40; ++s) starts.push_back(static_cast<int>(rng() % blocks));
    for (const int v : list) {  // entries themselves, and the blocks beside them
      if (rng() % std::max(1, count / 20) != 0) continue;
      starts.insert(starts.end(), {v, v + 1, std::max(0, v - 1)});
    }
    if (count > 0) starts.insert(starts.end(), {list.front(), list.back(), list.back() + 1});
    for (const int start : starts) {
      queries.push_back({offset, count, start});
      const auto at = std::lower_bound(list.begin(), list.end(), start) - list.begin();
      want.push_back(at < count ? static_cast<int>(at) : 0);
    }
  }
  DeviceBuffer d_lists(std::max<std::size_t>(1, lists.size()) * sizeof(int));
  DeviceBuffer d_queries(queries.size() * sizeof(FirstVisitQuery));
  DeviceBuffer d_answers(queries.size() * sizeof(int));
  d_lists.upload(lists);
  d_queries.upload(queries);
  run_first_visit(d_lists.as<int>(), d_queries.as<FirstVisitQuery>(),
                  static_cast<int>(queries.size()), d_answers.as<int>());
  TEST_CUDA(cudaDeviceSynchronize());
  const auto got = d_answers.download<int>(queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "count " << queries[i].count << ", start "
                               << queries[i].start_block;
  }
}

// One list per `per` query blocks (1, or 2: a pair) of each (batch, head): rows per * i to
// per * i + per - 1 hold it (an odd block count leaves the last pair one row). `make(n, rng)`
// returns a list, ascending, or n + 1 blocks' worth to mark a dense row.
template <typename Make>
HostBlockList lists_of(const AttentionShape& shape, int per, std::mt19937& rng, Make make) {
  const int n = shape.blocks();
  HostBlockList list;
  list.max_k = n;
  list.idx.assign(static_cast<std::size_t>(shape.rows() * n), -12345);  // garbage past counts
  list.count.assign(static_cast<std::size_t>(shape.rows()), 0);
  for (std::int64_t head_row = 0; head_row < shape.rows(); head_row += n) {
    for (int qb = 0; qb < n; qb += per) {
      std::vector<int> blocks = make(n, rng);
      if (static_cast<int>(blocks.size()) > n) {  // dense: every block, count n
        blocks.resize(static_cast<std::size_t>(n));
        for (int j = 0; j < n; ++j) blocks[static_cast<std::size_t>(j)] = j;
      }
      for (int r = qb; r < std::min(qb + per, n); ++r) {
        const std::int64_t row = head_row + r;
        std::copy(blocks.begin(), blocks.end(), list.idx.begin() + row * n);
        list.count[static_cast<std::size_t>(row)] = static_cast<int>(blocks.size());
      }
    }
  }
  return list;
}

template <typename Make>
HostBlockList pair_lists(const AttentionShape& shape, std::mt19937& rng, Make make) {
  return lists_of(shape, 2, rng, make);
}

// Lists of random lengths: empty, one block, dense, or each block kept with a random chance.
std::vector<int> random_list(int n, std::mt19937& rng) {
  std::vector<int> blocks;
  switch (rng() % 8) {
    case 0:
      return blocks;
    case 1:
      return {static_cast<int>(rng() % n)};
    case 2:
      return std::vector<int>(static_cast<std::size_t>(n) + 1, 0);  // dense
    default: {
      const auto keep = static_cast<unsigned>(1 + rng() % 4);  // in 5
      for (int j = 0; j < n; ++j) {
        if (static_cast<unsigned>(rng() % 5) < keep) blocks.push_back(j);
      }
      return blocks;
    }
  }
}

struct Lists {
  DeviceBuffer idx, count;
  BlockList blocks;
  Lists(const HostBlockList& list, bool rotate, int query_blocks_per_list = 2)
      : idx(list.idx.size() * sizeof(int)), count(list.count.size() * sizeof(int)) {
    idx.upload(list.idx);
    count.upload(list.count);
    blocks = BlockList{idx.as<int>(), count.as<int>(), list.max_k, query_blocks_per_list};
    blocks.rotate_visits = rotate;
  }
};

std::vector<std::uint16_t> run(const GpuCase& c, const BlockList& blocks) {
  c.dout->poison();
  launch_flash_forward(c.shape, c.tensors(), blocks, nullptr, 0.0f, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  return c.dout->download<std::uint16_t>(static_cast<std::size_t>(c.shape.elements()));
}

// More CTAs than SMs, so the starts cover every block; odd block counts and tails. Pair lists
// (one ring for the CTA's two groups) and lists per query block (a ring per group, each group's
// list rotated from the CTA's start on its own).
void expect_rotated_lists_match_the_reference(int query_blocks_per_list) {
  const ScopedKernel kernel("tma");
  const ScopedRotation rotation("always");
  for (const AttentionShape shape : {AttentionShape{2, 389, 48, 128},     // 7 blocks: 384 CTAs
                                     AttentionShape{1, 640, 40, 128}}) {  // 10 blocks: 200 CTAs
    GpuCase c(shape, 0.0f);
    SCOPED_TRACE(testing::Message() << "seed " << c.seed << ", " << shape.tokens << " tokens");
    std::mt19937 rng(c.seed + 1);
    const HostBlockList list = lists_of(shape, query_blocks_per_list, rng, random_list);
    const Lists rotated(list, true, query_blocks_per_list);
    const auto first = run(c, rotated.blocks);
    EXPECT_LE(relative_l2(c.output(), reference_attention(shape, c.q, c.k, c.v, list)),
              kMaxRelativeL2);
    EXPECT_EQ(run(c, rotated.blocks), first) << "a rotated launch, repeated";
    EXPECT_NE(run(c, Lists(list, false, query_blocks_per_list).blocks), first)
        << "rotation left every output bit as it was";
  }
}

TEST(FlashRotatedVisits, PairListsMatchTheReferenceAndRepeatBitForBit) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  expect_rotated_lists_match_the_reference(2);
}

TEST(FlashRotatedVisits, ListsPerBlockMatchTheReferenceAndRepeatBitForBit) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  expect_rotated_lists_match_the_reference(1);
}

// Lists of 1,035 to 1,401 blocks (three rounds of the first visit's search) against the same
// lists visited in order: the same keys, summed in another order.
TEST(FlashRotatedVisits, LongListsGiveTheUnrotatedOutput) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const ScopedKernel kernel("tma");
  const ScopedRotation rotation("always");
  const AttentionShape shape{1, 64 * 1400 + 9, 1, 128};  // 1,401 blocks: 701 CTAs
  GpuCase c(shape, 0.0f);
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  std::mt19937 rng(c.seed + 1);
  const HostBlockList list = pair_lists(shape, rng, [](int n, std::mt19937& r) {
    std::vector<int> blocks;
    const auto dropped = static_cast<unsigned>(1 + r() % 250);  // in 1,000
    for (int j = 0; j < n; ++j) {
      if (static_cast<unsigned>(r() % 1000) >= dropped) blocks.push_back(j);
    }
    return blocks;
  });
  run(c, Lists(list, false).blocks);
  const std::vector<float> in_order = c.output();
  run(c, Lists(list, true).blocks);
  EXPECT_LE(relative_l2(c.output(), in_order), kMaxRelativeL2);
}

// launch_attention visits tau's pair lists rotated (the lists of equal length of top-k in
// order): its output is the flash kernel's on the workspace's lists with rotate_visits on (off).
// With `never`, and with `auto` at this size, the rotated lists' output is the in-order one.
TEST(FlashRotatedVisits, LaunchAttentionRotatesTauListsOnly) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const ScopedKernel kernel("tma");
  const ScopedRotation rotation("always");
  const AttentionShape shape{1, 64 * 40 + 17, 16, 128};  // 21 pairs x 16 heads: 336 CTAs
  for (const int per : {2, 1})
    for (const SparsityMode mode : {SparsityMode::Tau, SparsityMode::TopK}) {
      GpuCase c(shape, 1.0f);
      SCOPED_TRACE(testing::Message() << "seed " << c.seed << ", " << to_string(mode) << ", " << per
                                      << " query block(s) a list");
      AttentionPolicy policy;
      policy.mode = mode;
      policy.keep_percent = 20.0f;
      policy.query_blocks_per_list = per;
      const WorkspaceLayout layout = workspace_layout(shape, policy);
      DeviceBuffer workspace(layout.bytes);
      launch_attention(shape, c.tensors(), policy, 0.5, workspace.get(), workspace.bytes(),
                       nullptr);
      TEST_CUDA(cudaDeviceSynchronize());
      const auto from_attention =
          c.dout->download<std::uint16_t>(static_cast<std::size_t>(shape.elements()));
      BlockList blocks = workspace_block_list(layout, workspace.get());
      blocks.rotate_visits = mode == SparsityMode::Tau;
      EXPECT_EQ(run(c, blocks), from_attention);
      if (mode != SparsityMode::Tau) continue;
      BlockList in_order = blocks;
      in_order.rotate_visits = false;
      const auto unrotated = run(c, in_order);
      EXPECT_NE(unrotated, from_attention) << "rotation left every output bit as it was";
      for (const char* when : {"never", "auto"}) {
        const ScopedRotation other(when);
        EXPECT_EQ(run(c, blocks), unrotated) << "MEMPLAN_ATTENTION_ROTATE=" << when;
      }
    }
}

TEST(FlashRotatedVisits, AnUnknownRotateValueIsAnErrorNamingIt) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const ScopedKernel kernel("tma");
  const ScopedRotation rotation("sometimes");
  const AttentionShape shape{1, 256, 2, 128};
  GpuCase c(shape, 0.0f);
  std::mt19937 rng(c.seed);
  const HostBlockList list = pair_lists(shape, rng, random_list);
  const Lists lists(list, true);
  try {
    launch_flash_forward(shape, c.tensors(), lists.blocks, nullptr, 0.0f, nullptr);
    FAIL() << "MEMPLAN_ATTENTION_ROTATE=sometimes was accepted";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("MEMPLAN_ATTENTION_ROTATE=sometimes"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace memplan::attention::test
