// The address book: records by start address, the lookups describe_address needs, and the words.
#include "address_book.hpp"

#include <fmt/format.h>

#include <iterator>

#include "core/log.hpp"

namespace memplan {
namespace {

std::uintptr_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

void AddressBook::add(BufferRecord record) {
  const std::uintptr_t begin = address_of(record.address);
  const std::uintptr_t end = begin + record.bytes;
  // Records are disjoint, so the ones overlapping [begin, end) are consecutive: from the last that
  // starts at or below `begin` (if it reaches past it) up to the last that starts below `end`.
  auto first = records_.upper_bound(begin);
  if (first != records_.begin()) {
    const auto before = std::prev(first);
    if (before->first + before->second.bytes > begin) first = before;
  }
  const auto last = records_.lower_bound(end);
  for (auto it = first; it != last; ++it) {
    if (!it->second.freed) {
      // memplan never hands out memory a live buffer holds; if it did, say so loudly.
      logger().error("check mode: new buffer at {} ({} B) overlaps live {}", record.address,
                     record.bytes, describe(it->second));
      --alive_;
    }
  }
  records_.erase(first, last);
  if (!record.freed) ++alive_;
  records_.emplace(begin, std::move(record));
}

BufferRecord* AddressBook::alive_at(const void* p) {
  const auto it = records_.find(address_of(p));
  return it != records_.end() && !it->second.freed ? &it->second : nullptr;
}

const BufferRecord* AddressBook::at(const void* p) const {
  const auto it = records_.find(address_of(p));
  return it != records_.end() ? &it->second : nullptr;
}

AddressBook::Around AddressBook::around(const void* p) const {
  const std::uintptr_t a = address_of(p);
  Around out;
  const auto above = records_.upper_bound(a);
  if (above != records_.end()) out.above = &above->second;
  if (above != records_.begin()) {
    const BufferRecord& below = std::prev(above)->second;
    if (a - address_of(below.address) < below.bytes) {
      out.holding = &below;
      out.above = nullptr;
    } else {
      out.below = &below;
    }
  }
  return out;
}

void AddressBook::mark_freed(BufferRecord& record, CheckMoment when) {
  record.freed = std::move(when);
  --alive_;
}

std::string describe(const CheckMoment& when) {
  if (when.step_name.empty()) {
    return fmt::format("{}outside steps (before step {})", when.paused ? "inside a pause " : "",
                       when.step);
  }
  const std::string step = fmt::format("step {} '{}'", when.step, when.step_name);
  const std::string scope = when.scope.empty() || when.scope == when.step_name
                                ? std::string()
                                : fmt::format(", scope '{}'", when.scope);
  if (when.event) return fmt::format("in {} at event {}{}", step, *when.event, scope);
  if (when.other_thread) return fmt::format("from another thread during {}{}", step, scope);
  return fmt::format("inside a pause during {}{}", step, scope);
}

std::string describe(const BufferRecord& record) {
  const std::string name =
      record.tag.empty() ? std::string("untagged buffer") : fmt::format("buffer '{}'", record.tag);
  return fmt::format("{} ({} B at {}), allocated {}, {}", name, record.bytes, record.address,
                     describe(record.allocated),
                     record.freed ? "freed " + describe(*record.freed) : std::string("alive"));
}

}  // namespace memplan
