// Writing a picture to a file: the renderer chosen by the extension, the file written whole.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "memplan/draw/picture.hpp"
#include "memplan/error.hpp"

namespace memplan::draw {

void write_picture(const std::filesystem::path& path, const plan::Problem& problem,
                   std::span<const Bytes> offsets, const DrawOptions& options) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string text;
  if (extension == ".svg") {
    text = to_svg(problem, offsets, options);
  } else if (extension == ".html" || extension == ".htm") {
    text = to_html(problem, offsets, options);
  } else {
    throw InvalidArgument(fmt::format(
        "{}: cannot tell the picture's format from the extension '{}' (use .svg or .html)",
        path.string(), extension));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw Error(
        fmt::format("{}: cannot open for writing ({})", path.string(), std::strerror(errno)));
  }
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) {
    throw Error(fmt::format("{}: write failed after {} bytes ({})", path.string(), text.size(),
                            std::strerror(errno)));
  }
}

}  // namespace memplan::draw
