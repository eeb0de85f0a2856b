// Where weight streaming's host-to-device copies run: a copy stream beside the compute stream,
// with the two orderings streaming needs, as events. copy_after(compute, ...) starts a copy once
// every piece of work queued on the compute stream so far has run (the slot it writes was freed
// by that work: the stream-ordered model's event between a free and a reuse on another stream);
// wait_for(compute, id) makes the compute stream's later work wait for that copy. Both only
// enqueue: no host wait, no allocation, so a step that calls them can be captured as a CUDA Graph
// (CudaCopyEngine, cuda_copy_engine.hpp). HostCopyEngine is the host twin on arena::HostStream,
// for CPU runtimes and tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "memplan/arena/host_stream.hpp"
#include "memplan/types.hpp"

namespace memplan::stream {

class CopyEngine {
 public:
  CopyEngine() = default;
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;
  virtual ~CopyEngine() = default;

  // Makes the events of copies 0..copies-1 (one per streamed block), once, outside any step and
  // any capture. A later call with more copies adds events; ids stay valid.
  virtual void prepare(std::size_t copies) = 0;
  // Enqueues dst <- src (bytes) on the copy stream, to start once the work queued on `compute`
  // so far has run. Copy `id` (< prepared) completes with it.
  virtual void copy_after(StreamRef compute, void* dst, const void* src, std::size_t bytes,
                          std::size_t id) = 0;
  // The work queued on `compute` from now on waits for copy `id`, last issued by copy_after.
  virtual void wait_for(StreamRef compute, std::size_t id) = 0;
  // Blocks the host until every copy issued so far has completed: for an aborted step and for
  // loading resident blocks; never inside a captured step.
  virtual void synchronize() = 0;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
};

// The host twin: the copy stream is an arena::HostStream (its own thread), copies are memcpy. The
// compute stream is a HostStream* in StreamRef::native, or null for work that runs at once on the
// calling thread (the null stream is "already complete": a copy starts at once, and wait_for
// blocks the caller until the copy is done).
class HostCopyEngine final : public CopyEngine {
 public:
  HostCopyEngine();  // owns its copy stream
  // Copies on `copy_stream`, which the caller owns and may queue work of its own on (tests put
  // delays there); it must outlive the engine.
  explicit HostCopyEngine(arena::HostStream& copy_stream);
  ~HostCopyEngine() override;

  void prepare(std::size_t copies) override;
  void copy_after(StreamRef compute, void* dst, const void* src, std::size_t bytes,
                  std::size_t id) override;
  void wait_for(StreamRef compute, std::size_t id) override;
  void synchronize() override;
  [[nodiscard]] std::string_view name() const noexcept override { return "host copy stream"; }

 private:
  std::unique_ptr<arena::HostStream> owned_;
  arena::HostStream* copy_;
  std::vector<std::uint64_t> done_;  // the copy stream's ticket of each copy's completion
};

}  // namespace memplan::stream
