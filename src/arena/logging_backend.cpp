#include "memplan/arena/logging_backend.hpp"

#include "core/log.hpp"

#include <spdlog/fmt/fmt.h>

namespace memplan::arena {

void* LoggingBackend::do_reserve_va(std::size_t bytes) {
  void* va = upstream().reserve_va(bytes);
  logger().debug("{}: reserve_va({}) -> {}", name(), bytes, va);
  return va;
}
void LoggingBackend::do_free_va(void* va, std::size_t bytes) {
  logger().debug("{}: free_va({}, {})", name(), va, bytes);
  upstream().free_va(va, bytes);
}
ChunkHandle LoggingBackend::do_create_chunk(std::size_t bytes) {
  const ChunkHandle chunk = upstream().create_chunk(bytes);
  logger().debug("{}: create_chunk({}) -> {:#x}", name(), bytes, chunk);
  return chunk;
}
void LoggingBackend::do_release_chunk(ChunkHandle chunk) {
  logger().debug("{}: release_chunk({:#x})", name(), chunk);
  upstream().release_chunk(chunk);
}
void LoggingBackend::do_map(void* va, std::size_t bytes, ChunkHandle chunk) {
  logger().debug("{}: map({}, {}, {:#x})", name(), va, bytes, chunk);
  upstream().map(va, bytes, chunk);
}
void LoggingBackend::do_set_access(void* va, std::size_t bytes) {
  logger().debug("{}: set_access({}, {})", name(), va, bytes);
  upstream().set_access(va, bytes);
}
void LoggingBackend::do_unmap(void* va, std::size_t bytes) {
  logger().debug("{}: unmap({}, {})", name(), va, bytes);
  upstream().unmap(va, bytes);
}
FenceHandle LoggingBackend::do_create_fence(StreamRef stream) {
  const FenceHandle fence = upstream().create_fence(stream);
  logger().debug("{}: create_fence(stream {}) -> {:#x}", name(), stream.native, fence);
  return fence;
}
void LoggingBackend::do_record_fence(FenceHandle fence, StreamRef stream) {
  logger().debug("{}: record_fence({:#x}, stream {})", name(), fence, stream.native);
  upstream().record_fence(fence, stream);
}
void LoggingBackend::do_wait_fence(FenceHandle fence) {
  logger().debug("{}: wait_fence({:#x})", name(), fence);
  upstream().wait_fence(fence);
}
void LoggingBackend::do_destroy_fence(FenceHandle fence) {
  logger().debug("{}: destroy_fence({:#x})", name(), fence);
  upstream().destroy_fence(fence);
}
bool LoggingBackend::do_fence_passed(FenceHandle fence) {
  const bool passed = upstream().fence_passed(fence);
  logger().debug("{}: fence_passed({:#x}) -> {}", name(), fence, passed);
  return passed;
}
void LoggingBackend::do_fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream) {
  logger().debug("{}: fill({}, {}, {:#010x}, stream {})", name(), va, bytes, pattern,
                 stream.native);
  upstream().fill(va, bytes, pattern, stream);
}
std::size_t LoggingBackend::do_free_bytes() {
  const std::size_t bytes = upstream().free_bytes();
  logger().debug("{}: free_bytes() -> {}", name(), bytes);
  return bytes;
}

}  // namespace memplan::arena
