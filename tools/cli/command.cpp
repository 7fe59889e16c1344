// tools/cli/command.cpp — the helpers of command.hpp.
#include "tools/cli/command.hpp"

#include <sys/resource.h>

#include <cstdio>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/report/atomic_file.hpp"

namespace ls::cli {

CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& v) { return v.empty() ? std::string("an empty string is not a file name ('-' = stdout/stdin)") : std::string(); },
      "", "non-empty path");
}

void one_stdout(std::initializer_list<std::pair<const char*, const std::string*>> outputs) {
  std::string dashes;
  int n = 0;
  for (const auto& [flag, path] : outputs)
    if (*path == "-") dashes += (n++ ? " and " : "") + std::string(flag);
  if (n > 1) throw UsageError(fmt::format("{} both write to stdout ('-'): give a file name to all but one", dashes));
}

void write_out(const std::string& path, const std::string& text) { tools::write_output(path, text); }

void print_out(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

api::ScenarioSource scenario_source(const std::string& path) {
  return path.empty() ? api::ScenarioSource::builtin() : api::ScenarioSource::file(path);
}

double peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;  // Linux reports KiB
}

}  // namespace ls::cli
