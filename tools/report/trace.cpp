// tools/report/trace.cpp — Chrome trace writer. The text is assembled with fmt rather than
// nlohmann::json because timestamps must be printed from integers (a JSON library
// would turn them into doubles and back, which is exactly the rounding we avoid).
#include "tools/report/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <zlib.h>

#ifndef LAYOUTSIM_VERSION
#define LAYOUTSIM_VERSION "unknown"
#endif

namespace ls::tools {

namespace {

// RFC 8259 string escaping: quote, backslash and control characters.
void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20) out += fmt::format("\\u{:04x}", u);
        else out.push_back(c);
    }
  }
  out.push_back('"');
}

std::string quoted(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

// Shortest round-trip decimal (fmt's default for double) is deterministic; JSON has
// no NaN/inf, so those become 0 rather than an unreadable file.
std::string number(double v) {
  if (!std::isfinite(v)) return "0";
  return fmt::format("{}", v);
}

const char* coll_abbrev(sim::CollOp c) {
  switch (c) {
    case sim::CollOp::all_reduce: return "AR";
    case sim::CollOp::reduce_scatter: return "RS";
    case sim::CollOp::all_gather: return "AG";
    case sim::CollOp::all_to_all: return "A2A";
    case sim::CollOp::broadcast: return "BC";
  }
  return "coll";
}

// The axis a track's collectives run over (slice names "AR tp", "AG dp", ...).
const char* track_axis(int track) {
  switch (track) {
    case wl::track::tp: return "tp";
    case wl::track::pp_send: return "pp";
    case wl::track::dp: return "dp";
    case wl::track::ep: return "ep";
    case wl::track::prefetch: return "dp";
    case wl::track::pp_recv: return "pp";
    case wl::track::cp: return "cp";
    default: return "";
  }
}

const char* work_letter(wl::Work w) {
  switch (w) {
    case wl::Work::forward: return "F";
    case wl::Work::backward:
    case wl::Work::backward_input: return "B";
    case wl::Work::backward_weight: return "W";
    case wl::Work::recompute: return "R";
    default: return "";
  }
}

// Slice times are written on a grid of 1/64 us (15.625 ns = 15625 ps). Viewers such as
// speedscope compute a slice's end as ts + dur in double precision (after subtracting
// the thread's first ts); with arbitrary decimals that sum can land an ulp past the
// next slice's start, which the viewer reads as nesting: a staircase of frames that
// never close. Multiples of 2^-6 below 2^47 us are exact doubles and every sum or
// difference of them is exact, so any such arithmetic sees exactly the nesting and
// touching of the integer times; and 1/64 us is a whole number of picoseconds, so the
// text stays an exact 6-decimal value. Rounding to the nearest grid point is monotonic:
// slices that touch or nest in picoseconds still do.
constexpr std::int64_t kGridPs = 15625;
std::int64_t grid(sim::Time t) { return (t.ps() + kGridPs / 2) / kGridPs; }
std::string grid_us(std::int64_t units) { return sim::to_us_string(sim::Time::from_ps(units * kGridPs)); }

std::string node_of_name(const std::string& device_name) {
  const auto dot = device_name.find('.');
  return dot == std::string::npos ? device_name : device_name.substr(0, dot);
}

}  // namespace

std::string track_name(int track) {
  switch (track) {
    case wl::track::compute: return "compute";
    case wl::track::tp: return "tp";
    case wl::track::pp_send: return "pp";
    case wl::track::dp: return "dp";
    case wl::track::ep: return "ep";
    case wl::track::prefetch: return "prefetch";
    case wl::track::pp_recv: return "pp recv";
    case wl::track::cp: return "cp";
    default: return fmt::format("track{}", track);
  }
}

std::string span_name(const wl::Span& s) {
  std::string mb = s.microbatch >= 0 ? fmt::format(" mb{}", s.microbatch) : std::string();
  std::string layers;
  if (s.layer_begin >= 0 && s.layer_end > s.layer_begin) {
    layers = s.layer_end - s.layer_begin == 1 ? fmt::format(" L{}", s.layer_begin)
                                              : fmt::format(" L{}-{}", s.layer_begin, s.layer_end - 1);
  }
  switch (s.kind) {
    case sim::OpKind::send:
    case sim::OpKind::recv: {
      const char* dir = s.kind == sim::OpKind::send ? "send" : "recv";
      const char* letter = work_letter(s.work);
      return *letter ? fmt::format("{} {}{}", dir, letter, mb) : fmt::format("{}{}", dir, mb);
    }
    case sim::OpKind::collective:
      return fmt::format("{} {}", coll_abbrev(s.coll), track_axis(s.track)[0] ? track_axis(s.track) : "coll");
    case sim::OpKind::compute: break;
  }
  switch (s.work) {
    case wl::Work::forward:
    case wl::Work::backward:
    case wl::Work::backward_input:
    case wl::Work::recompute:
      return fmt::format("{}{}{}", work_letter(s.work), mb, layers);
    case wl::Work::backward_weight: return fmt::format("W{}{}", mb, layers);
    case wl::Work::optimizer: return "opt";
    default: return std::string(wl::work_name(s.work)) + mb;
  }
}

std::string chrome_trace_json(const wl::Result& r) {
  const int gpn = std::max(1, r.gpus_per_node);
  auto node_of = [&](std::int32_t device) { return device / gpn; };
  auto device_name = [&](std::int32_t device) {
    return device >= 0 && static_cast<std::size_t>(device) < r.device_names.size()
               ? r.device_names[static_cast<std::size_t>(device)]
               : fmt::format("node{}.gpu{}", device / gpn, device % gpn);
  };

  // Deterministic order whatever order the recorder produced: by thread, then start,
  // longer first (a parent before the slices it encloses).
  std::vector<const wl::Span*> spans;
  spans.reserve(r.spans.size());
  for (const auto& s : r.spans) spans.push_back(&s);
  std::stable_sort(spans.begin(), spans.end(), [](const wl::Span* a, const wl::Span* b) {
    return std::make_tuple(a->device, a->track, a->start, b->end) < std::make_tuple(b->device, b->track, b->start, a->end);
  });

  // A flow arrow needs both ends in the trace; when only some devices are traced
  // (SimOptions::trace_max_devices) one end may be missing: drop those bindings
  // rather than write a dangling arrow.
  std::map<std::uint64_t, std::pair<int, int>> flow_ends;  // id -> (outs, ins)
  for (const auto* s : spans) {
    if (s->flow_id == 0) continue;
    auto& e = flow_ends[s->flow_id];
    (s->flow_out ? e.first : e.second) += 1;
  }
  auto flow_complete = [&](std::uint64_t id) {
    const auto it = flow_ends.find(id);
    return it != flow_ends.end() && it->second.first == 1 && it->second.second == 1;
  };

  std::set<int> nodes;
  std::set<std::pair<std::int32_t, int>> threads;  // (device, track)
  for (const auto* s : spans) {
    nodes.insert(node_of(s->device));
    threads.insert({s->device, s->track});
  }
  for (const auto& c : r.counters) nodes.insert(c.node);
  // The critical path gets a process of its own, listed first: one track whose slices
  // tile the step (compute / comm / wait, with the device that held the path).
  const int crit_pid = nodes.empty() ? 0 : *nodes.rbegin() + 1;

  std::string out;
  out.reserve(256 + spans.size() * 200);
  out += "{\"traceEvents\":[\n";
  bool first = true;
  auto begin_event = [&] {
    if (!first) out += ",\n";
    first = false;
  };

  // Metadata: names and sort order so nodes and GPUs appear in numeric order.
  for (int n : nodes) {
    std::string pname = fmt::format("node{}", n);
    for (std::size_t d = 0; d < r.device_names.size(); ++d) {
      if (node_of(static_cast<std::int32_t>(d)) == n) { pname = node_of_name(r.device_names[d]); break; }
    }
    begin_event();
    out += fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", n, quoted(pname));
    begin_event();
    out += fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", n, n);
  }
  if (!r.critical_segments.empty()) {
    begin_event();
    out += fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"critical path"}}}})", crit_pid);
    begin_event();
    out += fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":-1}}}})", crit_pid);
    begin_event();
    out += fmt::format(R"x({{"ph":"M","name":"thread_name","pid":{},"tid":0,"args":{{"name":"critical path (step)"}}}})x", crit_pid);
  }
  // A perturbed device (perturbations.devices) says so on each of its tracks, so that a
  // reader finds the straggler in the viewer's thread list without the summary.
  auto perturbed_mark = [&](std::int32_t device) -> std::string {
    for (const auto& pd : r.perturbed_devices)
      if (pd.device == device)
        return pd.compute_slowdown != 1.0 ? fmt::format(" [perturbed {:.2f}x]", pd.compute_slowdown) : std::string(" [perturbed]");
    return "";
  };
  for (const auto& [device, track] : threads) {
    const int pid = node_of(device);
    const std::int64_t tid = static_cast<std::int64_t>(device) * kTracksPerDevice + track;
    begin_event();
    out += fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, tid,
                       quoted(device_name(device) + " " + track_name(track) + perturbed_mark(device)));
    begin_event();
    out += fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", pid, tid, tid);
  }

  for (const auto* s : spans) {
    const int pid = node_of(s->device);
    const std::int64_t tid = static_cast<std::int64_t>(s->device) * kTracksPerDevice + s->track;
    const sim::Time dur = s->end >= s->start ? s->end - s->start : sim::Time::zero();
    std::string name = span_name(*s);
    std::string cat = track_name(s->track);
    if (s->critical) {
      name += " [crit]";
      cat += ",critical";
    }
    begin_event();
    out += fmt::format(R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{})", quoted(name), quoted(cat), pid, tid,
                       grid_us(grid(s->start)), grid_us(grid(s->start + dur) - grid(s->start)));
    if (s->flow_id != 0 && flow_complete(s->flow_id)) {
      out += fmt::format(R"(,"bind_id":{},{})", s->flow_id, s->flow_out ? R"("flow_out":true)" : R"("flow_in":true)");
    }
    out += fmt::format(R"(,"args":{{"work":"{}","microbatch":{},"chunk":{})", work_name(s->work), s->microbatch, s->chunk);
    if (s->layer_begin >= 0) out += fmt::format(R"(,"layer_begin":{},"layer_end":{})", s->layer_begin, s->layer_end);
    out += fmt::format(R"(,"dur_ps":{},"critical":{}}}}})", dur.ps(), s->critical ? "true" : "false");
  }

  for (const auto& seg : r.critical_segments) {
    if (seg.end <= seg.start) continue;
    std::string name;
    switch (seg.kind) {
      case wl::CriticalSegment::Kind::compute: name = "compute"; break;
      case wl::CriticalSegment::Kind::comm: name = std::string("comm ") + (seg.axis == wl::Axis::none ? "" : wl::axis_name(wl::reported_axis(seg.axis))); break;
      case wl::CriticalSegment::Kind::wait: name = "wait"; break;
    }
    if (seg.device >= 0) name += " " + device_name(seg.device);
    if (seg.microbatch >= 0) name += fmt::format(" mb{}", seg.microbatch);
    if (seg.layer_begin >= 0) name += fmt::format(" L{}", seg.layer_begin);
    begin_event();
    out += fmt::format(R"({{"ph":"X","name":{},"cat":"critical","pid":{},"tid":0,"ts":{},"dur":{},"args":{{"device":{}}}}})",
                       quoted(name), crit_pid, grid_us(grid(seg.start)), grid_us(grid(seg.end) - grid(seg.start)), seg.device);
  }

  for (const auto& c : r.counters) {
    const std::int64_t tid = c.device >= 0 ? static_cast<std::int64_t>(c.device) * kTracksPerDevice : 0;
    const std::string qname = quoted(c.name);
    for (const auto& smp : c.samples) {
      begin_event();
      out += fmt::format(R"({{"ph":"C","name":{},"pid":{},"tid":{},"ts":{},"args":{{"value":{}}}}})", qname, c.node, tid,
                         sim::to_us_string(smp.t), number(smp.value));
    }
  }

  out += "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{";
  std::set<std::int32_t> traced;
  for (const auto* s : spans) traced.insert(s->device);
  out += fmt::format(R"("generator":{},"scenario":{},"devices":{},"traced_devices":{},"steps":{},"step_time_s":{},"time_unit_note":"slice ts/dur: integer picoseconds rounded to 1/64 us, exact in decimal and in double precision; args.dur_ps: exact")",
                     quoted("layoutsim " LAYOUTSIM_VERSION), quoted(r.scenario), r.devices, traced.size(), r.steps,
                     number(r.step_time_s));
  out += "}}\n";
  return out;
}

bool is_gz_path(const std::string& path) {
  return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

void write_text_file(const std::string& path, const std::string& text) {
  if (is_gz_path(path)) {
    gzFile f = gzopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error(fmt::format("cannot open '{}' for writing", path));
    // gzwrite takes an unsigned length: write in bounded chunks for multi-GB traces.
    std::size_t off = 0;
    while (off < text.size()) {
      const unsigned n = static_cast<unsigned>(std::min<std::size_t>(text.size() - off, 1u << 30));
      if (gzwrite(f, text.data() + off, n) != static_cast<int>(n)) {
        gzclose(f);
        throw std::runtime_error(fmt::format("error writing '{}'", path));
      }
      off += n;
    }
    if (gzclose(f) != Z_OK) throw std::runtime_error(fmt::format("error closing '{}'", path));
    return;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error(fmt::format("cannot open '{}' for writing", path));
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) throw std::runtime_error(fmt::format("error writing '{}'", path));
}

std::string read_text_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(fmt::format("cannot open '{}'", path));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      gzclose(f);
      throw std::runtime_error(fmt::format("error reading '{}' (corrupt gzip?)", path));
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  gzclose(f);
  return out;
}

void write_chrome_trace(const wl::Result& r, const std::string& path) { write_text_file(path, chrome_trace_json(r)); }

}  // namespace ls::tools
