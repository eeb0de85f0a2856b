// JSON written with fmt, for the library's own output (stats, reports, traces): no JSON library
// enters the library's dependencies, and the tool's reader (nlohmann) parses what this writes.
// A writer appends to one string; commas and nesting are its business, so callers state only
// keys and values. Strings are escaped for JSON and also for HTML (<, > and & as \u escapes), so
// the same text can sit inside a <script> element of a picture.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memplan::detail {

[[nodiscard]] std::string json_string(std::string_view text);

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // The key of the next value, inside an object.
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(std::uint64_t number);
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(double number);  // finite numbers; NaN and infinities become null
  JsonWriter& value(bool flag);
  JsonWriter& null();
  // Text that is JSON already (an object another writer made).
  JsonWriter& raw(std::string_view json);

  // key(name).value(v) in one call.
  template <class T>
  JsonWriter& field(std::string_view name, const T& v) {
    return key(name).value(v);
  }

 private:
  void before_value();

  std::string& out_;
  std::vector<bool> first_;  // per open object or array: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace memplan::detail
