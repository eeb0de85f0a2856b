// The in-process communicator: every rank gets every other rank's block, for group sizes 1 to 5
// and random block sizes, call after call; a size that differs between ranks is an error on every
// rank, and the group goes on working after it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "memplan/comm/communicator.hpp"
#include "memplan/error.hpp"

namespace memplan::comm {
namespace {

std::uint8_t value(int from, int to, std::size_t i, int call) {
  return static_cast<std::uint8_t>(from * 31 + to * 7 + static_cast<int>(i) * 3 + call);
}

template <class Body>
void run_ranks(HostCommGroup& group, Body&& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < group.ranks(); ++r) {
    threads.emplace_back([&, r] { body(*group.rank(r)); });
  }
  for (std::thread& t : threads) t.join();
}

TEST(HostComm, AllToAllAndAllGatherDeliverEveryBlockForAnyGroupSize) {
  for (int ranks = 1; ranks <= 5; ++ranks) {
    HostCommGroup group(ranks);
    std::vector<std::string> failures(static_cast<std::size_t>(ranks));
    run_ranks(group, [&](Communicator& comm) {
      std::mt19937 rng(7);  // the same sizes on every rank
      const int me = comm.rank();
      for (int call = 0; call < 20; ++call) {
        const std::size_t block = rng() % 300 + 1;
        std::vector<std::uint8_t> send(block * ranks), recv(block * ranks, 0);
        for (int to = 0; to < ranks; ++to) {
          for (std::size_t i = 0; i < block; ++i) send[to * block + i] = value(me, to, i, call);
        }
        comm.all_to_all(send.data(), recv.data(), block, {});
        for (int from = 0; from < ranks; ++from) {
          for (std::size_t i = 0; i < block; ++i) {
            if (recv[from * block + i] != value(from, me, i, call) && failures[me].empty()) {
              failures[me] = "all_to_all call " + std::to_string(call);
            }
          }
        }
        std::vector<std::uint8_t> gathered(block * ranks, 0);
        comm.all_gather(send.data() + me * block, gathered.data(), block, {});
        for (int from = 0; from < ranks; ++from) {
          if (gathered[from * block] != value(from, from, 0, call) && failures[me].empty()) {
            failures[me] = "all_gather call " + std::to_string(call);
          }
        }
      }
    });
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(failures[r], "") << ranks << " ranks, rank " << r;
  }
}

TEST(HostComm, SizesThatDifferBetweenRanksFailOnEveryRankAndTheGroupGoesOn) {
  HostCommGroup group(3);
  std::vector<std::string> errors(3);
  std::vector<int> after(3, -1);
  run_ranks(group, [&](Communicator& comm) {
    const int me = comm.rank();
    std::vector<std::uint8_t> send(64 * 3, static_cast<std::uint8_t>(me)), recv(64 * 3);
    try {
      comm.all_to_all(send.data(), recv.data(), me == 1 ? 32 : 64, {});
    } catch (const InvalidArgument& e) {
      errors[me] = e.what();
    }
    comm.all_to_all(send.data(), recv.data(), 64, {});
    after[me] = recv[2 * 64];  // from rank 2
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(errors[r].find("all_to_all: rank " + std::to_string(r) + " passes "),
              std::string::npos)
        << errors[r];
    EXPECT_EQ(after[r], 2);
  }
  EXPECT_NE(errors[1].find("rank 1 passes 32 bytes, rank 0 passes 64"), std::string::npos)
      << errors[1];
}

TEST(HostComm, AGroupNeedsARankAndARankMustBeInIt) {
  EXPECT_THROW(HostCommGroup(0), InvalidArgument);
  HostCommGroup group(2);
  EXPECT_THROW((void)group.rank(2), InvalidArgument);
  EXPECT_THROW((void)group.rank(-1), InvalidArgument);
}

}  // namespace
}  // namespace memplan::comm
