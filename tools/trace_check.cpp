// tools/trace_check.cpp — the Chrome trace checker. The document is parsed with a SAX
// handler that builds the DOM itself, because the precision rule ("at most 6 decimals")
// is about the *text* of ts/dur, which a DOM parser throws away.
#include "tools/trace_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <new>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/atomic_file.hpp"
#include "tools/trace.hpp"

namespace ls::tools {

namespace {

using json = nlohmann::json;

// Decimal places of a JSON number's text once its exponent is applied:
// "1.25" → 2, "1.5e-7" → 8, "12e3" → 0.
int effective_decimals(const std::string& s) {
  std::size_t e = s.find_first_of("eE");
  std::string mant = s.substr(0, e);
  int exp = 0;
  if (e != std::string::npos) exp = std::atoi(s.c_str() + e + 1);
  int dec = 0;
  if (auto dot = mant.find('.'); dot != std::string::npos) {
    // trailing zeros do not add precision
    std::size_t last = mant.find_last_not_of('0');
    dec = last > dot ? static_cast<int>(last - dot) : 0;
  }
  return std::max(0, dec - exp);
}

/// SAX → DOM, recording ts/dur texts with too many decimals for traceEvents entries.
class Sax : public nlohmann::json_sax<json> {
public:
  json root;
  std::vector<std::string> precision;  // violation messages
  std::string error_text;

  bool null() override { place(nullptr); return true; }
  bool boolean(bool v) override { place(v); return true; }
  bool number_integer(number_integer_t v) override { place(v); return true; }
  bool number_unsigned(number_unsigned_t v) override { place(v); return true; }
  bool number_float(number_float_t v, const string_t& s) override {
    if (in_event_field() && (key_ == "ts" || key_ == "dur") && effective_decimals(s) > 6) {
      precision.push_back(fmt::format("event {}: {} {} has more than 6 decimals (not exact picoseconds)",
                                      stack_[1]->size() - 1, key_, s));
    }
    place(v);
    return true;
  }
  bool string(string_t& v) override { place(v); return true; }
  bool binary(binary_t&) override { place(nullptr); return true; }
  bool start_object(std::size_t) override { push(json::object()); return true; }
  bool end_object() override { stack_.pop_back(); return true; }
  bool start_array(std::size_t) override {
    // The events array is the value of root["traceEvents"].
    const bool events = stack_.size() == 1 && stack_[0]->is_object() && key_ == "traceEvents";
    push(json::array());
    if (events) events_array_ = stack_.back();
    return true;
  }
  bool end_array() override { stack_.pop_back(); return true; }
  bool key(string_t& k) override { key_ = k; return true; }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& ex) override {
    error_text = fmt::format("not valid JSON at byte {}: {}", pos, ex.what());
    return false;
  }

private:
  std::vector<json*> stack_;
  std::string key_;
  json* events_array_ = nullptr;

  bool in_event_field() const { return stack_.size() == 3 && stack_[1] == events_array_ && events_array_ != nullptr; }

  // Pointers on the stack stay valid: we only append to the innermost container,
  // whose own children are all closed by then (arrays may reallocate only those).
  json* place(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json* top = stack_.back();
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    json& slot = (*top)[key_];
    slot = std::move(v);
    return &slot;
  }
  void push(json v) { stack_.push_back(place(std::move(v))); }
};

bool is_int(const json& v) { return v.is_number_integer(); }

struct Slice {
  std::int64_t pid, tid, ts_ps, end_ps;
  std::size_t index;
};

// A slice as a viewer that adds ts + dur in double precision sees it (speedscope).
struct DoubleSlice {
  std::int64_t pid, tid;
  double ts, end;
  std::size_t index;
};

struct FlowEnds {
  std::vector<std::size_t> outs, ins;
  std::vector<std::pair<std::int64_t, std::int64_t>> out_span, in_span;  // [ts, end) in ps
};

std::int64_t to_ps(double us) { return std::llround(us * 1e6); }

}  // namespace

TraceCheckReport check_trace_text(std::string_view text) {
  TraceCheckReport rep;
  Sax sax;
  const bool parsed = json::sax_parse(text.begin(), text.end(), &sax);
  if (!parsed) {
    rep.violations.push_back(sax.error_text.empty() ? "not valid JSON" : sax.error_text);
    return rep;
  }
  const json& root = sax.root;
  if (!root.is_object()) {
    rep.violations.push_back("top level must be a JSON object {\"traceEvents\": [...]} (object form)");
    return rep;
  }
  if (!root.contains("traceEvents") || !root["traceEvents"].is_array()) {
    rep.violations.push_back("missing \"traceEvents\" array");
    return rep;
  }
  if (root.contains("displayTimeUnit")) {
    const auto& u = root["displayTimeUnit"];
    if (!u.is_string() || (u != "ms" && u != "ns")) rep.violations.push_back("displayTimeUnit must be \"ms\" or \"ns\"");
  }
  for (auto& m : sax.precision) rep.violations.push_back(std::move(m));

  auto bad = [&](std::size_t i, const std::string& msg) { rep.violations.push_back(fmt::format("event {}: {}", i, msg)); };

  std::vector<Slice> slices;
  std::vector<DoubleSlice> dslices;
  std::map<std::string, FlowEnds> flows;  // key: bind_id as text, so 5 and "5" stay distinct
  const auto& events = root["traceEvents"];
  rep.events = events.size();
  static const std::string kPhases = "BEXiIbenstfCMPONDRc";

  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object()) { bad(i, "not an object"); continue; }
    if (!e.contains("ph") || !e["ph"].is_string() || e["ph"].get<std::string>().size() != 1) {
      bad(i, "missing or invalid \"ph\" (one-letter string)");
      continue;
    }
    const char ph = e["ph"].get<std::string>()[0];
    if (kPhases.find(ph) == std::string::npos) { bad(i, fmt::format("unknown phase '{}'", ph)); continue; }

    // pid/tid: integers; required where Perfetto keys tracks on them.
    const bool need_tid = ph == 'X' || ph == 'B' || ph == 'E' ||
                          (ph == 'M' && e.contains("name") && e["name"].is_string() &&
                           e["name"].get<std::string>().rfind("thread_", 0) == 0);
    bool ids_ok = true;
    for (const char* k : {"pid", "tid"}) {
      const bool required = std::string(k) == "pid" ? (ph == 'X' || ph == 'C' || ph == 'M' || ph == 'B' || ph == 'E') : need_tid;
      if (!e.contains(k)) {
        if (required) { bad(i, fmt::format("missing \"{}\"", k)); ids_ok = false; }
      } else if (!is_int(e[k])) {
        bad(i, fmt::format("\"{}\" must be an integer", k));
        ids_ok = false;
      }
    }

    // ts/dur: non-negative numbers (precision checked during parsing).
    bool time_ok = true;
    for (const char* k : {"ts", "dur"}) {
      const bool required = std::string(k) == "ts" ? ph != 'M' : ph == 'X';
      if (!e.contains(k)) {
        if (required) { bad(i, fmt::format("missing \"{}\"", k)); time_ok = false; }
      } else if (!e[k].is_number()) {
        bad(i, fmt::format("\"{}\" must be a number", k));
        time_ok = false;
      } else if (e[k].get<double>() < 0) {
        bad(i, fmt::format("\"{}\" is negative", k));
        time_ok = false;
      }
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
        auto& f = flows[b.dump()];
        std::pair<std::int64_t, std::int64_t> span{0, 0};
        if (time_ok && e.contains("ts") && e.contains("dur")) {
          span.first = to_ps(e["ts"].get<double>());
          span.second = span.first + to_ps(e["dur"].get<double>());
        }
        if (out) { f.outs.push_back(i); f.out_span.push_back(span); }
        if (in) { f.ins.push_back(i); f.in_span.push_back(span); }
      }
    }

    switch (ph) {
      case 'X': {
        ++rep.slices;
        if (!e.contains("name") || !e["name"].is_string()) bad(i, "slice without a string \"name\"");
        if (ids_ok && time_ok) {
          const std::int64_t ts = to_ps(e["ts"].get<double>());
          slices.push_back({e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>(), ts,
                            ts + to_ps(e["dur"].get<double>()), i});
          const double dts = e["ts"].get<double>();
          dslices.push_back({e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>(), dts, dts + e["dur"].get<double>(), i});
        }
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

  // Strict nesting per (pid, tid): sorted by start (longer first on ties), each slice
  // must end within the innermost slice still open at its start.
  std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    return std::tie(a.pid, a.tid, a.ts_ps, b.end_ps, a.index) < std::tie(b.pid, b.tid, b.ts_ps, a.end_ps, b.index);
  });
  std::vector<const Slice*> open;
  for (std::size_t k = 0; k < slices.size(); ++k) {
    const Slice& s = slices[k];
    if (k == 0 || s.pid != slices[k - 1].pid || s.tid != slices[k - 1].tid) open.clear();
    while (!open.empty() && open.back()->end_ps <= s.ts_ps) open.pop_back();
    if (!open.empty() && s.end_ps > open.back()->end_ps) {
      const Slice& p = *open.back();
      bad(s.index, fmt::format("slice [{}, {}) ps overlaps slice {} [{}, {}) ps on pid {} tid {} without nesting", s.ts_ps,
                               s.end_ps, p.index, p.ts_ps, p.end_ps, s.pid, s.tid));
      continue;  // do not open it: keeps one bad slice from cascading
    }
    open.push_back(&s);
  }

  // The same rule in double precision, end = ts + dur as a double (speedscope and
  // other viewers): an end an ulp past the next start turns touching slices into a
  // staircase of frames that never close.
  std::sort(dslices.begin(), dslices.end(), [](const DoubleSlice& a, const DoubleSlice& b) {
    return std::tie(a.pid, a.tid, a.ts, b.end, a.index) < std::tie(b.pid, b.tid, b.ts, a.end, b.index);
  });
  std::vector<const DoubleSlice*> dopen;
  for (std::size_t k = 0; k < dslices.size(); ++k) {
    const DoubleSlice& s = dslices[k];
    if (k == 0 || s.pid != dslices[k - 1].pid || s.tid != dslices[k - 1].tid) dopen.clear();
    while (!dopen.empty() && dopen.back()->end <= s.ts) dopen.pop_back();
    if (!dopen.empty() && s.end > dopen.back()->end) {
      const DoubleSlice& p = *dopen.back();
      bad(s.index, fmt::format("in double precision (end = ts + dur) slice [{}, {}) us overlaps slice {} [{}, {}) us on pid {} tid {} "
                               "without nesting: viewers that add ts + dur as doubles see frames cross",
                               s.ts, s.end, p.index, p.ts, p.end, s.pid, s.tid));
      continue;
    }
    dopen.push_back(&s);
  }

  rep.flows = flows.size();
  for (const auto& [id, f] : flows) {
    if (f.outs.size() != 1 || f.ins.size() != 1) {
      rep.violations.push_back(fmt::format("flow bind_id {}: {} flow_out and {} flow_in slices (need exactly one each)", id,
                                           f.outs.size(), f.ins.size()));
      continue;
    }
    if (f.out_span[0].first > f.in_span[0].second) {
      rep.violations.push_back(fmt::format("flow bind_id {}: sending slice (event {}) starts after the receiving slice "
                                           "(event {}) ends",
                                           id, f.outs[0], f.ins[0]));
    }
  }
  return rep;
}

TraceCheckReport check_trace_file(const std::string& path) {
  // The document is held in memory (about 10x its text once parsed), so the text is
  // bounded: a gzip bomb or /dev/zero is a located I/O error, not an abort.
  const std::string text = read_input(path, kMaxTraceTextBytes);
  try {
    return check_trace_text(text);
  } catch (const std::bad_alloc&) {
    throw IoError(fmt::format("cannot check '{}': not enough memory for its {} bytes (the checker holds the parsed trace)", path,
                              text.size()));
  }
}

}  // namespace ls::tools
