// tools/cli/command.hpp — what every subcommand of `layoutsim` shares: the exit codes,
// the one way a subcommand registers itself, and the output rules.
//
// Each cmd_<name>.cpp has one add_<name>(CLI::App&): it adds the subcommand, its
// options bound to its own argument struct, and returns the function main() runs once
// the command line parsed into it. main() (tools/cli/main.cpp) knows nothing else about
// the subcommands.
//
// Errors: a subcommand throws ls::UsageError (exit 2), any other ls::UserError (exit 1)
// or lets anything else through (exit 3, "internal error"); it returns its exit code
// only when the answer itself decides it (a search with no survivor, check-trace's verdict).
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/api/layoutsim.hpp"

namespace ls::cli {

inline constexpr int kExitOk = 0, kExitInvalid = 1, kExitUsage = 2, kExitInternal = 3;

/// A registered subcommand: its CLI11 node (to ask whether it was chosen) and what
/// runs it, returning the exit status.
struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Subcommand add_run(CLI::App& parent);
Subcommand add_sweep(CLI::App& parent);
Subcommand add_search(CLI::App& parent);
Subcommand add_check(CLI::App& parent);
Subcommand add_keys(CLI::App& parent);
Subcommand add_reshard(CLI::App& parent);
Subcommand add_check_trace(CLI::App& parent);
Subcommand add_validate(CLI::App& parent);
Subcommand add_calibrate(CLI::App& parent);
Subcommand add_diff(CLI::App& parent);

/// The check every path option carries: '' must not silently mean "the default
/// scenario" or "write nothing".
CLI::Validator non_empty_path();

/// An output option (its flag and path; "" = not given, "-" = stdout) or an input file.
using NamedPath = std::pair<const char*, const std::string*>;

/// Every output goes to a file of its own that no input is: two outputs naming one file
/// (one would silently lose), an output naming an input (the input would be destroyed),
/// or two outputs on stdout ('-': they would interleave) are a UsageError. Files are
/// compared as the file system sees them (device and inode, so a symlink or another
/// spelling of the path counts), a file not yet there by its absolute normal path.
void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs = {});

/// Every output file (and "-" = stdout) goes through the atomic writer: a failure is
/// an IoError (exit 1) and never damages an older file.
void write_out(const std::string& path, const std::string& text);

/// Writes text to stdout as it is.
void print_out(const std::string& text);

/// The scenario a path names: the built-in default for "".
api::ScenarioSource scenario_source(const std::string& path);

/// Peak resident set size of this process, bytes.
double peak_rss_bytes();

}  // namespace ls::cli
