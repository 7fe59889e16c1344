// tools/sweep_command.hpp — the `layoutsim sweep` command: expand the lists (product
// or --zip), run the points in parallel with a progress line, select (--fits-only,
// --sort, --top), write the table / CSV / JSON / plot, and report failed points.
//
// Exit status: 0 when some point ran (an invalid point is an answer: a row with its
// reason), 1 when none did, 3 when a point hit an internal error. At most 20 error
// lines go to stderr; every point's reason is in its row.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "tools/sweep.hpp"
#include "tools/sweep_report.hpp"

namespace ls::tools {

/// A bad option (an unknown --sort key, --zip lists of different lengths): exit 2.
struct SweepUsageError : std::invalid_argument {
  using invalid_argument::invalid_argument;
};

struct SweepCommand {
  std::string scenario;
  std::vector<SweepAxis> axes;
  std::string csv, json, plot;  // "" = none, "-" = stdout
  SweepSelection select;
  bool zip = false, quiet = false;
  int jobs = 0;
};

/// Runs the sweep; returns the exit status. Throws SweepUsageError, IoError.
int run_sweep_command(const SweepCommand& a);

}  // namespace ls::tools
