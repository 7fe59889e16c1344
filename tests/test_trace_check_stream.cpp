// tests/test_trace_check_stream.cpp — check-trace streams: a large generated trace is
// checked with a small, size-independent memory growth; tracks whose slices come out
// of start order are still checked exactly (read twice, or from records when the
// input cannot be rewound); gzip input; the input size cap; the cap on kept messages.
#include <doctest/doctest.h>

#include "sanitizers.hpp"

#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <istream>
#include <sstream>
#include <streambuf>
#include <string>

#include "tools/report/atomic_file.hpp"
#include "tools/report/trace_check.hpp"

using ls::tools::check_trace_stream;
using ls::tools::check_trace_text;
using ls::tools::TraceCheckReport;

namespace {

using ls::test::kAsan;

/// A synthetic Chrome trace produced on the fly, round after round, so that no big
/// file or string is needed. Each round puts on every track a parent slice with
/// nested children (one of zero length), a flow from each even track to the next
/// odd one, and a counter sample per process. In order, tracks are written as
/// `layoutsim run --trace` writes them (start order, parent first); `reverse` emits
/// the rounds last to first, so every track's slices come out of start order.
class SyntheticTrace : public std::streambuf {
public:
  struct Options {
    std::uint64_t rounds = 0;    // 0: as many rounds as fit in min_bytes
    std::uint64_t min_bytes = 0;
    int tracks = 16;             // 8 tracks per process
    bool reverse = false;
    bool seekable = true;
    std::int64_t overlap_round = -1;  // a child of track 3 in this round ends past its parent
  };
  explicit SyntheticTrace(Options o) : o_(o) { restart(); }

  std::uint64_t events = 0, slices = 0, flows = 0;  // what was produced so far
  std::uint64_t bytes = 0;

protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (done_) return traits_type::eof();
    chunk_.clear();
    if (round_ == 0 && !head_done_) {
      chunk_ += "{\"traceEvents\":[\n";
      for (int k = 0; k < o_.tracks; ++k) add(fmt("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"t%d\"}}", k / 8, k, k));
      head_done_ = true;
    }
    const bool more = o_.rounds ? round_ < o_.rounds : bytes + chunk_.size() < o_.min_bytes;
    if (more) {
      emit_round(o_.reverse ? o_.rounds - 1 - round_ : round_);
      ++round_;
    } else {
      chunk_ += "\n],\"displayTimeUnit\":\"ns\",\"metadata\":{\"generator\":\"test\"}}\n";
      done_ = true;
    }
    bytes += chunk_.size();
    setg(chunk_.data(), chunk_.data(), chunk_.data() + chunk_.size());
    return traits_type::to_int_type(chunk_[0]);
  }
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override {
    if (!o_.seekable) return pos_type(off_type(-1));
    if (off == 0 && dir == std::ios_base::cur) return pos_type(off_type(bytes - static_cast<std::uint64_t>(egptr() - gptr())));
    if (off == 0 && dir == std::ios_base::beg) return seekpos(pos_type(0), which);
    return pos_type(off_type(-1));
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode) override {
    if (!o_.seekable || pos != pos_type(0)) return pos_type(off_type(-1));
    restart();
    return pos_type(0);
  }

private:
  Options o_;
  std::string chunk_;
  std::uint64_t round_ = 0;
  bool head_done_ = false, done_ = false, first_ = true;

  void restart() {
    round_ = 0;
    head_done_ = done_ = false;
    first_ = true;
    events = slices = flows = bytes = 0;
    chunk_.clear();
    setg(nullptr, nullptr, nullptr);
  }
  template <typename... A>
  static std::string fmt(const char* f, A... a) {
    char buf[512];
    const int n = std::snprintf(buf, sizeof buf, f, a...);
    return std::string(buf, static_cast<std::size_t>(n));
  }
  void add(const std::string& e) {
    if (!first_) chunk_ += ",\n";
    first_ = false;
    chunk_ += e;
    ++events;
  }
  void slice(int k, double ts, double dur, const char* extra = "") {
    add(fmt("{\"ph\":\"X\",\"name\":\"s\",\"cat\":\"c\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f%s,\"args\":{\"k\":%d}}", k / 8, k,
            ts, dur, extra, k));
    ++slices;
  }
  void emit_round(std::uint64_t r) {
    const double t0 = static_cast<double>(r) * 100.0;
    for (int k = 0; k < o_.tracks; ++k) {
      slice(k, t0, 100.0);                                              // parent
      slice(k, t0 + 10.0, o_.overlap_round == static_cast<std::int64_t>(r) && k == 3 ? 95.0 : 20.0);
      slice(k, t0 + 30.0, 0.0);                                         // zero length
      const std::uint64_t id = r * static_cast<std::uint64_t>(o_.tracks) + static_cast<std::uint64_t>(k / 2 * 2) + 1;
      if (k % 2 == 0) slice(k, t0 + 40.0, 10.5, fmt(",\"bind_id\":%llu,\"flow_out\":true", static_cast<unsigned long long>(id)).c_str());
      else slice(k, t0 + 40.0, 20.25, fmt(",\"bind_id\":%llu,\"flow_in\":true", static_cast<unsigned long long>(id)).c_str());
      if (k % 2 == 1) ++flows;
      slice(k, t0 + 70.015625, 29.984375);  // ends exactly at the parent's end
    }
    for (int p = 0; p * 8 < o_.tracks; ++p)
      add(fmt("{\"ph\":\"C\",\"name\":\"mem\",\"pid\":%d,\"tid\":0,\"ts\":%.6f,\"args\":{\"value\":%llu}}", p, t0,
              static_cast<unsigned long long>(r)));
  }
};

long max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;  // KiB on Linux
}

std::string materialize(SyntheticTrace::Options o) {
  SyntheticTrace g(o);
  std::istream in(&g);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has(const TraceCheckReport& r, const std::string& needle) {
  for (const auto& v : r.violations)
    if (v.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

// First in this program, so that no earlier test has raised the peak RSS.
TEST_CASE("a large trace streams: memory growth stays small whatever its size") {
  // 192 MiB of text, ~1.6 M slices (sized to keep this test near 15 s in CI). The old
  // checker held the parsed document, about ten times the text (~2 GB); even 24 bytes
  // per slice would be ~38 MB. The live state here is 16 tracks' open-slice stacks, at
  // most 8 pending flows, one event's small object and a 64 KiB buffer — well under
  // 1 MB (measured: under 1 MiB at 512 MiB of text); the 16 MB bound leaves room for the
  // allocator's arenas and still fails if the checker fell back to a record per slice.
  // (AddressSanitizer keeps freed memory in quarantine, 256 MB by default, so there only
  // correctness is checked, on less text.)
#ifdef NDEBUG
  const std::uint64_t size = kAsan ? (std::uint64_t{24} << 20) : (std::uint64_t{192} << 20);
#else
  const std::uint64_t size = std::uint64_t{24} << 20;  // unoptimized builds: same check, less text
#endif
  SyntheticTrace::Options o;
  o.min_bytes = size;
  SyntheticTrace gen(o);
  std::istream in(&gen);
  const long before = max_rss_kib();
  const TraceCheckReport r = check_trace_stream(in);
  const long after = max_rss_kib();
  for (std::size_t i = 0; i < r.violations.size() && i < 10; ++i) MESSAGE(r.violations[i]);
  CHECK(r.ok());
  CHECK(gen.bytes >= size);
  CHECK(r.events == gen.events);
  CHECK(r.slices == gen.slices);
  CHECK(r.flows == gen.flows);
  CHECK(r.unordered_tracks == 0);  // in start order: one read, stacks only
  MESSAGE("peak RSS growth " << (after - before) / 1024 << " MiB for " << gen.bytes / (1 << 20) << " MiB of trace");
  if (!kAsan) CHECK(after - before < 16 * 1024);
}

TEST_CASE("slices out of start order: overlaps still found, the same whether the input is read twice or kept as records") {
  SyntheticTrace::Options o;
  o.rounds = 40;
  o.reverse = true;
  o.overlap_round = 17;
  const std::string text = materialize(o);
  const TraceCheckReport from_text = check_trace_text(text);
  CHECK(from_text.unordered_tracks == 16);
  CHECK(has(from_text, "without nesting"));
  CHECK(has(from_text, "on pid 0 tid 3 without nesting"));
  CHECK(from_text.violation_count() == 2);  // the child that ends past its parent, in ps and in double precision

  SyntheticTrace seekable(o);  // rewound for the second read
  std::istream in1(&seekable);
  const TraceCheckReport twice = check_trace_stream(in1);
  o.seekable = false;          // a pipe: 24-byte records from the start
  SyntheticTrace once(o);
  std::istream in2(&once);
  const TraceCheckReport records = check_trace_stream(in2);
  CHECK(twice.violations == from_text.violations);
  CHECK(records.violations == from_text.violations);
  CHECK(records.unordered_tracks == 16);

  // Out of order but well nested: clean.
  o.overlap_round = -1;
  CHECK(check_trace_text(materialize(o)).ok());
  // A shorter slice before a longer one with the same start is out of order too.
  const auto r = check_trace_text(R"({"traceEvents":[
    {"ph":"X","name":"a","pid":0,"tid":0,"ts":1,"dur":1},
    {"ph":"X","name":"b","pid":0,"tid":0,"ts":1,"dur":5},
    {"ph":"X","name":"c","pid":0,"tid":0,"ts":3,"dur":5}]})");
  CHECK(r.unordered_tracks == 1);
  CHECK(has(r, "event 2: slice [3000000, 8000000) ps overlaps slice 1 [1000000, 6000000) ps"));
}

TEST_CASE("gzip and plain files, and the input size cap") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ls_trace_stream_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SyntheticTrace::Options o;
  o.rounds = 50;
  o.overlap_round = 3;
  const std::string text = materialize(o);
  const std::string gz = (dir / "t.json.gz").string(), plain = (dir / "t.json").string();
  ls::tools::write_output(gz, text);
  ls::tools::write_output(plain, text);
  const TraceCheckReport expect = check_trace_text(text);
  CHECK(expect.violation_count() == 2);
  CHECK(ls::tools::check_trace_file(gz).violations == expect.violations);
  CHECK(ls::tools::check_trace_file(plain).violations == expect.violations);

  // The cap is on decompressed bytes: a file over it is an I/O error naming it.
  try {
    (void)ls::tools::check_trace_file(gz, text.size() - 1);
    FAIL("no error");
  } catch (const ls::tools::IoError& e) {
    const std::string m = e.what();
    CHECK(m.find("t.json.gz") != std::string::npos);
    CHECK(m.find("more than the limit of " + std::to_string(text.size() - 1) + " bytes once decompressed") != std::string::npos);
  }
  CHECK(ls::tools::check_trace_file(gz, text.size()).violations == expect.violations);  // exactly at the cap
  // A gzip bomb of whitespace (16 MiB in ~16 KiB) ends at the cap, not at its end.
  const std::string bomb = (dir / "bomb.json.gz").string();
  ls::tools::write_output(bomb, "{\"traceEvents\":[" + std::string(std::size_t{16} << 20, ' '));
  CHECK(fs::file_size(bomb) < (std::size_t{1} << 20));
  CHECK_THROWS_AS(ls::tools::check_trace_file(bomb, std::uint64_t{1} << 20), ls::tools::IoError);
  // NUL bytes (/dev/zero) are not JSON: a violation at once, whatever follows.
  CHECK_FALSE(ls::tools::check_trace_file("/dev/zero").ok());
  fs::remove_all(dir);
}

TEST_CASE("a trace where every event is wrong keeps kMaxKeptViolations messages and counts the rest") {
  std::string t = "{\"traceEvents\":[";
  const std::size_t n = ls::tools::kMaxKeptViolations + 2345;
  for (std::size_t i = 0; i < n; ++i) t += i ? ",{\"ph\":\"Q\"}" : "{\"ph\":\"Q\"}";
  t += "]}";
  const auto r = check_trace_text(t);
  CHECK(r.violations.size() == ls::tools::kMaxKeptViolations);
  CHECK(r.more_violations == 2345);
  CHECK(r.violation_count() == n);
  CHECK(r.violations.front() == "event 0: unknown phase 'Q'");
}

TEST_CASE("document shape") {
  // Only the first traceEvents array is checked; a second one is a violation.
  CHECK(has(check_trace_text(R"({"traceEvents":[],"traceEvents":[]})"), "more than one \"traceEvents\""));
  // Deep containers inside an event are not read (no rule looks inside them).
  CHECK(check_trace_text(R"({"traceEvents":[{"ph":"i","ts":1,"s":"g","args":{"deep":[[[[{"a":[1,2,{"b":3}]}]]]]}}]})").ok());
  // displayTimeUnit may come after traceEvents, as run --trace writes it.
  CHECK(has(check_trace_text(R"({"traceEvents":[],"displayTimeUnit":{"x":"ms"}})"), "displayTimeUnit"));
  CHECK(check_trace_text(R"({"displayTimeUnit":"ms","traceEvents":[]})").ok());
  // Non-object entries, arrays included, are counted and reported.
  const auto r = check_trace_text(R"({"traceEvents":[[{"ph":"X"}],2,{"ph":"i","ts":0}]})");
  CHECK(r.events == 3);
  CHECK(has(r, "event 0: not an object"));
  CHECK(has(r, "event 1: not an object"));
  CHECK(r.violation_count() == 2);
  // A timestamp too large for picoseconds saturates rather than overflowing.
  CHECK(check_trace_text(R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":0,"ts":1e300,"dur":1e300}]})").ok());
}

TEST_CASE("whitespace between tokens streams; whitespace inside strings is kept") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ls_trace_ws_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // Strings keep their spaces and escapes: two slices named alike but for one space
  // and an escaped quote, overlapping without nesting: the file reads as the text does.
  const std::string text = "{\"traceEvents\":[\n\n   {\"ph\":\"X\",\"name\":\"a  \\\" b\",\"pid\":0,\"tid\":0,\"ts\":0,\"dur\":10},"
                           "   \t\r\n {\"ph\":\"X\",\"name\":\"a \\\" b\",\"pid\":0,\"tid\":0,\"ts\":5,\"dur\":10}   ]}  \n";
  const std::string small = (dir / "small.json").string();
  ls::tools::write_output(small, text);
  const TraceCheckReport expect = check_trace_text(text);
  REQUIRE(expect.violation_count() >= 1);
  CHECK(ls::tools::check_trace_file(small).violations == expect.violations);
  // 256 MiB of spaces inside traceEvents (256 KiB of gzip), written a chunk at a time so
  // that no copy of it is ever in memory: the parser keeps whatever it reads between two
  // tokens, which held all of it; squeezed, the run costs nothing.
  const std::string spaces = (dir / "spaces.json.gz").string();
  {
    gzFile gz = gzopen(spaces.c_str(), "wb");
    REQUIRE(gz != nullptr);
    const std::string head = "{\"traceEvents\":[", chunk(std::size_t{1} << 20, ' '), tail = "]}";
    CHECK(gzwrite(gz, head.data(), static_cast<unsigned>(head.size())) > 0);
    for (int i = 0; i < 256; ++i) CHECK(gzwrite(gz, chunk.data(), static_cast<unsigned>(chunk.size())) > 0);
    CHECK(gzwrite(gz, tail.data(), static_cast<unsigned>(tail.size())) > 0);
    REQUIRE(gzclose(gz) == Z_OK);
  }
  const long before = max_rss_kib();
  const TraceCheckReport r = ls::tools::check_trace_file(spaces);
  const long after = max_rss_kib();
  CHECK(r.ok());
  CHECK(r.events == 0);
  MESSAGE("peak RSS growth " << (after - before) / 1024 << " MiB for 256 MiB of whitespace");
  if (!kAsan) CHECK(after - before < 64 * 1024);
  fs::remove_all(dir);
}
