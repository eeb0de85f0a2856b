#include "text.hpp"

#include <fmt/format.h>

namespace memplan::draw::detail {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // Control characters are not allowed in XML 1.0 text: shown as U+FFFD.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
          out += "\xEF\xBF\xBD";
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string describe_buffer(const plan::Buffer& buffer, Bytes offset, std::string_view tag) {
  return fmt::format("{}{}{} · {} ({} B) · live [{}, {}) · at [{}, {})", buffer.id,
                     tag.empty() ? "" : " · ", tag, human_bytes(buffer.size), buffer.size,
                     buffer.lower, buffer.upper, human_bytes(offset),
                     human_bytes(offset + buffer.size));
}

std::string percent(double share) { return fmt::format("{:.1f}%", share * 100); }

}  // namespace memplan::draw::detail
