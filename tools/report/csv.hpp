// tools/report/csv.hpp — one CSV cell as RFC 4180 writes it, for every CSV the tools write
// (sweep --csv, search --csv): a cell holding a comma, a quote or a line break is quoted,
// its quotes doubled, so Python's csv module and pandas read the header's column count.
#pragma once

#include <string>
#include <string_view>

namespace ls::tools {

inline std::string csv_cell(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += "\"\"";
    else out.push_back(c);
  }
  return out + "\"";
}

}  // namespace ls::tools
