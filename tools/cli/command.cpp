// tools/cli/command.cpp — the helpers of command.hpp.
#include "tools/cli/command.hpp"

#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/report/atomic_file.hpp"

namespace ls::cli {

CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& v) { return v.empty() ? std::string("an empty string is not a file name ('-' = stdout/stdin)") : std::string(); },
      "", "non-empty path");
}

namespace {

/// What a path names on the file system: its device and inode when it exists (after
/// symlinks), else its absolute normal path (a file an output will create). A device,
/// FIFO or socket (/dev/null, /dev/stdout, a pipe) is written in place, never replaced,
/// so several outputs may share one: `special`, and it equals nothing.
struct FileIdentity {
  bool special = false;
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string path;
  bool operator==(const FileIdentity& o) const {
    if (special || o.special) return false;
    return exists == o.exists && (exists ? dev == o.dev && ino == o.ino : path == o.path);
  }
};

FileIdentity identity_of(const std::string& path) {
  FileIdentity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.special = !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    return id;
  }
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec);
  id.path = (ec ? std::filesystem::path(path) : abs).lexically_normal().string();
  return id;
}

}  // namespace

void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  std::string dashes;
  int n = 0;
  for (const auto& [flag, path] : outputs)
    if (*path == "-") dashes += (n++ ? " and " : "") + std::string(flag);
  if (n > 1) throw UsageError(fmt::format("{} both write to stdout ('-'): give a file name to all but one", dashes));
  std::vector<std::pair<const char*, FileIdentity>> seen;
  for (const auto& [flag, path] : outputs) {
    if (path->empty() || *path == "-") continue;
    const FileIdentity id = identity_of(*path);
    for (const auto& [in_flag, in_path] : inputs)
      if (!in_path->empty() && *in_path != "-" && identity_of(*in_path) == id)
        throw UsageError(fmt::format("{} {} is the {} file: writing it would destroy the input; give the output another name",
                                     flag, *path, in_flag));
    for (const auto& [other, other_id] : seen)
      if (other_id == id)
        throw UsageError(fmt::format("{} and {} both write {}: one would be lost; give each output its own file", other, flag, *path));
    seen.emplace_back(flag, id);
  }
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
