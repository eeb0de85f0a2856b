// The sparsity modes and one table of what each mode does. Every place that treats modes
// differently (validation, names, workspace regions, the selection rule launched, the host
// reference selection, the tests' checks) reads this table instead of switching on the mode, so a
// new mode is one row here; a value outside the table is an InvalidArgument, never a default.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memplan::attention {

enum class SparsityMode : std::uint8_t {
  Dense,   // every key block
  Tau,     // keep blocks whose pooled score exceeds mean + tau * std of the row
  TopK,    // keep ceil(keep_percent% * n_blocks) highest-scoring blocks per row
  Coarse,  // top-k fine branch plus a coarse output from attention between pooled blocks
};

// How a sparse mode chooses its key blocks from a row of pooled scores (forced blocks aside).
enum class SelectionRule : std::uint8_t {
  None,       // no selection: every key block (dense)
  Threshold,  // score > mean + tau * std of the row, at most ceil(max_keep_percent%) blocks;
              // more than that pass: the best ones, as TopK with the cap as k
  TopK,       // the ceil(keep_percent%) best, ties to the lower block index
};

struct ModeTraits {
  SparsityMode mode;
  const char* name;
  SelectionRule rule;
  bool coarse_branch;  // pools V and adds attention between pooled blocks to the output

  // Pools Q and K, scores blocks and writes a block list (in the caller's workspace).
  [[nodiscard]] constexpr bool selects_blocks() const { return rule != SelectionRule::None; }
};

inline constexpr std::array<ModeTraits, 4> kModeTraits{{
    {SparsityMode::Dense, "dense", SelectionRule::None, false},
    {SparsityMode::Tau, "tau", SelectionRule::Threshold, false},
    {SparsityMode::TopK, "topk", SelectionRule::TopK, false},
    {SparsityMode::Coarse, "coarse", SelectionRule::TopK, true},
}};

// The table row of `mode`, or null for a value outside the enum.
[[nodiscard]] constexpr const ModeTraits* find_traits(SparsityMode mode) {
  const auto i = static_cast<std::size_t>(mode);
  return i < kModeTraits.size() ? &kModeTraits[i] : nullptr;
}

// The table row of `mode`; throws InvalidArgument naming the value when it is outside the enum.
[[nodiscard]] const ModeTraits& traits(SparsityMode mode);

// The mode's name ("dense", "tau", "topk", "coarse"), "unknown" outside the enum.
[[nodiscard]] std::string_view to_string(SparsityMode mode) noexcept;

namespace detail {
constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < kModeTraits.size(); ++i) {
    if (static_cast<std::size_t>(kModeTraits[i].mode) != i) return false;
  }
  return true;
}
static_assert(table_in_enum_order(), "kModeTraits is indexed by SparsityMode");
}  // namespace detail

}  // namespace memplan::attention
