// tools/trace_check.hpp — checks a Chrome trace against the rules Perfetto's JSON
// importer relies on (and chrome://tracing tolerates), so the project can verify its
// own traces offline, where no trace viewer runs.
//
// Rules checked (each violation is one message naming the event index):
//  * the file is a JSON object with a "traceEvents" array (displayTimeUnit "ms"|"ns");
//  * every event is an object with a one-letter string "ph" of a known phase;
//  * pid/tid are integers (required on X, C and M events; tid on X and thread_* M);
//  * ts/dur are non-negative numbers in microseconds with at most 6 decimals (one
//    picosecond; more digits mean a double was printed, not an integer time);
//  * `X` slices have a string name and nest strictly per (pid, tid): two slices on
//    one thread are either disjoint or one contains the other — in exact picoseconds
//    and again with end = ts + dur computed in double precision, as speedscope and
//    other viewers compute it;
//  * flow v2: bind_id only on slices, integer or string; flow_in/flow_out booleans
//    and only with a bind_id; every bind_id has exactly one flow_out and one flow_in
//    slice, and the sending slice starts no later than the receiving one ends;
//  * `C` counters: a string name and a non-empty args object of numbers;
//  * `M` metadata: name in {process_name, process_labels, process_sort_index,
//    thread_name, thread_sort_index}; *_name args.name string, *_sort_index
//    args.sort_index integer, process_labels args.labels string.
//
// Complexity: O(E log E) for E events; the whole document is held in memory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ls::tools {

struct TraceCheckReport {
  std::size_t events = 0;     // entries of traceEvents
  std::size_t slices = 0;     // X events
  std::size_t flows = 0;      // distinct bind_ids
  std::size_t counters = 0;   // C events
  std::size_t metadata = 0;   // M events
  std::vector<std::string> violations;
  bool ok() const { return violations.empty(); }
};

/// Checks trace JSON text. Never throws on bad input: a parse error is a violation.
TraceCheckReport check_trace_text(std::string_view json_text);

/// Largest trace text (after gzip decompression) check_trace_file() accepts: the
/// checker holds the parsed document, about 10x the text, in memory.
inline constexpr std::size_t kMaxTraceTextBytes = std::size_t{1} << 30;

/// Reads `path` (plain or gzip; "-" = stdin) and checks it. Throws IoError
/// (tools/atomic_file.hpp) if it cannot be read or exceeds kMaxTraceTextBytes.
TraceCheckReport check_trace_file(const std::string& path);

}  // namespace ls::tools
