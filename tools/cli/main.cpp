// tools/cli/main.cpp — the `layoutsim` command (README.md, "Commands"): builds the
// CLI11 tree from the subcommands' add_<name> functions, runs the chosen one, and
// turns what it throws into an exit code.
//
// Exit codes: 0 success (a layout that does not fit is still a success, with a
// warning); 1 a user error (ls::UserError: an invalid scenario or impossible layout, a
// step outside the representable time range, a file that cannot be read or written, a
// full or closed stdout, an invalid trace for check-trace); 2 usage (CLI11's parse
// errors and ls::UsageError); 3 internal error (anything else: a broken internal
// precondition, a deadlocked schedule). A scenario is resolved — every user error
// found — before layout_report() or simulate() runs, so an exception from them is a bug, never
// "invalid scenario". Errors go to stderr; stdout carries only results.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>
#if defined(__GLIBC__)  // defined by any C library header, hence after <cstdio>
#include <malloc.h>
#endif

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/cli/command.hpp"
#include "tools/report/atomic_file.hpp"
#include "workloads/spec/did_you_mean.hpp"

#ifndef LAYOUTSIM_VERSION
#define LAYOUTSIM_VERSION "unknown"
#endif

namespace {

/// Keeps freed memory in the process for reuse. `search` and `sweep` build and drop
/// a program of several MB per candidate. By default glibc hands a freed block above
/// its (dynamic, at most 32 MiB) mmap threshold back to the kernel and trims the heap
/// once twice that is free at its top, so each candidate faulted its pages in anew: on
/// the 2-core machine of README "Performance" (a paravirtualised guest, where a page
/// fault is dear) a quarter of the search's analytic stage was page faults. Blocks
/// below 32 MiB now come from the heap, which keeps up to 256 MiB free at its top
/// (measured there: the GPT-3 scenario's search, analytic stage 28 → 13 s on 2
/// threads; peak RSS 205 → about 280 MiB). Other C libraries keep their defaults.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

/// After "argument was not expected": for each unknown flag, the chosen subcommand's
/// closest flag ("did you mean --json?").
void suggest_flags(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands()) {
    std::vector<std::string> flags;
    for (const CLI::Option* o : sub->get_options()) {
      for (const auto& l : o->get_lnames()) flags.push_back("--" + l);
      for (const auto& s : o->get_snames()) flags.push_back("-" + s);
    }
    for (const std::string& arg : sub->remaining()) {
      if (arg.size() < 2 || arg[0] != '-') continue;
      const std::string flag = arg.substr(0, arg.find('='));
      const std::string near = ls::wl::closest_match(flag, flags, 3);
      if (!near.empty()) std::fprintf(stderr, "%s: did you mean %s?\n", flag.c_str(), near.c_str());
    }
  }
}

void print_error(std::string text) {
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  std::fputs(text.c_str(), stderr);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ls;
  keep_freed_memory();
  CLI::App app{"layoutsim — discrete-event simulator of LLM training parallelism layouts on GPU clusters"};
  app.set_version_flag("--version", "layoutsim " LAYOUTSIM_VERSION);
  app.require_subcommand(1);
  app.footer("Run `layoutsim SUBCOMMAND --help` for the options of one command. Exit codes: 0 ok, 1 invalid scenario, 2 usage, 3 internal.");

  // In the order `layoutsim --help` lists them.
  const std::vector<cli::Subcommand> subcommands = {
      cli::add_run(app),      cli::add_sweep(app),       cli::add_search(app),   cli::add_check(app),
      cli::add_keys(app),     cli::add_reshard(app),     cli::add_check_trace(app), cli::add_validate(app),
      cli::add_calibrate(app), cli::add_diff(app),
  };

  // Help and version go to stdout: a closed or full one is an I/O error, as for any
  // command's output.
  const auto print_and_exit = [&app](const CLI::Error& e) {
    const int rc = app.exit(e);
    std::cout.flush();
    if (!std::cout) {
      print_error(tools::IoError("cannot write to stdout: write error").message());
      return cli::kExitInvalid;
    }
    try {
      tools::flush_stdout();
    } catch (const tools::IoError& err) {
      print_error(err.message());
      return cli::kExitInvalid;
    }
    return rc;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return print_and_exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return print_and_exit(e);
  } catch (const CLI::CallForVersion& e) {
    return print_and_exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) suggest_flags(app);
    return cli::kExitUsage;
  }

  try {
    for (const auto& sub : subcommands) {
      if (!*sub.app) continue;
      const int rc = sub.run();
      // A closed or full stdout is an I/O error (exit 1), not a silent success.
      tools::flush_stdout();
      return rc;
    }
  } catch (const UsageError& e) {
    print_error(e.message());
    return cli::kExitUsage;
  } catch (const UserError& e) {
    print_error(e.message());
    return cli::kExitInvalid;
  } catch (const std::exception& e) {
    print_error(fmt::format("internal error: {}", e.what()));
    return cli::kExitInternal;
  } catch (...) {  // nothing of ours throws a non-std type; a library might
    print_error("internal error: unknown exception");
    return cli::kExitInternal;
  }
  return cli::kExitUsage;
}
