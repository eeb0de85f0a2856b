// Finding and loading libnccl once per process. Every place tried is remembered, so that the error
// on a machine without NCCL says where it looked and why each failed.
#include <dlfcn.h>
#include <fmt/format.h>
#include <glob.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "memplan/error.hpp"
#include "nccl_api.hpp"

namespace memplan::comm {
namespace {

// An explicit path is the only one tried: a user who names a library means that one.
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("MEMPLAN_NCCL_LIBRARY"); env != nullptr && *env != '\0') {
    out.emplace_back(env);
    return out;
  }
  out.emplace_back("libnccl.so.2");
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/lib"}) {
    out.push_back(fmt::format("{}/libnccl.so.2", dir));
  }
  // PyTorch's wheels: site-packages/nvidia/nccl/lib/libnccl.so.2.
  for (const char* pattern :
       {"/usr/local/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
        "/usr/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
        "/opt/conda/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2"}) {
    glob_t found{};
    if (::glob(pattern, 0, nullptr, &found) == 0) {
      for (std::size_t i = 0; i < found.gl_pathc; ++i) out.emplace_back(found.gl_pathv[i]);
    }
    ::globfree(&found);
  }
  return out;
}

template <class Fn>
void resolve(void* lib, const char* symbol, Fn& fn, const std::string& path) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, symbol));
  if (fn == nullptr) {
    throw CudaError(fmt::format("NCCL at {} has no {} (NCCL 2.x is needed)", path, symbol));
  }
}

struct Loaded {
  NcclLibrary::Api api;
  std::string path;
  int version = 0;
  std::string error;  // empty when loaded
};

Loaded load() {
  Loaded out;
  std::string tried;
  for (const std::string& path : candidates()) {
    // Never closed: NCCL keeps threads and state for the life of the process.
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = ::dlerror();
      tried += fmt::format("\n  {}: {}", path, why != nullptr ? why : "not loadable");
      continue;
    }
    try {
      NcclLibrary::Api& a = out.api;
      resolve(lib, "ncclGetVersion", a.GetVersion, path);
      resolve(lib, "ncclGetErrorString", a.GetErrorString, path);
      resolve(lib, "ncclGetUniqueId", a.GetUniqueId, path);
      resolve(lib, "ncclCommInitRank", a.CommInitRank, path);
      resolve(lib, "ncclCommInitAll", a.CommInitAll, path);
      resolve(lib, "ncclCommDestroy", a.CommDestroy, path);
      resolve(lib, "ncclGroupStart", a.GroupStart, path);
      resolve(lib, "ncclGroupEnd", a.GroupEnd, path);
      resolve(lib, "ncclSend", a.Send, path);
      resolve(lib, "ncclRecv", a.Recv, path);
      resolve(lib, "ncclAllGather", a.AllGather, path);
      a.check(a.GetVersion(&out.version), "ncclGetVersion");
    } catch (const Error& e) {
      tried += fmt::format("\n  {}: {}", path, e.what());
      continue;
    }
    out.path = path;
    return out;
  }
  out.error = fmt::format(
      "NCCL not available: no libnccl.so.2 could be loaded (set MEMPLAN_NCCL_LIBRARY to its "
      "path). Tried:{}",
      tried);
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

void NcclLibrary::Api::check(abi::Result result, const char* call) const {
  if (result == abi::kSuccess) return;
  const char* words = GetErrorString != nullptr ? GetErrorString(result) : nullptr;
  throw CudaError(fmt::format("{} failed: {} (ncclResult_t {})", call,
                              words != nullptr ? words : "unknown error", result));
}

const NcclLibrary& NcclLibrary::get() {
  static const NcclLibrary library = [] {
    const Loaded& l = loaded();
    if (!l.error.empty()) throw CudaError(l.error);
    NcclLibrary lib;
    lib.api_ = &l.api;
    lib.path_ = l.path;
    lib.version_ = l.version;
    logger().info("NCCL {} loaded from {}", lib.version_string(), lib.path_);
    return lib;
  }();
  return library;
}

bool NcclLibrary::available() noexcept { return loaded().error.empty(); }

std::string NcclLibrary::version_string() const {
  // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
  return fmt::format("{}.{}.{}", version_ / 10000, version_ / 100 % 100, version_ % 100);
}

}  // namespace memplan::comm
