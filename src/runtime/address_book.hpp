// Check mode's address book: every buffer handed out while check mode is on, alive or freed, by
// address, so any address can be traced back to the buffer holding it or the nearest one. Records
// never overlap: a new buffer drops the freed records whose addresses it reuses (only the planned
// memory of poison-only check mode reuses addresses; the check heap never does).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "memplan/runtime/check.hpp"

namespace memplan {

class AddressBook {
 public:
  void add(BufferRecord record);
  // The alive record that starts at `p`, or nullptr.
  [[nodiscard]] BufferRecord* alive_at(const void* p);
  // The record (alive or freed) that starts at `p`, or nullptr.
  [[nodiscard]] const BufferRecord* at(const void* p) const;

  struct Around {
    const BufferRecord* holding = nullptr;  // the record whose bytes contain the address
    const BufferRecord* below = nullptr;    // else: the nearest record below it
    const BufferRecord* above = nullptr;    //       and the nearest above it
  };
  [[nodiscard]] Around around(const void* p) const;

  [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }
  [[nodiscard]] std::size_t alive() const noexcept { return alive_; }
  void mark_freed(BufferRecord& record, CheckMoment when);

 private:
  std::map<std::uintptr_t, BufferRecord> records_;  // by start address
  std::size_t alive_ = 0;
};

// "in step 3 'denoise' at event 17 (scope 'denoise/block.3')", "inside a pause outside steps".
[[nodiscard]] std::string describe(const CheckMoment& when);
// "buffer 'kv_idx' (4096 B at 0x7f..), allocated in step ..., freed in step ..." (or "alive").
[[nodiscard]] std::string describe(const BufferRecord& record);

}  // namespace memplan
