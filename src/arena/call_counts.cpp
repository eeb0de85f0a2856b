#include "memplan/arena/call_counts.hpp"

namespace memplan::arena {

std::string_view call_name(Call call) noexcept {
  switch (call) {
    case Call::reserve_va: return "reserve_va";
    case Call::free_va: return "free_va";
    case Call::create_chunk: return "create_chunk";
    case Call::release_chunk: return "release_chunk";
    case Call::map: return "map";
    case Call::set_access: return "set_access";
    case Call::unmap: return "unmap";
    case Call::create_fence: return "create_fence";
    case Call::record_fence: return "record_fence";
    case Call::wait_fence: return "wait_fence";
    case Call::destroy_fence: return "destroy_fence";
    case Call::query_free: return "query_free";
    case Call::fill: return "fill";
    case Call::query_fence: return "query_fence";
  }
  return "unknown";
}

}  // namespace memplan::arena
