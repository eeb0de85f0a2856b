// Stats as JSON, for tools and for the C API: one object with a schema name and version, every
// counter in exact units (bytes as integers), the break reasons and the backend's calls by name.
// Field names are Stats' own; a field added to Stats is added here with the schema version kept
// (readers ignore keys they do not know), a field renamed or removed bumps it.
#pragma once

#include <string>

#include "memplan/runtime/stats.hpp"

namespace memplan {

inline constexpr int kStatsSchemaVersion = 1;

// {"schema": "memplan.stats", "schema_version": 1, "steps_recorded": 3, ...,
//  "breaks_by_reason": {"unknown_allocation": 1, ...}, "backend_calls": {"map": 4, ...}}
[[nodiscard]] std::string to_json(const Stats& stats);

}  // namespace memplan
