// tools/report/atomic_file.hpp — every output file of the `layoutsim` command goes through
// write_output(): "-" means stdout; anything else is written to a temporary file in
// the same directory and renamed over the target only once it is complete, so a
// failure (full disk, file-size limit, a crash) never leaves a damaged or partial
// older file. Input files that may be large (traces) are read through read_input()
// with a size limit. Failures are user I/O errors (IoError, exit 1 in the command) that
// name the path and the OS reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sim/error.hpp"

namespace ls::tools {

/// Cannot open, read, write or rename a user's file, or write to stdout.
struct IoError : UserError {
  using UserError::UserError;
};

/// Writes `text` to `path` atomically ("-" = stdout), gzip-compressed when the name
/// ends in ".gz" (not for stdout). An empty path is a caller bug (std::invalid_argument):
/// the command line rejects it as a usage error first. Throws IoError on failure.
void write_output(const std::string& path, std::string_view text);

/// Flushes stdout and throws IoError if any earlier write to it failed (closed or
/// full stdout: `layoutsim run --json - > /dev/full`).
void flush_stdout();

// The report room's half of the input-size policy (the scenario language's half is in
// tools/scenario/input_limits.hpp): the most bytes, decompressed, of each kind of file.
/// A runs file for validate and calibrate: the shipped corpus is under 1 MiB.
inline constexpr std::size_t kMaxRunsFileBytes = std::size_t{64} << 20;
/// A `run --json` summary read by diff (per-device arrays at 100k GPUs stay below it).
inline constexpr std::size_t kMaxSummaryBytes = std::size_t{256} << 20;
/// A `sweep --shard --json` file read by --merge: one full summary per point (tens of kB
/// each), so 4 GiB is far above any real sweep and bounds what a wrong file can take.
inline constexpr std::size_t kMaxShardFileBytes = std::size_t{4} << 30;
/// A trace for check-trace, decompressed; it is streamed, so this bounds time, not memory
/// (64 GiB is about 65x the trace of all 1,024 GPUs of the GPT-3 scenario, a few minutes).
inline constexpr std::uint64_t kMaxTraceInputBytes = std::uint64_t{64} << 30;

/// Reads a whole file ("-" = stdin); gzip files are decompressed transparently.
/// Throws IoError if it cannot be read or if the (decompressed) text exceeds
/// `max_bytes` — a bound on memory for hostile inputs (gzip bombs, /dev/zero).
std::string read_input(const std::string& path, std::size_t max_bytes);

}  // namespace ls::tools
