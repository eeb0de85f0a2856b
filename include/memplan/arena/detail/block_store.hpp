// Host-side descriptors of the persistent pool's blocks. Device memory cannot hold boundary tags,
// so each block (free or live) is a descriptor here, linked to its address neighbours (for
// coalescing) and, when free, into its size class's list. Descriptors are recycled by index.
#pragma once

#include <cstdint>
#include <vector>

namespace memplan::arena::detail {

inline constexpr std::uint32_t kNone = UINT32_MAX;
inline constexpr std::uint32_t kLive = UINT32_MAX - 1;  // prev_free of a block in no free list

// 32 bytes, two to a cache line: whether a block is free is read off its free-list link.
struct Block {
  std::uint64_t offset = 0;  // from the arena base
  std::uint64_t size = 0;    // a multiple of 256
  std::uint32_t prev_phys = kNone;
  std::uint32_t next_phys = kNone;
  std::uint32_t prev_free = kLive;
  std::uint32_t next_free = kNone;

  bool free() const noexcept { return prev_free != kLive; }
};
static_assert(sizeof(Block) == 32);

class BlockStore {
 public:
  std::uint32_t make() {
    if (!spare_.empty()) {
      const std::uint32_t i = spare_.back();
      spare_.pop_back();
      blocks_[i] = Block{};
      return i;
    }
    blocks_.emplace_back();
    return static_cast<std::uint32_t>(blocks_.size() - 1);
  }
  void drop(std::uint32_t i) { spare_.push_back(i); }

  Block& operator[](std::uint32_t i) noexcept { return blocks_[i]; }
  const Block& operator[](std::uint32_t i) const noexcept { return blocks_[i]; }
  std::size_t in_use() const noexcept { return blocks_.size() - spare_.size(); }

 private:
  std::vector<Block> blocks_;
  std::vector<std::uint32_t> spare_;
};

}  // namespace memplan::arena::detail
