// The persistent pool's parts on their own: size classes and the live-pointer table.
#include "memplan/arena/detail/live_table.hpp"
#include "memplan/arena/detail/size_class.hpp"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace memplan::arena::detail {
namespace {

TEST(SizeClass, SmallSizesHaveExactClasses) {
  for (std::uint64_t u = 1; u < 32; ++u) {
    const SizeClass a = class_of(u);
    const SizeClass b = class_at_least(u);
    EXPECT_EQ(a.fl, b.fl) << u;
    EXPECT_EQ(a.sl, b.sl) << u;
  }
}

TEST(SizeClass, ClassesAreMonotonicAndSearchClassesAlwaysFit) {
  auto rank = [](SizeClass c) { return c.fl * kSlCount + c.sl; };
  unsigned last = 0;
  for (std::uint64_t u = 1; u < (1u << 16); ++u) {
    const unsigned r = rank(class_of(u));
    ASSERT_GE(r, last) << u;
    last = r;
    // Every size filed under the search class of u is at least u.
    const unsigned want = rank(class_at_least(u));
    for (std::uint64_t v = u > 64 ? u - 64 : 1; v < u; ++v)
      ASSERT_LT(rank(class_of(v)), want) << u << " " << v;
  }
  EXPECT_LT(class_of((std::uint64_t{1} << 47) >> 8).fl, kFlCount);
}

TEST(LiveTable, MatchesAStandardMapUnderRandomUse) {
  LiveTable table;
  std::unordered_map<std::uint64_t, std::uint32_t> model;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t key = (rng() % 50000) * 256;
    if (rng() % 2 == 0) {
      if (model.count(key) == 0) {
        const auto v = static_cast<std::uint32_t>(rng() % 1000000);
        table.insert(key, v);
        model[key] = v;
      }
    } else {
      const auto it = model.find(key);
      ASSERT_EQ(table.take(key), it == model.end() ? kNone : it->second);
      if (it != model.end()) model.erase(it);
    }
    ASSERT_EQ(table.size(), model.size());
  }
  for (const auto& [k, v] : model) ASSERT_EQ(table.find(k), v);
}

}  // namespace
}  // namespace memplan::arena::detail
