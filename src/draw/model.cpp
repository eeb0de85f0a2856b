// The picture's model: the plan checked, its extent, the peak instant (plan::find_peak), the
// buffers live there, and a palette with one entry per tag (or per distinct id colour).
#include "memplan/draw/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "memplan/error.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/plan/validator.hpp"

namespace memplan::draw {
namespace {

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

std::uint8_t channel(double value) {
  return static_cast<std::uint8_t>(std::lround(std::clamp(value, 0.0, 1.0) * 255.0));
}

Rgb from_hsl(double hue, double saturation, double lightness) {
  const double chroma = (1 - std::abs(2 * lightness - 1)) * saturation;
  const double h = hue / 60.0;
  const double second = chroma * (1 - std::abs(std::fmod(h, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (h < 1) {
    r = chroma, g = second;
  } else if (h < 2) {
    r = second, g = chroma;
  } else if (h < 3) {
    g = chroma, b = second;
  } else if (h < 4) {
    g = second, b = chroma;
  } else if (h < 5) {
    r = second, b = chroma;
  } else {
    r = chroma, b = second;
  }
  const double m = lightness - chroma / 2;
  return {channel(r + m), channel(g + m), channel(b + m)};
}

void check_plan(const plan::Problem& problem, std::span<const Bytes> offsets,
                const DrawOptions& options) {
  plan::check_problem(problem);
  if (!options.tags.empty() && options.tags.size() != problem.buffers.size()) {
    throw InvalidArgument(
        fmt::format("cannot draw: {} tags for {} buffers (give one per buffer, "
                    "or none)",
                    options.tags.size(), problem.buffers.size()));
  }
  const auto violations = plan::find_violations(problem, offsets, 1);
  if (!violations.empty()) {
    throw InvalidArgument(fmt::format("cannot draw an invalid plan: {}", violations[0].message));
  }
}

}  // namespace

Rgb colour_for(std::string_view key) {
  const std::uint64_t hash = fnv1a(key);
  const double hue = static_cast<double>(hash % 360);
  const double saturation = 0.55 + static_cast<double>((hash >> 16) % 25) / 100.0;
  const double lightness = 0.50 + static_cast<double>((hash >> 32) % 15) / 100.0;
  return from_hsl(hue, saturation, lightness);
}

std::string to_hex(Rgb colour) {
  return fmt::format("#{:02x}{:02x}{:02x}", colour.r, colour.g, colour.b);
}

PictureModel build_model(const plan::Problem& problem, std::span<const Bytes> offsets,
                         const DrawOptions& options) {
  check_plan(problem, offsets, options);
  PictureModel model;
  model.lower_bound = options.lower_bound;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    if (problem.buffers[i].occupies()) model.drawn.push_back(i);
  }
  if (!model.drawn.empty()) {
    model.time_begin = problem.buffers[model.drawn.front()].lower;
    model.time_end = problem.buffers[model.drawn.front()].upper;
    for (const std::size_t i : model.drawn) {
      model.time_begin = std::min(model.time_begin, problem.buffers[i].lower);
      model.time_end = std::max(model.time_end, problem.buffers[i].upper);
    }
  }
  model.arena_size = plan::arena_size(problem, offsets);
  model.top = std::max({model.arena_size, model.lower_bound, Bytes{1}});

  const plan::Peak peak = plan::find_peak(problem);
  model.peak_instant = peak.instant;
  model.peak_bytes = peak.bytes;
  for (const std::size_t i : model.drawn) {
    const plan::Buffer& b = problem.buffers[i];
    if (b.lower <= model.peak_instant && model.peak_instant < b.upper) {
      model.live_at_peak.push_back(
          {i, b.size, static_cast<double>(b.size) / static_cast<double>(model.peak_bytes)});
    }
  }
  std::sort(model.live_at_peak.begin(), model.live_at_peak.end(),
            [](const LiveBuffer& a, const LiveBuffer& b) {
              return a.size != b.size ? a.size > b.size : a.buffer < b.buffer;
            });

  model.colour.resize(problem.buffers.size());
  std::map<std::string, std::uint32_t, std::less<>> by_tag;
  std::map<std::uint32_t, std::uint32_t> by_rgb;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const auto next = static_cast<std::uint32_t>(model.palette.size());
    if (!options.tags.empty()) {
      const auto [entry, added] = by_tag.try_emplace(options.tags[i], next);
      if (added) {
        model.palette.push_back(colour_for(options.tags[i]));
        model.palette_tags.push_back(options.tags[i]);
      }
      model.colour[i] = entry->second;
    } else {
      const Rgb rgb = colour_for(problem.buffers[i].id);
      const auto [entry, added] =
          by_rgb.try_emplace(std::uint32_t{rgb.r} << 16 | std::uint32_t{rgb.g} << 8 | rgb.b, next);
      if (added) model.palette.push_back(rgb);
      model.colour[i] = entry->second;
    }
  }
  return model;
}

LiveRest live_after(const PictureModel& model, std::size_t shown) {
  LiveRest rest;
  for (std::size_t k = shown; k < model.live_at_peak.size(); ++k) {
    rest.bytes += model.live_at_peak[k].size;
    rest.share += model.live_at_peak[k].share;
  }
  return rest;
}

}  // namespace memplan::draw
