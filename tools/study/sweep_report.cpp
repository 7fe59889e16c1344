// tools/study/sweep_report.cpp — selection, table, plot spec and error naming for sweeps.
#include "tools/study/sweep_report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "tools/report/human_units.hpp"
#include "tools/report/training_report.hpp"

namespace ls::tools {

namespace {

// The last override of a key is the one that applied.
std::string value_of(const SweepPoint& p, const std::string& key) {
  std::string v;
  for (const auto& [k, pv] : p)
    if (k == key) v = pv;
  return v;
}

/// The keys whose value changes between the points, in `keys` order.
std::vector<std::string> varying_keys(const std::vector<std::string>& keys, const std::vector<SweepOutcome>& outcomes) {
  std::vector<std::string> varying;
  for (const auto& k : keys) {
    bool differs = false;
    for (const auto& o : outcomes) differs = differs || value_of(o.point, k) != value_of(outcomes.front().point, k);
    if (differs) varying.push_back(k);
  }
  return varying;
}

std::optional<double> as_number(const std::string& s) {
  double d = 0;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(first, last, d);
  if (s.empty() || ec != std::errc() || ptr != last || !std::isfinite(d)) return std::nullopt;
  return d;
}

struct MetricKey {
  const char* name;
  const char* alias;  // the JSON name
  bool descending;
  double (*get)(const wl::Result&);
};

const MetricKey kMetrics[] = {
    {"step_time", "step_time_s", false, [](const wl::Result& r) { return r.step_time_s; }},
    {"tokens_per_s", "tokens/s", true, [](const wl::Result& r) { return r.tokens_per_s; }},
    {"mfu", "MFU", true, [](const wl::Result& r) { return r.mfu; }},
    {"bubble", "bubble_fraction", false, [](const wl::Result& r) { return r.bubble_fraction; }},
    {"peak_memory", "max_peak_bytes", false, [](const wl::Result& r) { return r.max_peak_bytes; }},
    {"time_to_train", "time_to_train_s", false,
     [](const wl::Result& r) { return r.training.has_tokens ? r.training.time_to_train_s : std::numeric_limits<double>::infinity(); }},
    {"gpu_hours", "gpu_hours", false,
     [](const wl::Result& r) { return r.training.has_tokens ? r.training.gpu_hours : std::numeric_limits<double>::infinity(); }},
    {"cost", "cost", false,
     [](const wl::Result& r) {
       // With a price but no token budget, the cost per token ranks the same way.
       if (!r.training.has_price) return std::numeric_limits<double>::infinity();
       return r.training.has_tokens ? r.training.cost : r.training.cost_per_million_tokens;
     }},
};

const MetricKey* metric(const std::string& key) {
  for (const auto& m : kMetrics)
    if (key == m.name || key == m.alias) return &m;
  return nullptr;
}

}  // namespace

std::vector<std::string> sweep_sort_keys() {
  std::vector<std::string> out;
  for (const auto& m : kMetrics) out.emplace_back(m.name);
  return out;
}

void check_sort_key(const std::string& key, const std::vector<std::string>& keys) {
  if (metric(key) || std::find(keys.begin(), keys.end(), key) != keys.end()) return;
  throw std::invalid_argument(fmt::format("--sort {}: expected one of {} or a swept key ({})", key, fmt::join(sweep_sort_keys(), ", "),
                                          fmt::join(keys, ", ")));
}

std::vector<SweepOutcome> select_points(const std::vector<SweepOutcome>& outcomes, const SweepSelection& sel) {
  std::vector<const SweepOutcome*> chosen;
  for (const auto& o : outcomes)
    if (!sel.fits_only || (o.result && o.result->memory_fits)) chosen.push_back(&o);
  if (!sel.sort_key.empty()) {
    const MetricKey* m = metric(sel.sort_key);
    bool numeric = true;  // a swept key: numeric order when every value is a number
    if (!m)
      for (const auto* o : chosen) numeric = numeric && as_number(value_of(o->point, sel.sort_key)).has_value();
    std::stable_sort(chosen.begin(), chosen.end(), [&](const SweepOutcome* a, const SweepOutcome* b) {
      if (!a->result || !b->result) return a->result && !b->result;  // invalid points last
      if (m) {
        const double x = m->get(*a->result), y = m->get(*b->result);
        return m->descending ? x > y : x < y;
      }
      const std::string va = value_of(a->point, sel.sort_key), vb = value_of(b->point, sel.sort_key);
      return numeric ? *as_number(va) < *as_number(vb) : va < vb;
    });
  }
  if (sel.top > 0 && chosen.size() > static_cast<std::size_t>(sel.top)) chosen.resize(static_cast<std::size_t>(sel.top));
  std::vector<SweepOutcome> out;
  out.reserve(chosen.size());
  for (const auto* o : chosen) out.push_back(*o);
  return out;
}

std::string error_reason(const std::string& message) {
  std::string first = message.substr(0, message.find('\n'));
  const auto at = first.find("error: ");
  return at == std::string::npos ? first : first.substr(at + 7);
}

std::string name_set_locations(const std::string& message, const std::vector<std::string>& sets) {
  std::string out;
  std::size_t start = 0;
  while (start <= message.size()) {
    const auto nl = message.find('\n', start);
    std::string line = message.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    // "--set:N:COL: rest" → "--set KEY=VALUE: rest"
    constexpr std::string_view prefix = "--set:";
    if (line.rfind(prefix, 0) == 0) {
      std::size_t n = 0, col = 0;
      const char* p = line.data() + prefix.size();
      const char* end = line.data() + line.size();
      auto [p1, e1] = std::from_chars(p, end, n);
      if (e1 == std::errc() && p1 < end && *p1 == ':') {
        auto [p2, e2] = std::from_chars(p1 + 1, end, col);
        if (e2 == std::errc() && p2 < end && *p2 == ':' && n >= 1 && n <= sets.size())
          line = fmt::format("--set {}:{}", sets[n - 1], std::string(p2 + 1, end));
      }
    }
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

std::string format_sweep_table(const std::vector<std::string>& keys, const std::vector<SweepOutcome>& outcomes) {
  bool tokens = false, price = false;
  for (const auto& o : outcomes)
    if (o.result) {
      tokens = tokens || o.result->training.has_tokens;
      price = price || o.result->training.has_price;
    }
  std::string out;
  for (const auto& k : keys) out += fmt::format("{:>20}  ", k);
  // The global batch each point ran: sweeping micro-batches or dp changes it.
  out += fmt::format("{:>7}  {:>10}  {:>10}  {:>8}  {:>8}  {:>8}  {:>10}  {:>4}", "batch", "step time", "tokens/s", "MFU", "bubble",
                     "analytic", "peak mem", "fits");
  if (tokens) out += fmt::format("  {:>13}", "time to train");
  if (price) out += fmt::format("  {:>14}", tokens ? "cost" : "cost per M tok");
  out += "\n";
  for (const auto& o : outcomes) {
    for (const auto& k : keys) out += fmt::format("{:>20}  ", value_of(o.point, k));
    if (!o.result) {
      out += fmt::format("invalid: {}\n", error_reason(o.error_message));
      continue;
    }
    const auto& r = *o.result;
    out += fmt::format("{:>7}  {:>10}  {:>10}  {:>8}  {:>8}  {:>8}  {:>10}  {:>4}", r.setup.global_batch, human_seconds(r.step_time_s),
                       human_count(r.tokens_per_s),
                       percent(r.mfu), percent(r.bubble_fraction), percent(r.bubble_fraction_analytic), human_bytes(r.max_peak_bytes),
                       r.memory_fits ? "yes" : "NO");
    const auto& t = r.training;
    if (tokens) out += fmt::format("  {:>13}", t.has_tokens ? human_duration(t.time_to_train_s) : "-");
    if (price)
      out += fmt::format("  {:>14}", !t.has_price ? "-"
                                     : tokens     ? (t.has_tokens ? human_money(t.cost, t.currency) : "-")
                                                  : human_money(t.cost_per_million_tokens, t.currency));
    out += "\n";
  }
  return out;
}

std::string sweep_knee(const std::vector<std::string>& keys, const std::vector<SweepOutcome>& outcomes) {
  const std::vector<std::string> varying = varying_keys(keys, outcomes);
  if (varying.size() != 1) return "";
  const std::string& key = varying.front();
  struct Point {
    double x;
    const wl::Result* r;
  };
  std::vector<Point> points;
  for (const auto& o : outcomes) {
    const auto x = as_number(value_of(o.point, key));
    if (!x) return "";
    if (o.result && o.result->memory_fits) points.push_back({*x, &*o.result});
  }
  if (points.size() < 2) return "";
  std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  // The smallest x from which every later point satisfies `ok`; none when no point does
  // or every point does (no transition inside the sweep, so no knee to name).
  const auto from = [&](auto ok) -> std::optional<double> {
    std::optional<double> x;
    auto it = points.rbegin();
    for (; it != points.rend() && ok(*it->r); ++it) x = it->x;
    if (it == points.rend()) return std::nullopt;
    return x;
  };
  constexpr double kWithin = 0.05;  // the model's own error is larger: gains below it are not resolved
  double best = 0;
  for (const auto& p : points) best = std::max(best, p.r->tokens_per_s);
  std::string out;
  if (const auto x = from([&](const wl::Result& r) { return r.tokens_per_s >= (1 - kWithin) * best; }))
    out = fmt::format("knee: tokens/s within 5 % of the sweep's best from {} = {:g}", key, *x);
  bool bubble_varies = false;
  for (const auto& p : points) bubble_varies = bubble_varies || p.r->bubble_fraction != points.front().r->bubble_fraction;
  if (bubble_varies)
    if (const auto x = from([&](const wl::Result& r) { return r.bubble_fraction < kWithin; }))
      out += fmt::format("{}bubble below 5 % from {} = {:g}", out.empty() ? "knee: " : "; ", key, *x);
  return out;
}

PlotSpec sweep_plot(const std::string& title, const std::vector<SweepAxis>& axes, const std::vector<SweepOutcome>& outcomes) {
  std::vector<std::string> varying = varying_keys(sweep_keys(axes), outcomes);
  if (varying.empty() && !axes.empty()) varying.push_back(axes.back().key);
  PlotSpec spec;
  spec.title = title;
  std::string xl;
  for (const auto& k : varying) xl += (xl.empty() ? "" : ", ") + k;
  spec.x_label = xl;
  // One numeric key: place the points by value.
  bool numeric = varying.size() == 1 && !outcomes.empty();
  for (const auto& o : outcomes) {
    if (!numeric) break;
    const auto v = as_number(value_of(o.point, varying.front()));
    numeric = v.has_value();
    if (v) spec.x_values.push_back(*v);
  }
  if (!numeric) spec.x_values.clear();
  spec.x_log2 = numeric && wants_log2_axis(spec.x_values);
  PlotPanel t{"step time (s)", {{"step time", {}, "#1f77b4", false}}, false};
  PlotPanel tok{"tokens/s", {{"tokens/s", {}, "#2ca02c", false}}, false};
  PlotPanel b{"bubble fraction", {{"measured", {}, "#d62728", false}, {"analytic", {}, "#555555", true}}, true};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& o : outcomes) {
    std::string label;
    for (const auto& k : varying) {
      // Several keys: one "name=value" line each, the key's last path part as its name.
      const std::string v = value_of(o.point, k);
      const std::string name = k.substr(k.find_last_of('.') == std::string::npos ? 0 : k.find_last_of('.') + 1);
      label += (label.empty() ? "" : "\n") + (varying.size() > 1 ? name + "=" + v : v);
    }
    spec.x_ticks.push_back(label);
    t.series[0].y.push_back(o.result ? o.result->step_time_s : nan);
    tok.series[0].y.push_back(o.result ? o.result->tokens_per_s : nan);
    b.series[0].y.push_back(o.result ? o.result->bubble_fraction : nan);
    b.series[1].y.push_back(o.result ? o.result->bubble_fraction_analytic : nan);
  }
  spec.panels = {t, tok, b};
  return spec;
}

}  // namespace ls::tools
