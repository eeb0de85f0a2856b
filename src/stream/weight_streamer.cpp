// The streamer: resident blocks in the pool, and per step the slots of streamed blocks, fetched
// depth blocks ahead through the step's context (so they are planned, fingerprinted and captured
// like the step's own allocations and launches).
#include "memplan/stream/weight_streamer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "core/log.hpp"
#include "memplan/error.hpp"

namespace memplan::stream {

WeightStreamer::WeightStreamer(Compiler& compiler, CopyEngine& engine,
                               std::vector<WeightBlock> blocks, StreamingPlan plan)
    : compiler_(compiler),
      engine_(engine),
      blocks_(std::move(blocks)),
      plan_(plan),
      resident_(blocks_.size(), nullptr) {
  if (plan_.blocks != blocks_.size() || plan_.resident_blocks > blocks_.size()) {
    throw InvalidArgument(
        fmt::format("WeightStreamer: the plan is for {} blocks ({} resident), the streamer has {}",
                    plan_.blocks, plan_.resident_blocks, blocks_.size()));
  }
  if (plan_.resident_blocks < blocks_.size() && plan_.depth == 0) {
    throw InvalidArgument("WeightStreamer: streamed blocks need a prefetch depth >= 1");
  }
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    if (blocks_[i].host == nullptr || blocks_[i].bytes == 0) {
      throw InvalidArgument(fmt::format("WeightStreamer: block {} has no host weights ({} B at {})",
                                        i, blocks_[i].bytes, blocks_[i].host));
    }
  }
  engine_.prepare(blocks_.size());
}

WeightStreamer::~WeightStreamer() {
  for (void*& p : resident_) {
    try {
      compiler_.deallocate(std::exchange(p, nullptr));
    } catch (const std::exception& e) {
      logger().error("WeightStreamer: freeing a resident block failed: {}", e.what());
    }
  }
}

void WeightStreamer::load_resident(StreamRef stream) {
  if (loaded_) throw InvalidState("WeightStreamer::load_resident: already loaded");
  if (compiler_.in_step()) throw InvalidState("WeightStreamer::load_resident: inside a step");
  {
    auto pause = compiler_.pause();
    for (std::size_t i = 0; i < plan_.resident_blocks; ++i) {
      resident_[i] = compiler_.allocate(blocks_[i].bytes, stream, kSlotTag);
      engine_.copy_after(stream, resident_[i], blocks_[i].host, blocks_[i].bytes, i);
      engine_.wait_for(stream, i);
    }
  }
  engine_.synchronize();
  loaded_ = true;
}

StreamedStep::StreamedStep(WeightStreamer& streamer, capture::StepContext& ctx)
    : streamer_(streamer), ctx_(ctx), slots_(streamer.blocks(), nullptr) {
  if (streamer_.plan().resident_blocks > 0 && streamer_.resident(0) == nullptr) {
    throw InvalidState("StreamedStep: the streamer's resident blocks are not loaded");
  }
}

StreamedStep::~StreamedStep() {
  if (slots_held() == 0) return;
  // A copy may still be writing a slot: wait for it before the compiler can hand the range out.
  try {
    streamer_.engine().synchronize();
  } catch (const std::exception& e) {
    logger().error("StreamedStep: waiting for the copies failed: {}", e.what());
  }
  for (void*& slot : slots_) {
    if (slot == nullptr) continue;
    try {
      ctx_.deallocate(std::exchange(slot, nullptr));
    } catch (const std::exception& e) {
      logger().error("StreamedStep: freeing a staging slot failed: {}", e.what());
    }
  }
}

std::size_t StreamedStep::slots_held() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(slots_.begin(), slots_.end(), [](void* p) { return p != nullptr; }));
}

void StreamedStep::fetch(std::size_t block) {
  const WeightBlock& w = streamer_.block(block);
  void* slot = ctx_.allocate(w.bytes, kSlotTag);
  slots_[block] = slot;
  ctx_.depends_on(w.host);
  CopyEngine* engine = &streamer_.engine();
  ctx_.launch([engine, slot, w, block](StreamRef s) {
    engine->copy_after(s, slot, w.host, w.bytes, block);
  });
}

void* StreamedStep::enter(std::size_t block) {
  if (block != next_enter_ || in_block_ || block >= streamer_.blocks()) {
    throw InvalidArgument(fmt::format(
        "StreamedStep::enter({}): blocks are entered in order, each once, and left before the "
        "next; expected block {} of {}{}",
        block, next_enter_, streamer_.blocks(), in_block_ ? " (still in the last one)" : ""));
  }
  const StreamingPlan& plan = streamer_.plan();
  const std::size_t last = std::min(block + plan.depth, streamer_.blocks() - 1);
  for (; next_fetch_ <= last; ++next_fetch_) {
    if (plan.streamed(next_fetch_)) fetch(next_fetch_);
  }
  ++next_enter_;
  in_block_ = true;
  if (!plan.streamed(block)) {
    void* p = streamer_.resident(block);
    ctx_.depends_on(p);
    return p;
  }
  CopyEngine* engine = &streamer_.engine();
  ctx_.launch([engine, block](StreamRef s) { engine->wait_for(s, block); });
  return slots_[block];
}

void StreamedStep::leave(std::size_t block) {
  if (!in_block_ || block + 1 != next_enter_) {
    throw InvalidArgument(in_block_
                              ? fmt::format("StreamedStep::leave({}): the block entered is {}",
                                            block, next_enter_ - 1)
                              : fmt::format("StreamedStep::leave({}): no block is entered", block));
  }
  in_block_ = false;
  if (void* slot = std::exchange(slots_[block], nullptr)) ctx_.deallocate(slot);
}

}  // namespace memplan::stream
