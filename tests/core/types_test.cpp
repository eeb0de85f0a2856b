// The shared types: align_up for any alignment and integer type; human_bytes's units and digits.
#include <gtest/gtest.h>

#include <cstddef>

#include "memplan/types.hpp"

namespace memplan {
namespace {

TEST(AlignUp, RoundsToAnyMultipleAndKeepsMultiples) {
  EXPECT_EQ(align_up<Bytes>(0, 256), 0);
  EXPECT_EQ(align_up<Bytes>(1, 256), 256);
  EXPECT_EQ(align_up<Bytes>(256, 256), 256);
  EXPECT_EQ(align_up<Bytes>(257, 3), 258);  // not only powers of two
  EXPECT_EQ(align_up<std::size_t>(std::size_t{3} << 20, std::size_t{2} << 20),
            std::size_t{4} << 20);
}

TEST(HumanBytes, ThreeSignificantDigitsInBinaryUnits) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1024), "1.00 KiB");
  EXPECT_EQ(human_bytes(1460288880), "1.36 GiB");
  EXPECT_EQ(human_bytes(Bytes{14} << 30), "14.0 GiB");
  EXPECT_EQ(human_bytes(Bytes{136} << 30), "136 GiB");
  EXPECT_EQ(human_bytes(Bytes{1} << 62), "4.00 EiB");
  EXPECT_EQ(human_bytes(-(Bytes{2} << 20)), "-2.00 MiB");
  EXPECT_EQ(human_bytes(1536), "1.50 KiB");
  EXPECT_EQ(human_bytes(10234), "9.99 KiB");  // 9.994
  EXPECT_EQ(human_bytes(10236), "10.0 KiB");  // 9.996: "10.00" would be a fourth digit
  EXPECT_EQ(human_bytes(Bytes{50} << 20), "50.0 MiB");
  EXPECT_EQ(human_bytes(102349), "100 KiB");  // 99.95: not "100.0"
}

}  // namespace
}  // namespace memplan
