// Host-only: bad arguments throw InvalidArgument before anything is launched. The pointers here
// are fake (never dereferenced), which is the point: validation must not need a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kernel_choice.hpp"
#include "memplan/attention/attention.hpp"
#include "memplan/error.hpp"

namespace memplan::attention {
namespace {

void* fake(std::uintptr_t address) { return reinterpret_cast<void*>(address); }

struct Args {
  AttentionShape shape{1, 4096, 4, 128};
  AttentionTensors tensors{fake(0x10000), fake(0x20000), fake(0x30000), fake(0x40000)};
  AttentionPolicy policy;
  void* workspace = fake(0x50000);
  std::size_t workspace_size = 0;

  Args() { workspace_size = workspace_bytes(shape, policy); }
  void launch() const {
    (void)launch_attention(shape, tensors, policy, 0.5, workspace, workspace_size, nullptr);
  }
};

TEST(AttentionValidation, RejectsUnsupportedHeadDim) {
  Args a;
  a.shape.head_dim = 80;
  EXPECT_THROW(a.launch(), InvalidArgument);
}

// MEMPLAN_ATTENTION_KERNEL is read at every launch; a value that names no path is an error
// naming it and the valid values, raised before the device is asked anything.
TEST(AttentionValidation, UnknownKernelChoiceIsAnErrorNamingIt) {
  const Args a;
  const test::ScopedKernel kernel("tma2");
  try {
    launch_flash_forward(a.shape, a.tensors, BlockList{}, nullptr, 0.0f, nullptr);
    FAIL() << "launch_flash_forward accepted MEMPLAN_ATTENTION_KERNEL=tma2";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("tma2"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("tma, wgmma, mma"), std::string::npos) << error.what();
  }
}

// With the coarse branch, one list per pair of query blocks needs the pair's two score rows in one
// selection CTA: past ~1.5 M tokens at head_dim 128 they do not fit, which is an error naming
// the option and the mode, before any launch (1 list per block still runs there; so do pairs in
// the other modes, scored as one row of the pair's mean query).
TEST(AttentionValidation, CoarsePairListsTooLongForTheSelectionAreAnErrorNamingTheOption) {
  Args a;
  a.shape = AttentionShape{1, std::int64_t{kMaxBlocks} * 64, 1, 128};
  a.policy.mode = SparsityMode::Coarse;
  a.policy.query_blocks_per_list = 2;
  a.workspace_size = workspace_bytes(a.shape, a.policy);
  for (const bool selection_only : {false, true}) {
    try {
      if (selection_only) {
        launch_selection(a.shape, a.tensors, a.policy, a.workspace, a.workspace_size, nullptr);
      } else {
        a.launch();
      }
      FAIL() << "pair lists of " << a.shape.tokens << " tokens were accepted";
    } catch (const InvalidArgument& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("query_blocks_per_list = 2"), std::string::npos) << what;
      EXPECT_NE(what.find("coarse"), std::string::npos) << what;
    }
  }
}

TEST(AttentionValidation, BlockListQueryBlocksPerListIsOneOrTwo) {
  const Args a;
  for (const int per_list : {0, 3, -1}) {
    const BlockList list{static_cast<const int*>(fake(0x60000)),
                         static_cast<const int*>(fake(0x70000)), 8, per_list};
    try {
      launch_flash_forward(a.shape, a.tensors, list, nullptr, 0.0f, nullptr);
      FAIL() << "query_blocks_per_list = " << per_list << " was accepted";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(
          std::string(error.what()).find("query_blocks_per_list = " + std::to_string(per_list)),
          std::string::npos)
          << error.what();
    }
  }
}

TEST(AttentionValidation, RejectsNullAndMisalignedTensors) {
  Args a;
  a.tensors.k = nullptr;
  EXPECT_THROW(a.launch(), InvalidArgument);
  Args b;
  b.tensors.v = fake(0x30008);
  EXPECT_THROW(b.launch(), InvalidArgument);
  Args c;
  c.tensors.out = const_cast<void*>(c.tensors.q);
  EXPECT_THROW(c.launch(), InvalidArgument);
}

TEST(AttentionValidation, RejectsSmallOrMisalignedWorkspace) {
  Args a;
  a.workspace_size -= 1;
  try {
    a.launch();
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(a.workspace_size + 1)), std::string::npos)
        << e.what();
  }
  Args b;
  b.workspace = fake(0x50080);
  EXPECT_THROW(b.launch(), InvalidArgument);
  Args c;
  c.workspace = nullptr;
  EXPECT_THROW(c.launch(), InvalidArgument);
}

TEST(AttentionValidation, RejectsSinksOutsideTheSequence) {
  Args a;
  a.policy.sink_keys = {60, 70};  // 4096 tokens = 64 blocks
  EXPECT_THROW(a.launch(), InvalidArgument);
  Args b;
  b.policy.sink_queries = {0, 65};
  EXPECT_THROW(b.launch(), InvalidArgument);
}

TEST(AttentionValidation, RejectsBadPolicyAndStep) {
  Args a;
  a.policy.keep_percent = -3.0f;
  EXPECT_THROW(a.launch(), InvalidArgument);
  Args b;
  EXPECT_THROW((void)launch_attention(b.shape, b.tensors, b.policy, 2.0, b.workspace,
                                      b.workspace_size, nullptr),
               InvalidArgument);
}

TEST(AttentionValidation, RejectsBadBlockList) {
  Args a;
  const BlockList list{static_cast<const int*>(fake(0x60000)),
                       static_cast<const int*>(fake(0x70000)), 0};
  EXPECT_THROW(launch_flash_forward(a.shape, a.tensors, list, nullptr, 0.0f, nullptr),
               InvalidArgument);
  const BlockList no_idx{nullptr, static_cast<const int*>(fake(0x70000)), 4};
  EXPECT_THROW(launch_flash_forward(a.shape, a.tensors, no_idx, nullptr, 0.0f, nullptr),
               InvalidArgument);
}

TEST(AttentionValidation, SelectionNeedsASparseMode) {
  Args a;
  a.policy.mode = SparsityMode::Dense;
  EXPECT_THROW(launch_selection(a.shape, a.tensors, a.policy, a.workspace, 0, nullptr),
               InvalidArgument);
}

// A PooledMeans value outside the enum (a C caller's stray integer, say) is an error naming it,
// from both entry points that take one.
TEST(AttentionValidation, PooledMeansOutsideTheEnumIsAnErrorNamingIt) {
  Args a;
  a.policy.mode = SparsityMode::Tau;
  a.workspace_size = workspace_bytes(a.shape, a.policy);
  const auto stray = static_cast<PooledMeans>(7);
  for (const bool selection_only : {false, true}) {
    try {
      if (selection_only) {
        launch_selection(a.shape, a.tensors, a.policy, a.workspace, a.workspace_size, nullptr,
                         stray);
      } else {
        (void)launch_attention(a.shape, a.tensors, a.policy, 0.5, a.workspace, a.workspace_size,
                               nullptr, stray);
      }
      FAIL() << "accepted PooledMeans 7 (selection only: " << selection_only << ")";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("pooled = 7"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace memplan::attention
