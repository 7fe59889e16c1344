// tools/cli/runs_files.hpp — the runs files `validate` and `calibrate` read, in order.
#pragma once

#include <string>
#include <vector>

#include "tools/study/validate.hpp"

namespace ls::cli {

/// Every run of every file, in file order. Throws tools::RunsFileError.
inline std::vector<tools::RunRow> read_runs(const std::vector<std::string>& files) {
  std::vector<tools::RunRow> rows;
  for (const auto& f : files) {
    auto more = tools::read_runs_file(f);
    rows.insert(rows.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return rows;
}

}  // namespace ls::cli
