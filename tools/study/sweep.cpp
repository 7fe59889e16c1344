// tools/study/sweep.cpp — sweep expansion, a small work-queue thread pool, CSV/JSON output.
#include "tools/study/sweep.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "sim/time.hpp"
#include "tools/report/csv.hpp"
#include "tools/study/parallel_for.hpp"
#include "tools/report/report_json.hpp"
#include "tools/scenario/scenario.hpp"
#include "workloads/resolve.hpp"

namespace ls::tools {

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}


// Shortest round-trip decimal: deterministic and lossless.
std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string(); }

nlohmann::ordered_json typed_value(const std::string& s) {
  if (s == "true") return true;
  if (s == "false") return false;
  std::int64_t i = 0;
  auto [pi, ei] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ei == std::errc() && pi == s.data() + s.size() && !s.empty()) return i;
  double d = 0;
  auto [pd, ed] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ed == std::errc() && pd == s.data() + s.size() && !s.empty() && std::isfinite(d)) return d;
  return s;
}

}  // namespace

SweepAxis parse_sweep_set(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) throw std::invalid_argument(fmt::format("--set '{}': expected KEY=V1,V2,...", text));
  SweepAxis axis;
  axis.key = trim(text.substr(0, eq));
  if (axis.key.empty()) throw std::invalid_argument(fmt::format("--set '{}': empty key", text));
  const std::string rest = text.substr(eq + 1);
  int depth = 0;
  std::string cur;
  auto flush = [&] {
    std::string v = trim(cur);
    if (v.empty()) throw std::invalid_argument(fmt::format("--set '{}': empty value in the list", text));
    axis.values.push_back(std::move(v));
    cur.clear();
  };
  for (char c : rest) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') depth = std::max(0, depth - 1);
    if (c == ',' && depth == 0) flush();
    else cur.push_back(c);
  }
  flush();
  return axis;
}

std::vector<SweepPoint> expand_sweep(const std::vector<SweepAxis>& axes) {
  std::vector<SweepPoint> points{SweepPoint{}};
  for (const auto& axis : axes) {
    std::vector<SweepPoint> next;
    next.reserve(points.size() * axis.values.size());
    for (const auto& p : points) {
      for (const auto& v : axis.values) {
        SweepPoint q = p;
        q.emplace_back(axis.key, v);
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  return points;
}

std::vector<SweepPoint> zip_sweep(const std::vector<SweepAxis>& axes) {
  std::size_t n = 1;
  const SweepAxis* longest = nullptr;
  for (const auto& axis : axes) {
    if (axis.values.size() <= 1) continue;
    if (longest && axis.values.size() != n)
      throw std::invalid_argument(fmt::format("--zip: {} has {} values but {} has {}; zipped lists must be equally long",
                                              longest->key, n, axis.key, axis.values.size()));
    n = axis.values.size();
    longest = &axis;
  }
  std::vector<SweepPoint> points(n);
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& axis : axes)
      if (!axis.values.empty()) points[i].emplace_back(axis.key, axis.values.size() == 1 ? axis.values.front() : axis.values[i]);
  return points;
}

std::vector<std::string> point_sets(const SweepPoint& p) {
  std::vector<std::string> sets;
  sets.reserve(p.size());
  for (const auto& [k, v] : p) sets.push_back(k + "=" + v);
  return sets;
}

std::vector<std::string> sweep_keys(const std::vector<SweepAxis>& axes) {
  std::vector<std::string> keys;
  for (const auto& a : axes) {
    if (std::find(keys.begin(), keys.end(), a.key) == keys.end()) keys.push_back(a.key);
  }
  return keys;
}

std::vector<SweepOutcome> run_sweep(const std::vector<SweepPoint>& points,
                                    const std::function<wl::Result(const SweepPoint&)>& fn, int jobs,
                                    const PointProgress& progress) {
  std::vector<SweepOutcome> out(points.size());
  if (points.empty()) return out;
  const int threads = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Results go to their own slot, so the output order is the input order whatever
  // finishes first.
  std::size_t done = 0;
  std::mutex mu;
  parallel_for(points.size(), threads, [&](std::size_t i, std::size_t) {
    SweepOutcome& o = out[i];
    o.point = points[i];
    o.index = i;
    try {
      o.result = fn(points[i]);
    } catch (const std::exception& e) {
      o.error = std::current_exception();
      o.error_message = e.what();
    } catch (...) {
      o.error = std::current_exception();
      o.error_message = "unknown exception";
    }
    std::lock_guard lock(mu);
    ++done;
    if (progress) progress(i, done, points.size());
  });
  return out;
}

SweepTrainingColumns sweep_training_columns(const std::vector<SweepOutcome>& outcomes) {
  SweepTrainingColumns c;
  for (const auto& o : outcomes)
    if (o.result) {
      c.tokens = c.tokens || o.result->training.has_tokens;
      c.cost = c.cost || (o.result->training.has_tokens && o.result->training.has_price);
    }
  return c;
}

std::string sweep_csv(const std::vector<std::string>& keys, const std::vector<SweepOutcome>& outcomes) {
  const auto [tokens, cost] = sweep_training_columns(outcomes);
  std::string out;
  for (const auto& k : keys) out += csv_cell(k) + ",";
  // The global batch each point ran (sweeping micro-batches or dp changes it).
  out += "global_batch,step_time_s,tokens_per_s,mfu,bubble_fraction,bubble_fraction_analytic,max_peak_bytes,fits";
  if (tokens) out += ",time_to_train_s,gpu_hours";
  if (cost) out += ",cost";
  out += ",error\n";
  for (const auto& o : outcomes) {
    for (const auto& k : keys) {
      // the last override of a key is the one that applied
      std::string v;
      for (const auto& [pk, pv] : o.point) {
        if (pk == k) v = pv;
      }
      out += csv_cell(v) + ",";
    }
    if (o.result) {
      const auto& r = *o.result;
      out += fmt::format("{},{},{},{},{},{},{},{}", r.setup.global_batch, csv_number(r.step_time_s), csv_number(r.tokens_per_s), csv_number(r.mfu),
                         csv_number(r.bubble_fraction), csv_number(r.bubble_fraction_analytic), csv_number(r.max_peak_bytes),
                         r.memory_fits ? "true" : "false");
      const auto& t = r.training;
      if (tokens) out += t.has_tokens ? fmt::format(",{},{}", csv_number(t.time_to_train_s), csv_number(t.gpu_hours)) : ",,";
      if (cost) out += t.has_tokens && t.has_price ? "," + csv_number(t.cost) : ",";
      out += ",\n";
    } else {
      out += ",,,,,,,error";
      if (tokens) out += ",,";
      if (cost) out += ",";
      out += "," + csv_cell(o.error_message.substr(0, o.error_message.find('\n'))) + "\n";
    }
  }
  return out;
}

nlohmann::ordered_json point_json(const SweepPoint& p) {
  nlohmann::ordered_json set = nlohmann::ordered_json::object();
  for (const auto& [k, v] : p) set[k] = typed_value(v);
  return set;
}

bool internal_error(const SweepOutcome& o) {
  if (!o.error) return false;
  try {
    std::rethrow_exception(o.error);
  } catch (const ScenarioError&) {
    return false;
  } catch (const wl::InvalidScenario&) {
    return false;
  } catch (const sim::TimeRangeError&) {
    return false;
  } catch (...) {
  }
  return true;
}

nlohmann::ordered_json sweep_json(const std::vector<SweepOutcome>& outcomes, bool shard_fields) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& o : outcomes) {
    nlohmann::ordered_json e;
    if (shard_fields) e["point"] = o.index;
    e["set"] = point_json(o.point);
    if (o.result) e["summary"] = o.summary.is_null() ? to_json(*o.result) : o.summary;
    else e["error"] = o.error_message;
    if (shard_fields && internal_error(o)) e["internal"] = true;
    arr.push_back(std::move(e));
  }
  return arr;
}

}  // namespace ls::tools
