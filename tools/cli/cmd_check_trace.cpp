// tools/cli/cmd_check_trace.cpp — `layoutsim check-trace`: check a Chrome trace (.json
// or .json.gz, '-' = stdin) against the rules Perfetto's importer applies.
#include <memory>

#include <fmt/format.h>

#include "tools/cli/command.hpp"
#include "tools/report/trace_check.hpp"

namespace ls::cli {

namespace {

int run(const std::string& path) {
  const tools::TraceCheckReport rep = tools::check_trace_file(path);
  if (rep.ok()) {
    print_out(fmt::format("{}: ok ({} events: {} slices, {} flows, {} counter samples, {} metadata)\n", path, rep.events, rep.slices, rep.flows,
               rep.counters, rep.metadata));
    return kExitOk;
  }
  const std::size_t show = 50;
  for (std::size_t i = 0; i < rep.violations.size() && i < show; ++i) fmt::print(stderr, "{}: error: {}\n", path, rep.violations[i]);
  if (rep.violation_count() > show) fmt::print(stderr, "{}: ... and {} more\n", path, rep.violation_count() - show);
  fmt::print(stderr, "{}: {} violation{}\n", path, rep.violation_count(), rep.violation_count() == 1 ? "" : "s");
  return kExitInvalid;
}

}  // namespace

Subcommand add_check_trace(CLI::App& parent) {
  auto path = std::make_shared<std::string>();
  auto* cmd = parent.add_subcommand("check-trace", "Check a Chrome trace (.json or .json.gz) against Perfetto's import rules");
  cmd->add_option("trace", *path, "Trace file ('-' = stdin)")->required()->check(non_empty_path());
  return {cmd, [path] { return run(*path); }};
}

}  // namespace ls::cli
