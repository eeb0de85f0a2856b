#include "memplan/arena/call_counts.hpp"

namespace memplan::arena {

std::string_view to_string(Call call) noexcept {
  switch (call) {
    case Call::ReserveVa:
      return "reserve_va";
    case Call::FreeVa:
      return "free_va";
    case Call::CreateChunk:
      return "create_chunk";
    case Call::ReleaseChunk:
      return "release_chunk";
    case Call::Map:
      return "map";
    case Call::SetAccess:
      return "set_access";
    case Call::Unmap:
      return "unmap";
    case Call::CreateFence:
      return "create_fence";
    case Call::RecordFence:
      return "record_fence";
    case Call::WaitFence:
      return "wait_fence";
    case Call::DestroyFence:
      return "destroy_fence";
    case Call::QueryFree:
      return "query_free";
    case Call::Fill:
      return "fill";
    case Call::QueryFence:
      return "query_fence";
  }
  return "unknown";
}

}  // namespace memplan::arena
