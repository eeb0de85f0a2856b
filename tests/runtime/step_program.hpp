// A step program for compiler tests: a list of allocations and frees by buffer id, run as one
// step. The runner fills every allocation with a pattern of its own and checks it when the buffer
// is freed, and checks that no two live buffers share a byte: the shadow model of guarantee 1.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "memplan/arena/host_backend.hpp"
#include "memplan/runtime/compiler.hpp"

namespace memplan::testing {

struct Op {
  enum Kind : std::uint8_t { Alloc, Free } kind;
  int id;
  std::size_t size = 0;
  std::string tag;
  bool paused = false;        // allocate inside a pause scope
  std::size_t alignment = 0;  // 0: the compiler's default
};
using Program = std::vector<Op>;

inline Op alloc(int id, std::size_t size, std::string tag = {}) {
  return {Op::Alloc, id, size, std::move(tag)};
}
inline Op paused_alloc(int id, std::size_t size) { return {Op::Alloc, id, size, {}, true}; }
inline Op free_(int id) { return {Op::Free, id}; }

// Host memory for the harness: the host backend, bytes filled and checked in place.
struct HostMemory {
  using Backend = arena::HostBackend;
  static std::unique_ptr<Backend> make_backend() {
    return std::make_unique<Backend>(arena::HostBackendOptions{.commit = false});
  }
  static void fill(void* p, std::size_t size, unsigned char value) { std::memset(p, value, size); }
  // The index of the first byte that differs from `value`, or `size` when all match. Compared a
  // block at a time by memcmp, which the sanitizers check as one range (a byte loop made this
  // check 97 % of the ThreadSanitizer run), then byte by byte in the first block that differs.
  static std::size_t first_difference(const void* p, std::size_t size, unsigned char value) {
    std::array<unsigned char, 4096> same;
    same.fill(value);
    const auto* bytes = static_cast<const unsigned char*>(p);
    for (std::size_t at = 0; at < size; at += same.size()) {
      if (std::memcmp(bytes + at, same.data(), std::min(same.size(), size - at)) == 0) continue;
      while (bytes[at] == value) ++at;
      return at;
    }
    return size;
  }
};

// A compiler over `Memory`'s backend, small enough for CI, with the fill-and-check shadow model.
template <class Memory>
class BasicHarness {
 public:
  explicit BasicHarness(CompilerOptions options = small_options())
      : backend_(Memory::make_backend()), compiler_(*backend_, options) {}

  static CompilerOptions small_options() {
    CompilerOptions o;
    o.reserve_bytes = std::size_t{4} << 30;
    o.chunk_bytes = std::size_t{2} << 20;
    o.pool_reserve_bytes = std::size_t{1} << 30;
    o.pool_chunk_bytes = std::size_t{2} << 20;
    o.plan_budget = std::chrono::milliseconds(50);
    // Every harness test runs with the chunk the pool lends (off by default): the two views of
    // one physical chunk must keep every buffer's bytes whatever the steps do.
    o.share_pool_chunk = true;
    return o;
  }

  // For tests of the pool's learned sites themselves: outputs kept across steps stay there
  // instead of being planned in the arena (CompilerOptions::period_two_outputs).
  static CompilerOptions outputs_in_pool() {
    CompilerOptions o = small_options();
    o.period_two_outputs = false;
    return o;
  }

  Compiler& compiler() { return compiler_; }
  typename Memory::Backend& backend() { return *backend_; }

  // Runs `program` as one step named `name`; buffers not freed stay live (rogues or kept).
  // Returns the pointer of each allocation in program order.
  std::vector<void*> run_step(const Program& program, const std::string& name = "denoise") {
    std::vector<void*> pointers;
    auto step = compiler_.step(name);
    for (const Op& op : program) {
      if (op.kind == Op::Alloc) {
        pointers.push_back(allocate(op.id, op.size, op.tag, op.paused, op.alignment));
      } else {
        release(op.id);
      }
    }
    return pointers;
  }

  void* allocate(int id, std::size_t size, const std::string& tag = {}, bool paused = false,
                 std::size_t alignment = 0) {
    void* p = nullptr;
    if (paused) {
      auto pause = compiler_.pause();
      p = compiler_.allocate(size, {}, tag, alignment);
    } else {
      p = compiler_.allocate(size, {}, tag, alignment);
    }
    expect_no_overlap(p, size);
    const auto pattern = static_cast<unsigned char>(next_pattern_++ % 251 + 1);
    Memory::fill(p, size, pattern);
    live_[id] = Live{p, size, pattern};
    return p;
  }

  void release(int id) {
    const auto it = live_.find(id);
    ASSERT_NE(it, live_.end()) << "test bug: buffer " << id << " is not live";
    expect_intact(it->second);
    compiler_.deallocate(it->second.p);
    live_.erase(it);
  }

  // Checks the bytes of every live buffer (rogues and kept buffers included).
  void expect_all_intact() const {
    for (const auto& [id, l] : live_) expect_intact(l);
  }
  bool is_live(int id) const { return live_.contains(id); }
  // Shadow-model violations so far (each also reported as a test failure), for counting runs.
  std::uint64_t overlaps() const { return overlaps_; }
  std::uint64_t mismatches() const { return mismatches_; }

 private:
  struct Live {
    void* p;
    std::size_t size;
    unsigned char pattern;
  };

  void expect_intact(const Live& l) const {
    const std::size_t at = Memory::first_difference(l.p, l.size, l.pattern);
    if (at != l.size) {
      ++mismatches_;
      ADD_FAILURE() << "byte " << at << " of the " << l.size << " B buffer at " << l.p
                    << " was overwritten";
    }
  }

  void expect_no_overlap(void* p, std::size_t size) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    for (const auto& [id, l] : live_) {
      const auto b = reinterpret_cast<std::uintptr_t>(l.p);
      if (a < b + l.size && b < a + size) {
        ++overlaps_;
        ADD_FAILURE() << "new " << size << " B buffer at " << p << " overlaps live buffer " << id;
      }
    }
  }

  std::unique_ptr<typename Memory::Backend> backend_;
  Compiler compiler_;
  std::map<int, Live> live_;
  unsigned next_pattern_ = 0;
  mutable std::uint64_t overlaps_ = 0;
  mutable std::uint64_t mismatches_ = 0;
};

using Harness = BasicHarness<HostMemory>;

// A transformer-block-shaped step: per block, activations allocated and freed in a nested order.
inline Program dit_step(int blocks, std::size_t tokens, bool sparse = false) {
  Program p;
  int id = 0;
  const std::size_t hidden = tokens * 128;
  p.push_back(alloc(id++, hidden));  // x, lives the whole step
  for (int b = 0; b < blocks; ++b) {
    const int norm = id++, qkv = id++, attn = id++, mlp = id++;
    p.push_back(alloc(norm, hidden));
    p.push_back(alloc(qkv, 3 * hidden));
    p.push_back(free_(norm));
    if (sparse) {
      const int select = id++;
      p.push_back(alloc(select, tokens / 8 + 256, "kv_idx"));
      p.push_back(alloc(attn, hidden));
      p.push_back(free_(select));
    } else {
      p.push_back(alloc(attn, hidden));
    }
    p.push_back(free_(qkv));
    p.push_back(alloc(mlp, 4 * hidden));
    p.push_back(free_(attn));
    p.push_back(free_(mlp));
  }
  p.push_back(free_(0));
  return p;
}

}  // namespace memplan::testing
