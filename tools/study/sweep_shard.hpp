// tools/study/sweep_shard.hpp — a sweep's points split over processes: `--shard I/N` (job
// arrays: point i belongs to shard i mod N), MPI ranks (`mpirun -np N layoutsim
// sweep`: each rank runs every N-th point of its shard and the results are
// exchanged), and `--merge` (the shards' --json files back into the whole sweep).
//
// Every simulation is a pure function of its point, so the outcomes a process gets
// from the others are the ones it would have computed: the outputs written from them
// are byte for byte the single process's. What travels is a point's JSON entry
// (sweep_json with shard fields): doubles print as their shortest round-trip
// decimal, so a summary parsed back prints the same, and the few fields the table,
// the CSV, the sorting and the plot read are taken from it exactly.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/study/search.hpp"
#include "tools/study/sweep.hpp"

namespace ls::tools {

/// The indices i < n with i mod count == index (count ≥ 1, 0 ≤ index < count).
std::vector<std::size_t> shard_points(std::size_t n, int index, int count);

/// Runs fn on the points `which` (indices into `points`, ascending) with `jobs`
/// threads. With an exchange of size > 1, this process runs every size()-th of them
/// (position mod size == rank) and all_gather shares the outcomes, so every process
/// returns all of `which`'s outcomes, in that order. `progress` (run_sweep's) counts
/// this process's own points.
std::vector<SweepOutcome> run_points(const std::vector<SweepPoint>& points, const std::vector<std::size_t>& which,
                                     const std::function<wl::Result(const SweepPoint&)>& fn, int jobs, SearchExchange* exchange,
                                     const PointProgress& progress = {});

/// One entry of sweep_json(..., shard_fields = true) back into an outcome of `point`
/// (index `index`). Throws std::invalid_argument naming `where` when it is malformed.
SweepOutcome outcome_from_entry(const nlohmann::ordered_json& entry, const SweepPoint& point, std::size_t index,
                                const std::string& where);

/// `--merge`: reads the shards' --json files and returns the outcome of every point
/// of `points`, in sweep order. Throws std::invalid_argument (a usage error) when a
/// file is not a shard's JSON, a point's values differ from the sweep's (the merge
/// was given other lists than the shards), a point appears twice, or points are
/// missing (a shard not given, or run with --top / --fits-only). IoError when a file
/// cannot be read.
std::vector<SweepOutcome> merge_shard_files(const std::vector<SweepPoint>& points, const std::vector<std::string>& files);

}  // namespace ls::tools
