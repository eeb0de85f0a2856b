// The HTML picture's script and style, embedded in every page (no external files).
#pragma once

namespace memplan::draw::detail {

// Reads the data object `D` (html.cpp writes it) and draws the plot on the canvas #plot; a grid
// index over the buffers answers hover in a few lookups; wheel zooms, drag pans, double-click
// resets.
extern const char* const kPictureScript;
extern const char* const kPictureStyle;

}  // namespace memplan::draw::detail
