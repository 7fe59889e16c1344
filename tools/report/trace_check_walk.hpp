// tools/report/trace_check_walk.hpp — the streaming half of the trace checker (internal to
// tools/trace_check*.cpp): walks a Chrome trace's JSON text with nlohmann's SAX parser
// and hands each traceEvents entry to a sink as soon as it closes, as a small DOM of
// that one event. Nothing else of the document is kept, so memory does not grow with
// the text. Also: a std::streambuf over zlib (plain or gzip, transparently) that
// counts decompressed bytes against a cap, and one over a memory buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ls::tools::trace_check_detail {

using json = nlohmann::json;

/// What the walker reports. Event indices count every entry of traceEvents.
class TraceSink {
public:
  virtual ~TraceSink() = default;
  /// Entry `index` is a JSON object, given with the fields the rules read: its direct
  /// fields, and the direct children of its "args" object. Containers deeper than that
  /// are kept as empty containers of the same type (no rule looks inside them), so a
  /// hostile event cannot make the checker hold more than its flat fields.
  virtual void event(std::size_t index, const json& e) = 0;
  /// Entry `index` is not an object.
  virtual void not_object(std::size_t index) = 0;
  /// A direct "ts"/"dur" field of entry `index` written with more than 6 decimals.
  virtual void precision(std::size_t index, const std::string& key, const std::string& text) = 0;
};

/// How the document is shaped, once the walk is over.
struct WalkResult {
  bool parsed = false;               // the text is valid JSON
  std::string parse_error;           // when not parsed
  bool root_object = false;          // top level is an object
  bool events_array = false;         // it has a "traceEvents" array (the first one is walked)
  bool duplicate_events = false;     // a second "traceEvents" key
  bool time_unit_bad = false;        // the last "displayTimeUnit" is not "ms"/"ns"
  std::size_t events = 0;            // entries of traceEvents
};

/// Walks `in` to its end (or to the first syntax error).
WalkResult walk_trace(std::istream& in, TraceSink& sink);

/// Decimal places of a JSON number's text once its exponent is applied:
/// "1.25" → 2, "1.5e-7" → 8, "12e3" → 0.
int effective_decimals(const std::string& s);

/// Reads a file or stdin through zlib (gzip or plain, detected by zlib), failing once
/// more than `max_bytes` decompressed bytes have come: underflow() then reports end of
/// input and error() says why (the caller turns that into an IoError after the walk;
/// no exception travels through the parser). Seekable when the descriptor is
/// (gzrewind), so the checker can read a file twice; a pipe is read once. Of a run of
/// whitespace between JSON tokens the parser sees the first kKeptSpaces characters: it
/// keeps what it reads between two tokens, so megabytes of spaces would otherwise sit in
/// memory. Any real file's indentation is far shorter, so its error positions stay exact.
class GzInputBuf : public std::streambuf {
public:
  /// Takes ownership of `fd`. `name` is how messages name the input ('path' or stdin).
  GzInputBuf(int fd, std::string name, bool gz_name, std::uint64_t max_bytes);
  ~GzInputBuf() override;  // closes the zlib stream; never throws
  GzInputBuf(const GzInputBuf&) = delete;
  GzInputBuf& operator=(const GzInputBuf&) = delete;

  bool seekable() const { return seekable_; }
  const std::string& error() const { return error_; }
  std::uint64_t bytes() const { return total_; }

protected:
  int_type underflow() override;
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override;
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override;

private:
  void* gz_ = nullptr;  // gzFile (zlib.h stays out of this header)
  std::string name_;
  bool gz_name_ = false;
  bool seekable_ = false;
  std::uint64_t max_bytes_ = 0;
  std::uint64_t total_ = 0;   // decompressed bytes read so far (against max_bytes)
  std::uint64_t handed_ = 0;  // bytes handed to the parser so far (whitespace squeezed)
  // Where the squeeze stands at the end of the last chunk: inside a string (where
  // whitespace is content), just after its backslash, or in a run of whitespace.
  static constexpr std::size_t kKeptSpaces = 4096;
  bool in_string_ = false, escaped_ = false;
  std::size_t space_run_ = 0;  // whitespace characters of the current run passed on
  std::string error_;
  std::vector<char> buf_;

  /// Drops the whitespace characters past kKeptSpaces of a run outside strings, in
  /// place; returns the chunk's new length.
  std::size_t squeeze(std::size_t n);
};

/// A read-only, seekable view of text already in memory.
class MemoryBuf : public std::streambuf {
public:
  explicit MemoryBuf(std::string_view text);

protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override;
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override;
};

}  // namespace ls::tools::trace_check_detail
