// The rogue set's bookkeeping and the search for a window clear of it.
#include "rogue_set.hpp"

#include <algorithm>

namespace memplan {

void RogueSet::add(void* p, Rogue rogue) {
  occupied_.add(rogue.offset, rogue.size);
  rogues_.emplace(p, std::move(rogue));
}

std::optional<Rogue> RogueSet::take(void* p) {
  const auto it = rogues_.find(p);
  if (it == rogues_.end()) return std::nullopt;
  Rogue rogue = std::move(it->second);
  occupied_.remove(rogue.offset);
  rogues_.erase(it);
  return rogue;
}

namespace {

// The rogues' chunks, [start, end) and ascending (touching runs merged), and `also_held`.
template <class Ranges>
std::vector<std::pair<Bytes, Bytes>> held_chunks(const Ranges& occupied, Bytes chunk,
                                                 std::optional<std::pair<Bytes, Bytes>> also_held) {
  std::vector<std::pair<Bytes, Bytes>> held;
  occupied.for_each([&](Bytes offset, Bytes size) {
    const Bytes start = offset / chunk * chunk;
    const Bytes end = align_up(offset + size, chunk);
    if (!held.empty() && held.back().second >= start) {
      held.back().second = std::max(held.back().second, end);
    } else {
      held.emplace_back(start, end);
    }
  });
  if (also_held) {
    held.push_back(*also_held);
    std::sort(held.begin(), held.end());
  }
  return held;
}

bool clear_of(const std::vector<std::pair<Bytes, Bytes>>& held, Bytes at, Bytes bytes) {
  return std::none_of(held.begin(), held.end(), [&](const auto& h) {
    return bytes > 0 && h.first < at + bytes && at < h.second;
  });
}

}  // namespace

bool RogueSet::clear_of_chunks(Bytes offset, Bytes bytes, Bytes chunk,
                               std::optional<std::pair<Bytes, Bytes>> also_held) const {
  return clear_of(held_chunks(occupied_, chunk, also_held), offset, bytes);
}

std::optional<Bytes> RogueSet::clear_chunk(Bytes bytes, Bytes chunk, Bytes reserved,
                                           std::optional<std::pair<Bytes, Bytes>> also_held) const {
  const std::vector<std::pair<Bytes, Bytes>> held = held_chunks(occupied_, chunk, also_held);
  std::optional<Bytes> to;
  if (clear_of(held, 0, bytes)) to = 0;
  for (std::size_t i = 0; !to && i < held.size(); ++i) {
    if (clear_of(held, held[i].second, bytes)) to = held[i].second;
  }
  if (!to || *to + bytes > reserved) return std::nullopt;
  return to;
}

}  // namespace memplan
