// tools/report/trace_check.cpp — the Chrome trace checker's rules and its compact state. The
// text is walked once (tools/report/trace_check_walk.cpp) and each traceEvents entry is
// checked as soon as it closes; what outlives an event is small:
//  * per (pid, tid) track, the stack of `X` slices still open — exact when the
//    track's slices arrive in start order, longer first on ties, which is the order
//    `layoutsim run --trace` writes (tools/report/trace.cpp sorts them so). A track whose
//    slices arrive in another order is marked, and its nesting is checked afterwards
//    from 24-byte records of its slices only, gathered by a second read of the input
//    (or kept from the start when the input cannot be read twice: a pipe);
//  * per flow bind_id, only the ids whose pair is not complete yet;
//  * the violation messages, up to kMaxKeptViolations (the rest are counted).
// The messages and their order are those of sorting every slice of a track by start.
#include "tools/report/trace_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/report/atomic_file.hpp"
#include "tools/report/trace_check_walk.hpp"

namespace ls::tools {

namespace {

using json = nlohmann::json;
using trace_check_detail::GzInputBuf;
using trace_check_detail::MemoryBuf;
using trace_check_detail::TraceSink;
using trace_check_detail::walk_trace;
using trace_check_detail::WalkResult;

// Microseconds → picoseconds, saturating: a hostile ts of 1e300 must not overflow.
// The whole and the fractional microseconds convert apart: us · 1e6 in one double
// rounds past 2^53 ps (about 2.5 h), where a step's exact 1/64-µs grid values would
// come out a picosecond off and look like overlaps.
std::int64_t to_ps(double us) {
  constexpr double kMax = 9.2e18;  // just under INT64_MAX
  if (!(us * 1e6 < kMax)) return std::numeric_limits<std::int64_t>::max();
  if (!(us * 1e6 > -kMax)) return std::numeric_limits<std::int64_t>::min();
  double whole = 0;
  const double frac = std::modf(us, &whole);
  return static_cast<std::int64_t>(whole) * 1'000'000 + std::llround(frac * 1e6);
}

std::int64_t add_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
  return r;
}

// One `X` slice as the nesting rule needs it (24 bytes; pid/tid are the track's).
struct SliceRec {
  double ts = 0, dur = 0;  // microseconds, as written
  std::size_t index = 0;   // event index
};

struct PsOpen {
  std::int64_t ts, end;
  std::size_t index;
};
struct DoubleOpen {
  double ts, end;
  std::size_t index;
};

// Nesting state of one (pid, tid) track, in exact picoseconds and in double precision.
struct Track {
  std::vector<PsOpen> ps_open;
  std::vector<DoubleOpen> d_open;
  bool seen_ps = false, seen_d = false;
  std::int64_t last_ts = 0, last_end = 0;  // ps sort key of the last slice
  double last_dts = 0, last_dend = 0;      // double sort key of the last slice
  bool unordered = false;                  // some slice came before one it sorts after
  std::vector<std::string> ps_msgs, d_msgs;
  std::size_t ps_found = 0, d_found = 0;  // messages found, kept or not
  std::vector<SliceRec> records;          // unordered tracks (or every track of a one-pass input)
};

class Checker final : public TraceSink {
public:
  explicit Checker(bool keep_records) : keep_records_(keep_records) {}

  TraceCheckReport rep;
  bool pass2 = false;  // second read: gather records of unordered tracks, nothing else

  bool any_unordered() const {
    return std::any_of(tracks_.begin(), tracks_.end(), [](const auto& kv) { return kv.second.unordered; });
  }

  void not_object(std::size_t i) override {
    if (!pass2) bad(i, "not an object");
  }
  void precision(std::size_t i, const std::string& key, const std::string& text) override {
    if (pass2) return;
    keep(precision_msgs_, fmt::format("event {}: {} {} has more than 6 decimals (not exact picoseconds)", i, key, text));
  }
  void event(std::size_t i, const json& e) override;

  // Nesting of unordered tracks from their records, then every message in order.
  void finish(const WalkResult& w);

private:
  bool keep_records_;
  std::vector<std::string> precision_msgs_, event_msgs_;
  std::map<std::pair<std::int64_t, std::int64_t>, Track> tracks_;
  struct Pending {
    std::uint32_t outs = 0, ins = 0;
    std::size_t out_index = 0, in_index = 0;
    std::int64_t out_ts = 0, in_end = 0;
  };
  std::map<std::string, Pending> pending_flows_;  // key: bind_id as JSON text, so 5 and "5" stay distinct
  std::size_t matched_flows_ = 0;
  std::multimap<std::string, std::string> flow_msgs_;
  std::size_t kept_ = 0;     // messages kept, all kinds
  std::size_t dropped_ = 0;  // messages found past kMaxKeptViolations

  void bad(std::size_t i, const std::string& msg) { keep(event_msgs_, fmt::format("event {}: {}", i, msg)); }
  void keep(std::vector<std::string>& to, std::string msg) {
    if (kept_ >= kMaxKeptViolations) { ++dropped_; return; }
    ++kept_;
    to.push_back(std::move(msg));
  }
  void slice(std::int64_t pid, std::int64_t tid, double ts, double dur, std::size_t i);
  void flow_end(const std::string& id, bool out, bool in, std::pair<std::int64_t, std::int64_t> span, std::size_t i);
  void nest_ps(Track& t, std::int64_t pid, std::int64_t tid, const PsOpen& s);
  void nest_double(Track& t, std::int64_t pid, std::int64_t tid, const DoubleOpen& s);
  void recheck_from_records(Track& t, std::int64_t pid, std::int64_t tid);
};

const std::string kPhases = "BEXiIbenstfCMPONDRc";

void Checker::event(std::size_t i, const json& e) {
  // In the second read only slices of unordered tracks matter; the same validity
  // tests as the first read pick them, with every message silenced.
  std::function<void(std::size_t, const std::string&)> report = [this](std::size_t k, const std::string& m) { bad(k, m); };
  if (pass2) report = [](std::size_t, const std::string&) {};
  if (!pass2) ++rep.events;

  if (!e.contains("ph") || !e["ph"].is_string() || e["ph"].get_ref<const std::string&>().size() != 1) {
    report(i, "missing or invalid \"ph\" (one-letter string)");
    return;
  }
  const char ph = e["ph"].get_ref<const std::string&>()[0];
  if (kPhases.find(ph) == std::string::npos) { report(i, fmt::format("unknown phase '{}'", ph)); return; }

  // pid/tid: integers; required where Perfetto keys tracks on them.
  const bool need_tid = ph == 'X' || ph == 'B' || ph == 'E' ||
                        (ph == 'M' && e.contains("name") && e["name"].is_string() &&
                         e["name"].get_ref<const std::string&>().rfind("thread_", 0) == 0);
  bool ids_ok = true;
  for (const char* k : {"pid", "tid"}) {
    const bool required = std::string(k) == "pid" ? (ph == 'X' || ph == 'C' || ph == 'M' || ph == 'B' || ph == 'E') : need_tid;
    if (!e.contains(k)) {
      if (required) { report(i, fmt::format("missing \"{}\"", k)); ids_ok = false; }
    } else if (!e[k].is_number_integer()) {
      report(i, fmt::format("\"{}\" must be an integer", k));
      ids_ok = false;
    }
  }

  // ts/dur: non-negative numbers (precision checked by the walker, on their text).
  bool time_ok = true;
  for (const char* k : {"ts", "dur"}) {
    const bool required = std::string(k) == "ts" ? ph != 'M' : ph == 'X';
    if (!e.contains(k)) {
      if (required) { report(i, fmt::format("missing \"{}\"", k)); time_ok = false; }
    } else if (!e[k].is_number()) {
      report(i, fmt::format("\"{}\" must be a number", k));
      time_ok = false;
    } else if (e[k].get<double>() < 0) {
      report(i, fmt::format("\"{}\" is negative", k));
      time_ok = false;
    }
  }

  if (pass2) {
    if (ph == 'X' && ids_ok && time_ok) slice(e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>(), e["ts"].get<double>(), e["dur"].get<double>(), i);
    return;
  }

  // Flow v2 fields.
  const bool has_bind = e.contains("bind_id");
  for (const char* k : {"flow_in", "flow_out"}) {
    if (!e.contains(k)) continue;
    if (!e[k].is_boolean()) bad(i, fmt::format("\"{}\" must be a boolean", k));
    if (!has_bind) bad(i, fmt::format("\"{}\" without \"bind_id\"", k));
  }
  if (has_bind) {
    const json& b = e["bind_id"];
    if (ph != 'X' && ph != 'B') {
      bad(i, "bind_id on an event that is not a slice (flow v2 binds to the slice that carries it)");
    } else if (!(b.is_number_integer() || b.is_string())) {
      bad(i, "bind_id must be an integer or a string");
    } else {
      const bool out = e.contains("flow_out") && e["flow_out"].is_boolean() && e["flow_out"].get<bool>();
      const bool in = e.contains("flow_in") && e["flow_in"].is_boolean() && e["flow_in"].get<bool>();
      if (!out && !in) bad(i, "bind_id with neither flow_out nor flow_in true");
      std::pair<std::int64_t, std::int64_t> span{0, 0};
      if (time_ok && e.contains("ts") && e.contains("dur")) {
        span.first = to_ps(e["ts"].get<double>());
        span.second = add_sat(span.first, to_ps(e["dur"].get<double>()));
      }
      flow_end(b.dump(), out, in, span, i);
    }
  }

  switch (ph) {
    case 'X': {
      ++rep.slices;
      if (!e.contains("name") || !e["name"].is_string()) bad(i, "slice without a string \"name\"");
      if (ids_ok && time_ok) slice(e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>(), e["ts"].get<double>(), e["dur"].get<double>(), i);
      break;
    }
    case 'C': {
      ++rep.counters;
      if (!e.contains("name") || !e["name"].is_string()) bad(i, "counter without a string \"name\"");
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) {
        bad(i, "counter without a non-empty \"args\" object");
      } else {
        for (const auto& [k, v] : e["args"].items()) {
          if (!v.is_number()) bad(i, fmt::format("counter arg \"{}\" is not a number", k));
        }
      }
      break;
    }
    case 'M': {
      ++rep.metadata;
      const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
      const json* args = e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr;
      if (name == "process_name" || name == "thread_name") {
        if (!args || !args->contains("name") || !(*args)["name"].is_string()) bad(i, fmt::format("{} needs a string args.name", name));
      } else if (name == "process_sort_index" || name == "thread_sort_index") {
        if (!args || !args->contains("sort_index") || !(*args)["sort_index"].is_number_integer())
          bad(i, fmt::format("{} needs an integer args.sort_index", name));
      } else if (name == "process_labels") {
        if (!args || !args->contains("labels") || !(*args)["labels"].is_string()) bad(i, "process_labels needs a string args.labels");
      } else {
        bad(i, fmt::format("metadata name '{}' is not one of process_name, process_labels, process_sort_index, "
                           "thread_name, thread_sort_index", name));
      }
      break;
    }
    default: break;
  }
}

// Strict nesting per (pid, tid): in start order (longer first on ties), each slice
// must end within the innermost slice still open at its start. A zero-length slice
// can neither break this rule nor matter to a later slice (the next one in start
// order closes it), so it is not tracked — which also keeps a run's zero-length
// slices, whose rounded start may tie a longer one's, from looking out of order.
void Checker::slice(std::int64_t pid, std::int64_t tid, double ts, double dur, std::size_t i) {
  Track& t = tracks_[{pid, tid}];
  if (pass2) {
    if (t.unordered) t.records.push_back({ts, dur, i});
    return;
  }
  if (keep_records_) t.records.push_back({ts, dur, i});
  if (t.unordered) return;
  const std::int64_t ps_ts = to_ps(ts);
  const PsOpen p{ps_ts, add_sat(ps_ts, to_ps(dur)), i};
  const DoubleOpen d{ts, ts + dur, i};
  const bool ps_len = p.end != p.ts, d_len = d.end != d.ts;
  const bool ps_in_order = !ps_len || !t.seen_ps || p.ts > t.last_ts || (p.ts == t.last_ts && p.end <= t.last_end);
  const bool d_in_order = !d_len || !t.seen_d || d.ts > t.last_dts || (d.ts == t.last_dts && d.end <= t.last_dend);
  if (!ps_in_order || !d_in_order) {
    // Forget what the in-order part found: finish() checks the whole track from records.
    t.unordered = true;
    kept_ -= t.ps_msgs.size() + t.d_msgs.size();
    dropped_ -= (t.ps_found - t.ps_msgs.size()) + (t.d_found - t.d_msgs.size());
    t.ps_msgs = {};
    t.d_msgs = {};
    t.ps_open = {};
    t.d_open = {};
    return;
  }
  if (ps_len) {
    t.seen_ps = true;
    t.last_ts = p.ts;
    t.last_end = p.end;
    nest_ps(t, pid, tid, p);
  }
  if (d_len) {
    t.seen_d = true;
    t.last_dts = d.ts;
    t.last_dend = d.end;
    nest_double(t, pid, tid, d);
  }
}

/// The nesting rule on one track's stack of open slices (PsOpen or DoubleOpen): pops
/// the slices that ended by s's start, then opens s inside the innermost one left, or
/// returns that one when s ends after it (s is then not opened: one bad slice must not
/// cascade).
template <class Open>
const Open* open_nested(std::vector<Open>& open, const Open& s) {
  while (!open.empty() && open.back().end <= s.ts) open.pop_back();
  if (!open.empty() && s.end > open.back().end) return &open.back();
  open.push_back(s);
  return nullptr;
}

void Checker::nest_ps(Track& t, std::int64_t pid, std::int64_t tid, const PsOpen& s) {
  if (const PsOpen* p = open_nested(t.ps_open, s)) {
    ++t.ps_found;
    keep(t.ps_msgs, fmt::format("event {}: slice [{}, {}) ps overlaps slice {} [{}, {}) ps on pid {} tid {} without nesting", s.index,
                                s.ts, s.end, p->index, p->ts, p->end, pid, tid));
  }
}

// The same rule in double precision, end = ts + dur as a double (speedscope and other
// viewers): an end an ulp past the next start turns touching slices into a staircase
// of frames that never close.
void Checker::nest_double(Track& t, std::int64_t pid, std::int64_t tid, const DoubleOpen& s) {
  if (const DoubleOpen* p = open_nested(t.d_open, s)) {
    ++t.d_found;
    keep(t.d_msgs, fmt::format("event {}: in double precision (end = ts + dur) slice [{}, {}) us overlaps slice {} [{}, {}) us on pid {} tid {} "
                               "without nesting: viewers that add ts + dur as doubles see frames cross",
                               s.index, s.ts, s.end, p->index, p->ts, p->end, pid, tid));
  }
}

void Checker::recheck_from_records(Track& t, std::int64_t pid, std::int64_t tid) {
  auto& recs = t.records;
  std::vector<PsOpen> ps;
  ps.reserve(recs.size());
  for (const auto& r : recs) {
    const std::int64_t ts = to_ps(r.ts);
    ps.push_back({ts, add_sat(ts, to_ps(r.dur)), r.index});
  }
  std::sort(ps.begin(), ps.end(), [](const PsOpen& a, const PsOpen& b) { return std::tie(a.ts, b.end, a.index) < std::tie(b.ts, a.end, b.index); });
  t.ps_open.clear();
  for (const auto& s : ps) nest_ps(t, pid, tid, s);
  t.ps_open = {};
  ps = {};
  std::vector<DoubleOpen> ds;
  ds.reserve(recs.size());
  for (const auto& r : recs) ds.push_back({r.ts, r.ts + r.dur, r.index});
  recs = {};
  std::sort(ds.begin(), ds.end(), [](const DoubleOpen& a, const DoubleOpen& b) { return std::tie(a.ts, b.end, a.index) < std::tie(b.ts, a.end, b.index); });
  t.d_open.clear();
  for (const auto& s : ds) nest_double(t, pid, tid, s);
  t.d_open = {};
}

// A bind_id's pair is settled as soon as it has one flow_out and one flow_in slice:
// only ids still waiting for an end are kept. (An id used again after its pair is
// complete starts a new flow, which must be complete too — also when it has neither
// end true; sorting every slice, as the checker once did, saw one id with too many
// ends, or none.)
void Checker::flow_end(const std::string& id, bool out, bool in, std::pair<std::int64_t, std::int64_t> span, std::size_t i) {
  Pending& f = pending_flows_[id];
  if (out && f.outs++ == 0) {
    f.out_index = i;
    f.out_ts = span.first;
  }
  if (in && f.ins++ == 0) {
    f.in_index = i;
    f.in_end = span.second;
  }
  if (f.outs == 1 && f.ins == 1) {
    if (f.out_ts > f.in_end) {
      if (kept_ < kMaxKeptViolations) {
        ++kept_;
        flow_msgs_.emplace(id, fmt::format("flow bind_id {}: sending slice (event {}) starts after the receiving slice (event {}) ends", id,
                                           f.out_index, f.in_index));
      } else {
        ++dropped_;
      }
    }
    ++matched_flows_;
    pending_flows_.erase(id);
  }
}

void Checker::finish(const WalkResult& w) {
  rep.violations.clear();
  rep.more_violations = 0;
  if (!w.parsed) {
    rep = TraceCheckReport{};
    rep.violations.push_back(w.parse_error);
    return;
  }
  if (!w.root_object) {
    rep = TraceCheckReport{};
    rep.violations.push_back("top level must be a JSON object {\"traceEvents\": [...]} (object form)");
    return;
  }
  if (!w.events_array) {
    rep = TraceCheckReport{};
    rep.violations.push_back("missing \"traceEvents\" array");
    return;
  }
  rep.events = w.events;
  if (w.time_unit_bad) rep.violations.push_back("displayTimeUnit must be \"ms\" or \"ns\"");
  if (w.duplicate_events) rep.violations.push_back("more than one \"traceEvents\" key (viewers keep one; only the first is checked)");
  for (auto& [key, t] : tracks_) {
    if (!t.unordered) continue;
    ++rep.unordered_tracks;
    recheck_from_records(t, key.first, key.second);
  }
  for (auto& m : precision_msgs_) rep.violations.push_back(std::move(m));
  for (auto& m : event_msgs_) rep.violations.push_back(std::move(m));
  for (auto& [key, t] : tracks_)
    for (auto& m : t.ps_msgs) rep.violations.push_back(std::move(m));
  for (auto& [key, t] : tracks_)
    for (auto& m : t.d_msgs) rep.violations.push_back(std::move(m));
  for (const auto& [id, f] : pending_flows_) {
    if (kept_ < kMaxKeptViolations) {
      ++kept_;
      flow_msgs_.emplace(id, fmt::format("flow bind_id {}: {} flow_out and {} flow_in slices (need exactly one each)", id, f.outs, f.ins));
    } else {
      ++dropped_;
    }
  }
  for (auto& [id, m] : flow_msgs_) rep.violations.push_back(std::move(m));
  rep.flows = matched_flows_ + pending_flows_.size();
  rep.more_violations = dropped_;
}

// Checks `in`, reading it a second time when a track's slices came out of order and
// the input can be rewound. `io_check` runs after each read (it throws on an I/O error).
TraceCheckReport check_stream(std::istream& in, const std::function<void()>& io_check) {
  const bool rewindable = in.rdbuf()->pubseekoff(0, std::ios_base::cur, std::ios_base::in) != std::streampos(-1);
  Checker c(!rewindable);
  WalkResult w = walk_trace(in, c);
  io_check();
  if (w.parsed && rewindable && c.any_unordered()) {
    in.clear();
    if (in.rdbuf()->pubseekpos(0, std::ios_base::in) != std::streampos(0)) throw IoError("cannot read the trace a second time");
    c.pass2 = true;
    (void)walk_trace(in, c);
    io_check();
  }
  c.finish(w);
  return std::move(c.rep);
}

}  // namespace

TraceCheckReport check_trace_stream(std::istream& in) {
  return check_stream(in, [] {});
}

TraceCheckReport check_trace_text(std::string_view text) {
  MemoryBuf buf(text);
  std::istream in(&buf);
  return check_stream(in, [] {});
}

TraceCheckReport check_trace_file(const std::string& path, std::uint64_t max_bytes) {
  if (path.empty()) throw std::invalid_argument("check_trace_file: empty path (the command line must reject it)");
  const bool is_stdin = path == "-";
  const std::string name = is_stdin ? std::string("stdin") : "'" + path + "'";
  const int fd = is_stdin ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("cannot read {}: {}", name, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw IoError(fmt::format("cannot read {}: {}", name, std::strerror(EISDIR)));
  }
  const bool gz_name = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  GzInputBuf buf(fd, name, gz_name, max_bytes);
  std::istream in(&buf);
  auto io_check = [&] {
    if (!buf.error().empty()) throw IoError(fmt::format("cannot read {}: {}", name, buf.error()));
  };
  io_check();  // gzip could not start
  try {
    return check_stream(in, io_check);
  } catch (const std::bad_alloc&) {
    // A single value (one string, one event's args) larger than memory: the checker
    // streams, but one token is held whole by the parser.
    throw IoError(fmt::format("cannot check {}: not enough memory (after {} bytes; one JSON value is too large)", name, buf.bytes()));
  }
}

}  // namespace ls::tools
