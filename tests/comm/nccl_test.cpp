// The NCCL loader on any machine: where NCCL is installed it loads and names its version; where it
// is not, the error says so, names what was tried and how to point memplan at a library. With
// MEMPLAN_NCCL_LIBRARY set (a ctest run of its own), that path is the only one tried.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>

#include "memplan/comm/nccl.hpp"
#include "memplan/error.hpp"

namespace memplan::comm {
namespace {

std::string load_error() {
  try {
    (void)NcclLibrary::get();
  } catch (const CudaError& e) {
    return e.what();
  }
  return {};
}

TEST(NcclLibrary, LoadsAndNamesItsVersionOrSaysWhereItLooked) {
  if (std::getenv("MEMPLAN_NCCL_LIBRARY") != nullptr) GTEST_SKIP() << "the explicit-path run";
  if (NcclLibrary::available()) {
    const NcclLibrary& nccl = NcclLibrary::get();
    EXPECT_GE(nccl.version(), 20000);
    EXPECT_TRUE(std::regex_match(nccl.version_string(), std::regex(R"(2\.\d+\.\d+)")))
        << nccl.version_string();
    EXPECT_NE(nccl.path().find("nccl"), std::string::npos) << nccl.path();
    return;
  }
  const std::string error = load_error();
  EXPECT_NE(error.find("NCCL not available: no libnccl.so.2 could be loaded (set "
                       "MEMPLAN_NCCL_LIBRARY to its path). Tried:\n  libnccl.so.2: "),
            std::string::npos)
      << error;
  EXPECT_THROW((void)NcclComm::unique_id(), CudaError);  // every use says the same
}

TEST(NcclLibrary, AnExplicitPathIsTheOnlyOneTried) {
  const char* path = std::getenv("MEMPLAN_NCCL_LIBRARY");
  if (path == nullptr) GTEST_SKIP() << "needs MEMPLAN_NCCL_LIBRARY (ctest sets it for this test)";
  EXPECT_FALSE(NcclLibrary::available());
  const std::string error = load_error();
  EXPECT_NE(error.find(std::string("Tried:\n  ") + path + ": "), std::string::npos) << error;
  EXPECT_EQ(error.find("\n  libnccl.so.2: "), std::string::npos) << error;  // nothing else tried
}

TEST(NcclComm, BadRanksAreRefusedBeforeNcclIsCalled) {
  EXPECT_THROW(NcclComm(NcclUniqueId{}, 2, 2), InvalidArgument);
  EXPECT_THROW(NcclComm(NcclUniqueId{}, 0, 0), InvalidArgument);
  EXPECT_THROW((void)NcclComm::init_all({}), InvalidArgument);
}

}  // namespace
}  // namespace memplan::comm
