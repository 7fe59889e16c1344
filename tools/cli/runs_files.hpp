// tools/cli/runs_files.hpp — the runs files `validate` and `calibrate` read, in order.
#pragma once

#include <algorithm>
#include <filesystem>
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

/// The shipped validation set under `dir`: the two fitted tables, then every source of
/// corpus/ in name order (corpus/subset.yaml repeats rows of the others: left out).
inline std::vector<std::string> default_runs_files(const std::string& dir) {
  std::vector<std::string> files = {dir + "/llm_foundry.yaml", dir + "/megatron_bridge.yaml"};
  std::vector<std::string> corpus;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/corpus", ec))
    if (e.path().extension() == ".yaml" && e.path().filename() != "subset.yaml") corpus.push_back(e.path().string());
  std::sort(corpus.begin(), corpus.end());
  files.insert(files.end(), corpus.begin(), corpus.end());
  return files;
}

}  // namespace ls::cli
