// Text placed into the pictures: escaped for XML/HTML attributes and content. (JSON strings inside
// the HTML's <script> come from core's json_string, which escapes < > & too.)
#pragma once

#include <string>
#include <string_view>

#include "memplan/draw/model.hpp"
#include "memplan/plan/problem.hpp"

namespace memplan::draw::detail {

[[nodiscard]] std::string xml_escape(std::string_view text);

// "id · tag · 1.36 GiB (1460288880 B) · live [0, 12) · at [0 B, 1.36 GiB)": what a hover or a
// title says about one buffer.
[[nodiscard]] std::string describe_buffer(const plan::Buffer& buffer, Bytes offset,
                                          std::string_view tag);

// "37.5%".
[[nodiscard]] std::string percent(double share);

}  // namespace memplan::draw::detail
