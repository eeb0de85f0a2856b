// The host backend. Every system call's failure becomes an exception naming the call, the size and
// errno's text; ENOMEM/ENOSPC become OutOfMemory so the arena can report its numbers.
#include "memplan/arena/host_backend.hpp"

#include "bytes.hpp"
#include "memplan/arena/host_stream.hpp"
#include "memplan/error.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <system_error>

namespace memplan::arena {
namespace {

[[noreturn]] void throw_errno(const char* call, std::size_t bytes, int err) {
  const std::string message =
      fmt::format("host backend: {} of {} failed: {}", call, detail::pretty_bytes(bytes),
                  std::error_code(err, std::generic_category()).message());
  if (err == ENOMEM || err == ENOSPC) throw OutOfMemory(message);
  throw Error(message);
}

struct HostFence {
  HostStream* stream = nullptr;
  std::uint64_t ticket = 0;
};

HostFence* fence_of(FenceHandle handle) { return reinterpret_cast<HostFence*>(handle); }

void fill_words(void* va, std::size_t bytes, std::uint32_t pattern) noexcept {
  std::fill_n(static_cast<std::uint32_t*>(va), bytes / 4, pattern);
}

}  // namespace

HostBackend::HostBackend(HostBackendOptions options)
    : options_(options), page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {}

void* HostBackend::do_reserve_va(std::size_t bytes) {
  void* va = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (va == MAP_FAILED) throw_errno("mmap(PROT_NONE) reserve", bytes, errno);
  return va;
}

void HostBackend::do_free_va(void* va, std::size_t bytes) {
  if (::munmap(va, bytes) != 0) throw_errno("munmap", bytes, errno);
}

ChunkHandle HostBackend::do_create_chunk(std::size_t bytes) {
  const int fd = ::memfd_create("memplan-chunk", MFD_CLOEXEC);
  if (fd < 0) throw_errno("memfd_create", bytes, errno);
  const auto length = static_cast<off_t>(bytes);
  if (::ftruncate(fd, length) != 0 || (options_.commit && ::fallocate(fd, 0, 0, length) != 0)) {
    const int err = errno;
    ::close(fd);
    throw_errno(options_.commit ? "memfd ftruncate/fallocate" : "memfd ftruncate", bytes, err);
  }
  return static_cast<ChunkHandle>(fd);
}

void HostBackend::do_release_chunk(ChunkHandle chunk) {
  // Like cuMemRelease: the pages live on while a mapping still refers to them.
  if (::close(static_cast<int>(chunk)) != 0) throw_errno("close(memfd)", 0, errno);
}

void HostBackend::do_map(void* va, std::size_t bytes, ChunkHandle chunk) {
  // Mapped without access, as cuMemMap: set_access grants it.
  void* got = ::mmap(va, bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, static_cast<int>(chunk), 0);
  if (got == MAP_FAILED) throw_errno("mmap(MAP_FIXED|MAP_SHARED)", bytes, errno);
}

void HostBackend::do_set_access(void* va, std::size_t bytes) {
  if (::mprotect(va, bytes, PROT_READ | PROT_WRITE) != 0) throw_errno("mprotect", bytes, errno);
}

void HostBackend::do_unmap(void* va, std::size_t bytes) {
  // Put the reservation back in one step, so no other mapping can land in the hole.
  void* got =
      ::mmap(va, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (got == MAP_FAILED) throw_errno("mmap(PROT_NONE) unmap", bytes, errno);
}

FenceHandle HostBackend::do_create_fence(StreamRef stream) {
  return reinterpret_cast<FenceHandle>(new HostFence{static_cast<HostStream*>(stream.native), 0});
}

void HostBackend::do_record_fence(FenceHandle fence, StreamRef stream) {
  HostFence* f = fence_of(fence);
  f->stream = static_cast<HostStream*>(stream.native);
  f->ticket = f->stream != nullptr ? f->stream->record() : 0;
}

void HostBackend::do_wait_fence(FenceHandle fence) {
  const HostFence* f = fence_of(fence);
  if (f->stream != nullptr) f->stream->wait(f->ticket);
}

void HostBackend::do_destroy_fence(FenceHandle fence) { delete fence_of(fence); }

bool HostBackend::do_fence_passed(FenceHandle fence) {
  const HostFence* f = fence_of(fence);
  return f->stream == nullptr || f->stream->done(f->ticket);
}

void HostBackend::do_fill(void* va, std::size_t bytes, std::uint32_t pattern, StreamRef stream) {
  auto* host_stream = static_cast<HostStream*>(stream.native);
  if (host_stream == nullptr) {
    fill_words(va, bytes, pattern);
  } else {
    host_stream->enqueue([va, bytes, pattern] { fill_words(va, bytes, pattern); });
  }
}

std::size_t HostBackend::do_free_bytes() {
  const long pages = ::sysconf(_SC_AVPHYS_PAGES);
  return pages > 0 ? static_cast<std::size_t>(pages) * page_ : 0;
}

}  // namespace memplan::arena
