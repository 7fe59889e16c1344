// tests/fuzz/fuzz_inputs.cpp — libFuzzer harness over every other input layoutsim reads:
// the first byte chooses the reader, the rest is its input.
//
//   0  a runs file (validate, calibrate)            read_runs_text
//   1  a GPU profile (cluster.gpu.profile, --profile) parse_profile
//   2  two run summaries, split at the first NUL (diff) read_summary + diff, both texts
//   3  command-line values, one per line: --set KEY=VALUE over the default scenario,
//      sweep's KEY=V1,V2 lists, search's --vary/--fix, --shard I/N
//
// Each must give a result or a user error (ls::UserError; std::invalid_argument for the
// command-line values, which the command reports as a usage error, exit 2). Anything
// else — another exception, a crash, a sanitizer report, a hang, a blow-up — is a
// finding. Built with -DLAYOUTSIM_FUZZ=ON (Clang); run by .ci/run, seeded with
// tests/fuzz/inputs/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/error.hpp"
#include "tools/api/layoutsim.hpp"
#include "tools/scenario/gpu_profile_file.hpp"
#include "tools/study/search.hpp"
#include "tools/study/sweep.hpp"
#include "tools/study/validate.hpp"

namespace {

[[noreturn]] void finding(const char* reader, const std::exception& e) {
  std::fprintf(stderr, "fuzz_inputs: %s: internal error (exit 3 in the command): %s\n", reader, e.what());
  std::abort();
}

/// Runs `read`, which may end in a user error and nothing else.
template <typename Read>
void expect_result_or_user_error(const char* reader, Read&& read) {
  try {
    read();
  } catch (const ls::UserError&) {
  } catch (const std::exception& e) {
    finding(reader, e);
  }
}

void runs_file(const std::string& text) {
  expect_result_or_user_error("runs file", [&] { (void)ls::tools::read_runs_text(text, "fuzz-runs.yaml"); });
}

void profile(const std::string& text) {
  expect_result_or_user_error("profile", [&] { (void)ls::tools::parse_profile(text, "fuzz-profile.yaml"); });
}

void summaries(const std::string& text) {
  const auto nul = text.find('\0');
  const std::string a = text.substr(0, nul), b = nul == std::string::npos ? a : text.substr(nul + 1);
  expect_result_or_user_error("diff", [&] {
    const auto ja = ls::api::read_summary(a, "a.json");
    const auto jb = ls::api::read_summary(b, "b.json");
    const auto report = ls::api::diff(ja, "a.json", jb, "b.json");
    (void)ls::api::diff_text(report);
    (void)ls::api::diff_json(report);
  });
}

void command_line(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line) && lines.size() < 16;) lines.push_back(line);
  for (const auto& line : lines) {
    try {
      (void)ls::tools::parse_sweep_set(line);
    } catch (const std::invalid_argument&) {
    } catch (const ls::UserError&) {
    } catch (const std::exception& e) {
      finding("sweep --set", e);
    }
    try {
      (void)ls::tools::parse_shard(line);
    } catch (const std::invalid_argument&) {
    } catch (const std::exception& e) {
      finding("--shard", e);
    }
    for (const bool fix : {false, true}) {
      try {
        ls::tools::SearchAxes axes;
        ls::tools::apply_axis_option(axes, line, fix);
      } catch (const std::invalid_argument&) {
      } catch (const ls::UserError&) {
      } catch (const std::exception& e) {
        finding(fix ? "search --fix" : "search --vary", e);
      }
    }
  }
  expect_result_or_user_error("--set", [&] { (void)ls::api::ScenarioSource::builtin().resolve_sets(lines); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: runs_file(text); break;
    case 1: profile(text); break;
    case 2: summaries(text); break;
    default: command_line(text); break;
  }
  return 0;
}
