// tools/report/trace.hpp — Result → Chrome trace JSON (README.md, "Opening a trace in Perfetto"),
// readable by Perfetto UI (ui.perfetto.dev) and chrome://tracing.
//
// Layout of the trace:
//  * one process per node: pid = node index (device / gpus_per_node);
//  * one thread per (GPU, track): tid = device * kTracksPerDevice + track, tracks
//    as in wl::track (workloads/build/result.hpp); thread names "node0.gpu3 compute";
//  * `X` slices named "F mb3 L12-17", "B mb3 L12-17", "W mb3", "R mb3", "AR tp",
//    "RS dp", "send F mb3", "opt"; spans on the critical path get the category
//    suffix ",critical" and the name suffix " [crit]" so they stand out (and can be
//    filtered) in the UI;
//  * flow v2 arrows for pipeline send → recv: the sending slice carries
//    `"bind_id": id, "flow_out": true`, the receiving slice `"bind_id": id,
//    "flow_in": true` (Perfetto binds v2 flows to the slice that carries them);
//  * counters (`ph: C`, one numeric arg "value") from Result::counters;
//  * `M` events process_name / process_sort_index / thread_name / thread_sort_index.
// Timestamps are printed with sim::to_us_string: exact decimal microseconds from
// integer picoseconds, never through a double. Slice ts and dur are first rounded to a
// 1/64 us grid (15.625 ns; trace.cpp): such values and all their sums are exact
// doubles, so viewers that add ts + dur in double precision (speedscope) see slices
// nest and touch exactly as in integer time; args.dur_ps keeps the exact duration.
//
// Complexity: O(S log S + C) for S spans and C counter samples; the text is built in
// memory (one string) and then written once.
#pragma once

#include <string>

#include "workloads/build/result.hpp"

namespace ls::tools {

inline constexpr int kTracksPerDevice = wl::track::kCount;

/// "compute", "tp", "pp", "dp", "ep", "prefetch", "pp recv" (others: "track<N>").
std::string track_name(int track);

/// The slice name of one span, e.g. "F mb3 L12-17" (layer range inclusive for
/// reading: [layer_begin, layer_end) is shown as begin-(end-1)).
std::string span_name(const wl::Span& s);

/// The whole trace as JSON text (object form, ends with a newline). Deterministic:
/// the same Result gives the same bytes.
std::string chrome_trace_json(const wl::Result& r);

/// Writes chrome_trace_json(r) to `path`, gzip-compressed (zlib) when the name ends
/// in ".gz". Throws std::runtime_error if the file cannot be written.
void write_chrome_trace(const wl::Result& r, const std::string& path);

/// Writes `text` to `path`, gzip-compressed when the name ends in ".gz". Throws
/// std::runtime_error on I/O failure.
void write_text_file(const std::string& path, const std::string& text);

/// Reads a whole file; gzip files are decompressed transparently (zlib's gzread
/// passes plain files through). Throws std::runtime_error if it cannot be read.
std::string read_text_file(const std::string& path);

/// True when `path` ends in ".gz".
bool is_gz_path(const std::string& path);

}  // namespace ls::tools
