// The host copy engine: memcpy on a HostStream. A copy after a HostStream's work first queues a
// wait for that stream's ticket on the copy stream; a compute HostStream waits for a copy by
// queueing a wait for the copy's ticket. Waits only ever name work queued earlier, so the two
// streams cannot wait on each other in a cycle.
#include <fmt/format.h>

#include <cstring>

#include "memplan/error.hpp"
#include "memplan/stream/copy_engine.hpp"

namespace memplan::stream {
namespace {

arena::HostStream* host_stream(StreamRef s) { return static_cast<arena::HostStream*>(s.native); }

}  // namespace

HostCopyEngine::HostCopyEngine()
    : owned_(std::make_unique<arena::HostStream>()), copy_(owned_.get()) {}

HostCopyEngine::HostCopyEngine(arena::HostStream& copy_stream) : copy_(&copy_stream) {}

HostCopyEngine::~HostCopyEngine() { copy_->synchronize(); }

void HostCopyEngine::prepare(std::size_t copies) {
  if (copies > done_.size()) done_.resize(copies, 0);
}

void HostCopyEngine::copy_after(StreamRef compute, void* dst, const void* src, std::size_t bytes,
                                std::size_t id) {
  if (id >= done_.size()) {
    throw InvalidArgument(
        fmt::format("HostCopyEngine: copy {} was not prepared ({} are)", id, done_.size()));
  }
  if (arena::HostStream* c = host_stream(compute)) {
    copy_->enqueue([c, ticket = c->record()] { c->wait(ticket); });
  }
  copy_->enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  done_[id] = copy_->record();
}

void HostCopyEngine::wait_for(StreamRef compute, std::size_t id) {
  if (id >= done_.size()) {
    throw InvalidArgument(
        fmt::format("HostCopyEngine: copy {} was not prepared ({} are)", id, done_.size()));
  }
  if (arena::HostStream* c = host_stream(compute)) {
    c->enqueue([copy = copy_, ticket = done_[id]] { copy->wait(ticket); });
  } else {
    copy_->wait(done_[id]);
  }
}

void HostCopyEngine::synchronize() { copy_->synchronize(); }

}  // namespace memplan::stream
