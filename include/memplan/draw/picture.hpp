// Pictures of a plan: every buffer a rectangle over time (x) and address (y), the peak instant
// with the buffers live there, the lower bound and the arena size as lines. Two renderers over
// one model (model.hpp): SVG (a static picture; a title per rectangle) and HTML (a canvas drawn
// from embedded data, hover, zoom; usable at 100,000 buffers). Both files are self-contained: no
// network, no external scripts or fonts. See docs/drawing.md.
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include "memplan/plan/problem.hpp"
#include "memplan/types.hpp"

namespace memplan::draw {

struct DrawOptions {
  std::string title;                  // shown at the top
  Bytes lower_bound = -1;             // drawn as a line when >= 0
  std::span<const std::string> tags;  // empty, or one per buffer: its colour and hover text
};

// The plan (one offset per buffer) is checked first: a problem check_problem rejects, a wrong
// number of tags, or offsets that are not a valid plan throw memplan::InvalidArgument; for an
// overlap the message names both buffers (index, id, offset, size, lifetime).
[[nodiscard]] std::string to_svg(const plan::Problem& problem, std::span<const Bytes> offsets,
                                 const DrawOptions& options = {});
[[nodiscard]] std::string to_html(const plan::Problem& problem, std::span<const Bytes> offsets,
                                  const DrawOptions& options = {});

// SVG or HTML by the path's extension (.svg, .html or .htm, any case); another extension throws
// memplan::InvalidArgument naming the path, a failed write memplan::Error naming the path.
void write_picture(const std::filesystem::path& path, const plan::Problem& problem,
                   std::span<const Bytes> offsets, const DrawOptions& options = {});

}  // namespace memplan::draw
