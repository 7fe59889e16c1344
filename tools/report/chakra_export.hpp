// tools/report/chakra_export.hpp — the engine's Program → Chakra execution traces, one file
// per rank, so ASTRA-sim and the Chakra tools replay exactly the workload layoutsim built.
//
// Files (in DIR): <stem>.<rank>.et for every rank and <stem>.comm_groups.json, where
// <stem> is chakra_file_stem(scenario name). ASTRA-sim takes DIR/<stem> as its
// --workload-configuration prefix and the JSON as its --comm-group-configuration.
//
// An .et file is a stream of protobuf messages (schema: tools/report/chakra/et_def.proto, the
// field numbers Chakra publishes), each preceded by its size as a varint: one
// GlobalMetadata (version "0.0.4"), then the rank's nodes.
//
// What each op of the rank's stage template becomes:
//  * compute → COMP_NODE: duration_micros = nominal duration × the rank's compute
//    factor (the slowdown its simulated step ran at: perturbations and the compute
//    beside communication, wl::Result::compute_factors) × expert load
//    (RankInfo::work_scale for expert work, as the engine applies it), rounded to
//    the nearest microsecond; attributes num_ops (hardware FLOPs, scaled by the
//    expert load only, rounded), duration_ps (the exact duration; Chakra has no finer
//    field).
//  * collective → COMM_COLL_NODE: comm_type, comm_size (per-rank buffer bytes S, the
//    size the engine plans the collective for) and pg_name (the group's key in the
//    JSON). A collective with repeat k becomes k nodes, each of S bytes, chained by
//    control dependencies: the engine charges k× bytes and k× latency, and so does a
//    replay of k collectives. On a rank whose axis has degree 1 (no group) the engine
//    completes a collective at once: it becomes a COMP_NODE of zero duration and FLOPs.
//  * send / recv → COMM_SEND_NODE / COMM_RECV_NODE with comm_src, comm_dst, comm_size
//    and comm_tag = the recv's index on the receiver's compute stream (the engine's
//    own send→recv match, Op::peer_op): unique per (sender, receiver, micro-batch,
//    chunk, direction), so ASTRA-sim pairs them by (src, dst, tag).
// Every node also carries is_cpu_op = false and ls_stream / ls_op_index (the op it came
// from: sim::Stream and the index in that stream) so a node maps back to the program.
//
// Dependencies (node ids of the same file): ctrl_deps = the previous op of the same
// stream (streams run in order); data_deps = the op's explicit dependencies. A
// recv's wait for its send is the (src, dst, tag) match, not a dependency. Nodes are
// written in a topological order (every dependency precedes its dependant) and
// numbered 0, 1, ... in that order.
//
// JSON: {"<pg_name>": [ranks in ring order], ...}, one entry per Program::groups
// entry; pg_name = group index + 1 (ASTRA-sim reads "0" and "" as "all ranks").
//
// Not representable: skewed MoE routing (Program::all_to_all_weight) — the all-to-all's
// comm_size is the uniform buffer S; node-limited dispatch (Program::node_dispatch) — its
// relay over the node's NVLink is the replayer's plain all-to-all of S; per-op jitter (compute_cv, comm_cv); a slowdown that
// drifts between steps (one step is written, at its first step's factors); link
// perturbations (the replay's network is the replayer's).
//
// Cost: O(stages · ops) to order the templates, then O(ranks · ops) nodes written.
// Files are written to a temporary name and renamed, so a reader never sees half a file.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/error.hpp"
#include "sim/program.hpp"

namespace ls::tools {

/// The output directory cannot be created or a file in it cannot be written.
struct ChakraWriteError : UserError {
  using UserError::UserError;
};

/// The scenario name as used in file names: characters other than letters, digits,
/// '.', '-' and '_' become '_'; "layoutsim" when the name is empty.
std::string chakra_file_stem(const std::string& scenario_name);

/// DIR/<stem>.<rank>.et
std::string chakra_trace_path(const std::string& dir, const std::string& scenario_name, int rank);

/// DIR/<stem>.comm_groups.json
std::string chakra_comm_groups_path(const std::string& dir, const std::string& scenario_name);

struct ChakraExportSummary {
  int files = 0;            // .et files (one per rank) plus the JSON
  std::uint64_t nodes = 0;  // over all ranks
};

/// Writes every rank's trace and the group file into `dir` (created if missing).
/// `compute_factors`: per rank, what its compute durations are multiplied by (empty:
/// nominal). Throws ChakraWriteError on I/O failure, std::logic_error on a program whose
/// dependencies form a cycle (the engine could not run it either).
ChakraExportSummary write_chakra_traces(const sim::Program& program, const std::string& scenario_name,
                                        const std::string& dir, const std::vector<double>& compute_factors = {});

}  // namespace ls::tools
