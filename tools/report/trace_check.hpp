// tools/report/trace_check.hpp — checks a Chrome trace against the rules Perfetto's JSON
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
// Streaming: the text is parsed with a SAX walker (plain or gzip, or stdin) and each
// event is checked as soon as it closes; only compact per-track and per-flow state
// outlives it (tools/report/trace_check.cpp says what). Memory does not grow with the trace's
// size for traces whose slices come in start order per track, as `layoutsim run
// --trace` writes them: it grows with the number of tracks, the nesting depth, the
// flows still waiting for their second end and the largest single event. A track
// whose slices come out of order costs 24 bytes per slice of that track, gathered by
// a second read of the input; an input that cannot be read twice (a pipe) keeps those
// 24 bytes for every slice from the start. O(E) time for E events in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "tools/report/atomic_file.hpp"

namespace ls::tools {

struct TraceCheckReport {
  std::size_t events = 0;     // entries of traceEvents
  std::size_t slices = 0;     // X events
  std::size_t flows = 0;      // distinct bind_ids
  std::size_t counters = 0;   // C events
  std::size_t metadata = 0;   // M events
  std::size_t unordered_tracks = 0;  // (pid, tid) tracks whose slices came out of start order
  std::vector<std::string> violations;  // the first kMaxKeptViolations found
  std::size_t more_violations = 0;       // found beyond those
  bool ok() const { return violations.empty(); }
  std::size_t violation_count() const { return violations.size() + more_violations; }
};

/// Messages a report keeps (about 150 bytes each); the rest are only counted, so a
/// trace where every event is wrong still checks in bounded memory.
inline constexpr std::size_t kMaxKeptViolations = 10000;

/// Checks trace JSON text. Never throws on bad input: a parse error is a violation.
TraceCheckReport check_trace_text(std::string_view json_text);

/// Checks the JSON text read from `in` (read twice when it can be rewound and a
/// track's slices come out of order; see above).
TraceCheckReport check_trace_stream(std::istream& in);

/// Reads `path` (plain or gzip; "-" = stdin) and checks it. `max_bytes` (default
/// kMaxTraceInputBytes, tools/report/atomic_file.hpp) counts decompressed bytes: not a
/// bound on memory (the checker streams) but on time, so that /dev/zero, an endless pipe
/// or a gzip bomb ends with an error rather than running for hours. Throws IoError
/// (tools/report/atomic_file.hpp) naming the path if it cannot be read, if it holds more than
/// `max_bytes` (decompressed), or if one JSON value in it does not fit in memory.
TraceCheckReport check_trace_file(const std::string& path, std::uint64_t max_bytes = kMaxTraceInputBytes);

}  // namespace ls::tools
