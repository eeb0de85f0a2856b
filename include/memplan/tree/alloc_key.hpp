// What identifies an allocation event when a step is matched against the allocation tree:
// its size, its alignment and an optional tag, hashed so that matching compares three integers.
// The hash is computed on every tagged call (FNV-1a over the tag's bytes);
// a replayed tagged allocation whose key matches takes the inline fast path too.
#pragma once

#include <cstdint>
#include <string_view>

#include "memplan/plan/problem.hpp"

namespace memplan::tree {

// FNV-1a: stable across runs and platforms, so logged tag hashes can be compared.
[[nodiscard]] constexpr std::uint64_t tag_hash(std::string_view tag) noexcept {
  if (tag.empty()) return 0;  // 0 means "no tag"
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : tag) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h == 0 ? 1 : h;
}

struct AllocKey {
  Bytes size = 0;
  Bytes alignment = 1;
  std::uint64_t tag = 0;  // tag_hash() of the tag, 0 for none
  friend bool operator==(const AllocKey&, const AllocKey&) = default;
};

}  // namespace memplan::tree
