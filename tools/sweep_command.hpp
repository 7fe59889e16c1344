// tools/sweep_command.hpp — the `layoutsim sweep` command: expand the lists (product
// or --zip), run the points in parallel with a progress line, select (--fits-only,
// --sort, --top), write the table / CSV / JSON / plot, and report failed points.
//
// Split over processes (sweep_shard.hpp): `--shard I/N` runs the points i mod N == I
// and writes them (its --json marks each entry with its point index); `--merge
// FILES` reads those files back and writes what the single run writes; under
// `mpirun -np N` the ranks split the points and rank 0 writes.
//
// Exit status: 0 when some point ran (an invalid point is an answer: a row with its
// reason), 1 when none did, 3 when a point hit an internal error. At most 20 error
// lines go to stderr; every point's reason is in its row.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "tools/search.hpp"
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
  std::string shard;                // "I/N" (job arrays), "" = every point
  std::vector<std::string> merge;   // shards' --json files: merge instead of simulating
  SearchExchange* exchange = nullptr;  // MPI ranks (not owned); null: one process
};

/// Runs the sweep; returns the exit status. Throws SweepUsageError, IoError.
int run_sweep_command(const SweepCommand& a);

}  // namespace ls::tools
