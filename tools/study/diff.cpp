// tools/study/diff.cpp — `layoutsim diff` (see diff.hpp).
#include "tools/study/diff.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "tools/report/human_units.hpp"
#include "tools/report/output_check.hpp"
#include "tools/report/training_report.hpp"

namespace ls::tools {

using nlohmann::json;

namespace {

/// The entry's identity in a list: a string field that names it, else "stage=N", else its index.
std::string entry_id(const json& e, std::size_t i) {
  if (e.is_object()) {
    for (const char* k : {"name", "group", "device", "link", "pattern", "code", "id", "kind"})
      if (auto it = e.find(k); it != e.end() && it->is_string()) return it->get<std::string>();
    if (auto it = e.find("stage"); it != e.end() && it->is_number_integer()) return fmt::format("stage={}", it->get<long long>());
  }
  return std::to_string(i);
}

/// Every number of a document, by path ("pipeline.per_stage[stage=0].compute_s"), in document order.
void flatten(const json& v, const std::string& path, std::vector<std::pair<std::string, double>>& out) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) flatten(v[i], fmt::format("{}[{}]", path, entry_id(v[i], i)), out);
  } else if (v.is_number()) {
    out.emplace_back(path, v.get<double>());
  }
}

const json* at_path(const json& doc, const std::string& dotted) {
  const json* cur = &doc;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    const auto dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

std::string show(double v, const std::string& unit) {
  if (unit == "s") return v >= 120 ? human_duration(v) : human_seconds(v);
  if (unit == "B") return human_bytes(v);
  if (unit == "%") return percent(v);
  return human_count(v);
}

std::string unit_of(const std::string& path) {
  const std::string leaf = path.substr(path.find_last_of('.') == std::string::npos ? 0 : path.find_last_of('.') + 1);
  auto ends = [&](std::string_view s) { return leaf.size() >= s.size() && leaf.compare(leaf.size() - s.size(), s.size(), s) == 0; };
  if ((ends("_s") && !ends("_per_s")) || leaf == "start" || leaf == "end") return "s";
  if (ends("bytes") || ends("_bytes") || leaf == "weights" || leaf == "gradients" || leaf == "optimizer" || leaf == "activations" ||
      leaf == "peak" || leaf == "master" || leaf == "buffers" || ends("bytes_per_device"))
    return "B";
  if (leaf == "mfu" || leaf == "hfu" || leaf.find("fraction") != std::string::npos || leaf.find("utilization") != std::string::npos ||
      leaf.rfind("share", 0) == 0)
    return "%";
  return "";
}

}  // namespace

double DiffRow::change() const {
  if (!has_a || !has_b || unit == "text" || a == 0) return std::numeric_limits<double>::quiet_NaN();
  return (b - a) / std::abs(a);
}

json read_summary(const std::string& text, const std::string& name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number past a double's range
    throw DiffInputError(fmt::format("{}: error: not JSON ({})", name, e.what()));
  }
  const char* hint = "write one with `layoutsim run SCENARIO.yaml --json FILE`";
  if (j.is_array() && !j.empty() && j.front().is_object() && j.front().contains("set"))
    throw DiffInputError(fmt::format("{}: error: a sweep's JSON, not a run summary ({}; or compare two sweep points' "
                                     "\"summary\" objects)", name, hint));
  if (j.is_object() && j.contains("candidates"))
    throw DiffInputError(fmt::format("{}: error: a search's JSON, not a run summary ({})", name, hint));
  if (!j.is_object() || !j.contains("step_time_s") || !j["step_time_s"].is_number() || !j.contains("scenario") || !j["scenario"].is_string())
    throw DiffInputError(fmt::format("{}: error: not a layoutsim run summary (no scenario name and step_time_s; {})", name, hint));
  // The numbers a summary can hold (the check `run` applies before writing one): a
  // negative step time would otherwise be compared, and ranked, as if it were real.
  try {
    check_summary_numbers(j);
  } catch (const OutputInvariantError& e) {
    throw DiffInputError(fmt::format("{}: error: {}, which no layoutsim summary holds (was it edited?)", name, e.what()));
  }
  return j;
}

DiffReport diff_summaries(const json& a, const json& b, const std::string& name_a, const std::string& name_b, double rel_tol) {
  DiffReport r;
  r.name_a = name_a;
  r.name_b = name_b;
  r.scenario_a = a.value("scenario", "");
  r.scenario_b = b.value("scenario", "");
  std::set<std::string> covered;
  // unit: "s", "B", "%", "" (a count), "text"; "auto" = from the key's name.
  auto add = [&](const std::string& section, const std::string& label, const std::string& path, std::string unit = "auto") {
    const json* va = at_path(a, path);
    const json* vb = at_path(b, path);
    if (!va && !vb) return;
    DiffRow row{section, label, path, unit == "auto" ? unit_of(path) : unit};
    if (unit == "text") {
      auto text = [](const json* v) { return !v ? std::string("-") : v->is_string() ? v->get<std::string>() : v->dump(); };
      row.text_a = text(va);
      row.text_b = text(vb);
      row.has_a = va != nullptr;
      row.has_b = vb != nullptr;
    } else {
      if (va && va->is_number()) row.has_a = true, row.a = va->get<double>();
      if (vb && vb->is_number()) row.has_b = true, row.b = vb->get<double>();
      if (!row.has_a && !row.has_b) return;
    }
    covered.insert(path);
    r.rows.push_back(std::move(row));
  };
  add("", "step time", "step_time_s", "s");
  add("", "tokens/s", "tokens_per_s", "");
  add("", "MFU", "mfu", "%");
  add("", "HFU", "hfu", "%");
  add("", "TFLOP/s per GPU", "tflops_per_gpu", "");
  add("", "bubble (measured)", "pipeline.bubble_fraction", "%");
  add("", "bubble (analytic)", "pipeline.bubble_fraction_analytic", "%");
  add("", "time to train", "time_to_train_s", "s");
  add("", "GPU-hours", "gpu_hours", "");
  add("", "cost", "cost", "");
  add("", "critical path device", "critical_path.device_name", "text");

  // Every axis either side reports.
  std::vector<std::string> axes;
  for (const json* doc : {&a, &b})
    if (const json* c = at_path(*doc, "comm"); c && c->is_object())
      for (auto it = c->begin(); it != c->end(); ++it)
        if (std::find(axes.begin(), axes.end(), it.key()) == axes.end()) axes.push_back(it.key());
  for (const auto& ax : axes) add("comm", "exposed " + ax, "comm." + ax + ".exposed_s", "s");
  for (const auto& ax : axes) add("comm", "bytes/device " + ax, "comm." + ax + ".bytes_per_device", "B");

  add("memory", "peak memory", "memory.max_peak_bytes", "B");
  add("memory", "headroom", "memory.headroom_bytes", "B");
  add("memory", "fits", "memory.fits", "text");

  // Links: the utilisation of each kind, then the first entries of every list under
  // `links` (busiest links, link groups): their utilisation-like numbers, else bytes.
  for (const json* doc : {&a, &b})
    if (const json* k = at_path(*doc, "links.by_kind"); k && k->is_object())
      for (auto it = k->begin(); it != k->end(); ++it) {
        const std::string base = "links.by_kind." + it.key();
        if (covered.count(base + ".mean_utilization")) continue;
        add("links", it.key() + " mean utilization", base + ".mean_utilization", "%");
        add("links", it.key() + " max utilization", base + ".max_utilization", "%");
      }
  // Links by class: the busiest group of each class either side reports. Names do not
  // carry over between layouts (the busiest link of one is node0.gpu0's, of the other a
  // leaf's), classes do ("infiniband leaf*->node*.nic*").
  add("links", "bottleneck class", "links.bottleneck.class", "text");
  add("links", "bottleneck share of the step", "links.bottleneck.fraction", "%");
  std::vector<std::string> classes;
  std::map<std::string, std::pair<const json*, const json*>> busiest_of;
  for (int side = 0; side < 2; ++side) {
    const json* groups = at_path(side == 0 ? a : b, "links.groups");
    if (!groups || !groups->is_array()) continue;
    for (const auto& g : *groups) {
      if (!g.is_object() || !g.value("busiest_of_class", false) || !g.contains("class") || !g["class"].is_string()) continue;
      const std::string cls = g["class"].get<std::string>();
      if (std::find(classes.begin(), classes.end(), cls) == classes.end()) classes.push_back(cls);
      (side == 0 ? busiest_of[cls].first : busiest_of[cls].second) = &g;
    }
  }
  std::sort(classes.begin(), classes.end());
  for (const auto& cls : classes) {
    const auto [ga, gb] = busiest_of[cls];
    for (const char* f : {"bottleneck_fraction", "utilization", "busy_utilization", "bytes"}) {
      DiffRow row{"links", fmt::format("{} {}", cls, f == std::string("bytes") ? "bytes/link" : f),
                  fmt::format("links.groups[class={}].{}", cls, f), unit_of(f)};
      if (ga && ga->contains(f) && (*ga)[f].is_number()) row.has_a = true, row.a = (*ga)[f].get<double>();
      if (gb && gb->contains(f) && (*gb)[f].is_number()) row.has_b = true, row.b = (*gb)[f].get<double>();
      if (row.has_a || row.has_b) r.rows.push_back(std::move(row));
    }
  }

  // Everything else that differs, found by walking both documents.
  std::vector<std::pair<std::string, double>> fa, fb;
  flatten(a, "", fa);
  flatten(b, "", fb);
  std::map<std::string, double> mb(fb.begin(), fb.end());
  std::set<std::string> in_a;
  // Link entries by name or pattern are compared by class above.
  auto skip = [&](const std::string& p) {
    return covered.count(p) || p.rfind("engine.", 0) == 0 || p == "critical_path.device" || p.rfind("links.busiest[", 0) == 0 ||
           p.rfind("links.groups[", 0) == 0 || p.rfind("links.bottleneck.", 0) == 0;
  };
  for (const auto& [p, va] : fa) {
    in_a.insert(p);
    if (skip(p)) continue;
    auto it = mb.find(p);
    DiffRow row{"other", p, p, unit_of(p), true, it != mb.end(), va, it != mb.end() ? it->second : 0.0};
    if (row.has_b && std::abs(row.b - row.a) <= rel_tol * std::max(std::abs(row.a), std::abs(row.b))) continue;
    r.rows.push_back(std::move(row));
    ++r.other_total;
  }
  for (const auto& [p, vb] : fb) {
    if (in_a.count(p) || skip(p)) continue;
    r.rows.push_back(DiffRow{"other", p, p, unit_of(p), false, true, 0.0, vb});
    ++r.other_total;
  }
  return r;
}

std::string format_diff(const DiffReport& r, std::size_t max_other) {
  std::size_t w = 44;
  for (const auto& row : r.rows)
    if (row.section != "other") w = std::max(w, row.label.size() + 2);
  const std::string ha = r.scenario_a.empty() ? "A" : r.scenario_a, hb = r.scenario_b.empty() ? "B" : r.scenario_b;
  std::string s = fmt::format("layoutsim diff: A = {} ({}), B = {} ({})\n\n", r.name_a, ha, r.name_b, hb);
  s += fmt::format("{:<{}} {:>16} {:>16} {:>10}\n", "", w, "A", "B", "change");
  std::string section = "";
  std::size_t other = 0;
  for (const auto& row : r.rows) {
    if (row.section != section) {
      section = row.section;
      if (section == "other") {
        s += fmt::format("\nOther numbers that differ ({}):\n", r.other_total);
      } else {
        s += fmt::format("\n{}\n", section == "comm" ? "Communication" : section == "memory" ? "Memory" : "Links");
      }
    }
    if (section == "other" && ++other > max_other) continue;
    const std::string va = row.unit == "text" ? row.text_a : row.has_a ? show(row.a, row.unit) : "-";
    const std::string vb = row.unit == "text" ? row.text_b : row.has_b ? show(row.b, row.unit) : "-";
    const double c = row.change();
    std::string ch = std::isfinite(c) ? fmt::format("{:+.1f}%", 100 * c)
                     : row.unit == "text" ? (row.text_a == row.text_b ? "" : "changed")
                     : row.has_a && row.has_b && row.a == row.b ? "" : !row.has_a ? "new" : !row.has_b ? "gone" : "";
    if (ch == "+0.0%" || ch == "-0.0%") ch = row.a == row.b ? "" : "~0%";
    if (section == "other" && row.label.size() + 2 > w) {  // a long path on its own line, the numbers under it
      s += fmt::format("  {}\n{:<{}} {:>16} {:>16} {:>10}\n", row.label, "", w, va, vb, ch);
    } else {
      s += fmt::format("{:<{}} {:>16} {:>16} {:>10}\n", (section.empty() ? "" : "  ") + row.label, w, va, vb, ch);
    }
  }
  if (other > max_other) s += fmt::format("  ... and {} more (--json FILE lists every row)\n", other - max_other);
  return s;
}

nlohmann::ordered_json diff_json(const DiffReport& r) {
  nlohmann::ordered_json j;
  j["a"] = r.name_a;
  j["b"] = r.name_b;
  j["scenario_a"] = r.scenario_a;
  j["scenario_b"] = r.scenario_b;
  auto& rows = j["rows"] = nlohmann::ordered_json::array();
  for (const auto& row : r.rows) {
    nlohmann::ordered_json e;
    e["section"] = row.section.empty() ? "headline" : row.section;
    e["label"] = row.label;
    e["path"] = row.path;
    e["unit"] = row.unit;
    if (row.unit == "text") {
      e["a"] = row.text_a;
      e["b"] = row.text_b;
    } else {
      e["a"] = row.has_a ? nlohmann::ordered_json(row.a) : nlohmann::ordered_json(nullptr);
      e["b"] = row.has_b ? nlohmann::ordered_json(row.b) : nlohmann::ordered_json(nullptr);
      const double c = row.change();
      e["change"] = std::isfinite(c) ? nlohmann::ordered_json(c) : nlohmann::ordered_json(nullptr);
    }
    rows.push_back(std::move(e));
  }
  return j;
}

}  // namespace ls::tools
