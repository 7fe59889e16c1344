// tools/study/sweep_shard.cpp — see sweep_shard.hpp.
#include "tools/study/sweep_shard.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "tools/scenario/scenario.hpp"
#include "tools/report/atomic_file.hpp"
#include "tools/report/output_check.hpp"

namespace ls::tools {

using nlohmann::ordered_json;

namespace {

// A summary number: JSON writes a non-finite one as null.
double number_at(const ordered_json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}

const ordered_json& object_at(const ordered_json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_object()) throw std::invalid_argument(fmt::format("{}: the summary has no \"{}\" object", where, key));
  return *it;
}

/// The fields of a Result that sweep_csv, format_sweep_table, select_points and
/// sweep_plot read, from its JSON summary (tools/report/report_json.cpp writes them).
wl::Result result_from_summary(const ordered_json& s, const std::string& where) {
  if (!s.is_object()) throw std::invalid_argument(fmt::format("{}: \"summary\" is not an object", where));
  wl::Result r;
  if (const auto it = s.find("scenario"); it != s.end() && it->is_string()) r.scenario = it->get<std::string>();
  r.step_time_s = number_at(s, "step_time_s");
  r.setup.global_batch = static_cast<std::int64_t>(number_at(object_at(s, "scenario_resolved", where), "global_batch"));
  r.tokens_per_s = number_at(s, "tokens_per_s");
  r.mfu = number_at(s, "mfu");
  const ordered_json& pipe = object_at(s, "pipeline", where);
  r.bubble_fraction = number_at(pipe, "bubble_fraction");
  r.bubble_fraction_analytic = number_at(pipe, "bubble_fraction_analytic");
  const ordered_json& mem = object_at(s, "memory", where);
  const auto fits = mem.find("fits");
  if (fits == mem.end() || !fits->is_boolean()) throw std::invalid_argument(fmt::format("{}: the summary has no memory.fits", where));
  r.memory_fits = fits->get<bool>();
  r.max_peak_bytes = number_at(mem, "max_peak_bytes");
  // add_training_json (training_report.cpp): time_to_train_s and gpu_hours with
  // training.tokens, cost with a price too; the `training` object holds the inputs.
  auto& t = r.training;
  t.has_tokens = s.contains("time_to_train_s");
  if (t.has_tokens) {
    t.time_to_train_s = number_at(s, "time_to_train_s");
    t.time_to_train_ideal_s = number_at(s, "time_to_train_ideal_s");
    // null: written for an infinite time, which only a goodput of 0 gives.
    if (std::isnan(t.time_to_train_s)) t.time_to_train_s = std::numeric_limits<double>::infinity();
    t.goodput = t.time_to_train_s > 0 ? t.time_to_train_ideal_s / t.time_to_train_s : 1;
    t.gpu_hours = number_at(s, "gpu_hours");
  }
  if (const auto tr = s.find("training"); tr != s.end() && tr->is_object()) {
    if (tr->contains("tokens")) t.tokens = number_at(*tr, "tokens");
    t.has_price = tr->contains("gpu_hour_price");
    if (t.has_price) {
      t.gpu_hour_price = number_at(*tr, "gpu_hour_price");
      if (const auto c = tr->find("currency"); c != tr->end() && c->is_string()) t.currency = c->get<std::string>();
      t.cost_per_million_tokens = number_at(*tr, "cost_per_million_tokens");
    }
  }
  if (t.has_tokens && t.has_price) t.cost = number_at(s, "cost");
  return r;
}

}  // namespace

std::vector<std::size_t> shard_points(std::size_t n, int index, int count) {
  std::vector<std::size_t> out;
  for (std::size_t i = static_cast<std::size_t>(index); i < n; i += static_cast<std::size_t>(count)) out.push_back(i);
  return out;
}

SweepOutcome outcome_from_entry(const ordered_json& entry, const SweepPoint& point, std::size_t index, const std::string& where) {
  SweepOutcome o;
  o.point = point;
  o.index = index;
  if (const auto s = entry.find("summary"); s != entry.end()) {
    try {
      check_summary_numbers(*s);  // what `run` checks before writing one: no edited or broken shard ranks first
    } catch (const OutputInvariantError& e) {
      throw std::invalid_argument(fmt::format("{}: {}, which no layoutsim summary holds", where, e.what()));
    }
    o.result = result_from_summary(*s, where);
    o.summary = *s;
    return o;
  }
  const auto e = entry.find("error");
  if (e == entry.end() || !e->is_string()) throw std::invalid_argument(fmt::format("{}: an entry with neither \"summary\" nor \"error\"", where));
  o.error_message = e->get<std::string>();
  // The class decides the exit status and the "internal error: " prefix (tools/cli/cmd_sweep.cpp).
  const auto internal = entry.find("internal");
  if (internal != entry.end() && internal->is_boolean() && internal->get<bool>())
    o.error = std::make_exception_ptr(std::runtime_error(o.error_message));
  else
    o.error = std::make_exception_ptr(ScenarioError(o.error_message));
  return o;
}

std::vector<SweepOutcome> run_points(const std::vector<SweepPoint>& points, const std::vector<std::size_t>& which,
                                     const std::function<wl::Result(const SweepPoint&)>& fn, int jobs, SearchExchange* exchange,
                                     const PointProgress& progress) {
  const std::size_t size = exchange ? static_cast<std::size_t>(std::max(1, exchange->size())) : 1;
  const std::size_t me = exchange ? static_cast<std::size_t>(exchange->rank()) : 0;
  std::vector<SweepPoint> own;  // positions me, me + size, ... of `which`
  for (std::size_t k = me; k < which.size(); k += size) own.push_back(points[which[k]]);
  std::vector<SweepOutcome> mine = run_sweep(own, fn, jobs, progress);
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i].index = which[me + i * size];
  if (size == 1) return mine;

  const std::vector<std::string> blobs = exchange->all_gather(sweep_json(mine, true).dump(-1, ' ', false, ordered_json::error_handler_t::replace));
  std::vector<SweepOutcome> out(which.size());
  for (std::size_t r = 0; r < blobs.size(); ++r) {
    if (r == me) {
      for (std::size_t i = 0; i < mine.size(); ++i) out[me + i * size] = std::move(mine[i]);
      continue;
    }
    const ordered_json arr = ordered_json::parse(blobs[r]);
    std::size_t i = 0;
    for (std::size_t k = r; k < which.size(); k += size, ++i)
      out[k] = outcome_from_entry(arr.at(i), points[which[k]], which[k], fmt::format("sweep exchange (rank {})", r));
  }
  return out;
}

std::vector<SweepOutcome> merge_shard_files(const std::vector<SweepPoint>& points, const std::vector<std::string>& files) {
  std::vector<std::optional<SweepOutcome>> got(points.size());
  std::vector<std::string> from(points.size());
  for (const auto& file : files) {
    ordered_json arr;
    try {
      arr = ordered_json::parse(read_input(file, kMaxShardFileBytes));
    } catch (const ordered_json::exception& e) {  // a syntax error, or a number past a double's range
      throw std::invalid_argument(fmt::format("--merge {}: not JSON ({})", file, e.what()));
    }
    if (!arr.is_array()) throw std::invalid_argument(fmt::format("--merge {}: not a sweep's --json (an array)", file));
    for (std::size_t n = 0; n < arr.size(); ++n) {
      const auto& e = arr[n];
      const std::string where = fmt::format("--merge {}: entry {}", file, n);
      if (!e.is_object() || !e.contains("point") || !e["point"].is_number_unsigned())
        throw std::invalid_argument(fmt::format("{}: no \"point\" index; merge reads the --json files of runs with --shard I/N", where));
      const auto i = e["point"].get<std::size_t>();
      if (i >= points.size())
        throw std::invalid_argument(fmt::format("{}: point {} is past the sweep's {} points; give --merge the lists the shards ran", where, i, points.size()));
      if (!e.contains("set") || e["set"] != point_json(points[i]))
        throw std::invalid_argument(fmt::format("{}: point {} is {} but this sweep's point {} is {}; give --merge the lists the shards ran", where, i,
                                                e.contains("set") ? e["set"].dump() : "?", i, point_json(points[i]).dump()));
      if (got[i]) throw std::invalid_argument(fmt::format("{}: point {} again (also in {})", where, i, from[i]));
      got[i] = outcome_from_entry(e, points[i], i, where);
      from[i] = file;
    }
  }
  std::vector<std::size_t> missing;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!got[i]) missing.push_back(i);
  if (!missing.empty())
    throw std::invalid_argument(fmt::format("--merge: {} of {} points are in no file (first: point {}); give every shard's file, "
                                            "written without --top or --fits-only", missing.size(), points.size(), missing.front()));
  std::vector<SweepOutcome> out;
  out.reserve(got.size());
  for (auto& g : got) out.push_back(std::move(*g));
  return out;
}

}  // namespace ls::tools
