// tools/study/sweep_report.hpp — what `layoutsim sweep` shows after the points ran: the
// points chosen by --fits-only / --sort / --top, the table on stdout (an invalid
// point is a row with its reason), the SVG plot's spec, and error messages that name
// the `--set` they came from.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tools/report/plot.hpp"
#include "tools/study/sweep.hpp"

namespace ls::tools {

struct SweepSelection {
  std::string sort_key;   // "" = sweep order
  bool fits_only = false; // drop points that do not fit in memory (and invalid ones)
  int top = 0;            // > 0: keep the first N after sorting
};

/// The --sort keys: step_time, tokens_per_s, mfu, bubble, peak_memory, time_to_train,
/// gpu_hours, cost (best first: ascending, except tokens_per_s and mfu); any swept
/// key (ascending, numerically when the values are numbers) is accepted too.
std::vector<std::string> sweep_sort_keys();

/// Throws std::invalid_argument (a usage error) unless `key` is a --sort key or one of
/// the swept `keys`.
void check_sort_key(const std::string& key, const std::vector<std::string>& keys);

/// The outcomes chosen by `sel`, in their new order. Sorting is stable (ties keep the
/// sweep order) and invalid points sort last.
std::vector<SweepOutcome> select_points(const std::vector<SweepOutcome>& outcomes, const SweepSelection& sel);

/// The first error of a failed point, without its location ("layout.tp: tp (3) must
/// divide heads (64) (...)"): what the table shows.
std::string error_reason(const std::string& message);

/// Rewrites the loader's "--set:N:COL: " locations in `message` as "--set KEY=VALUE: ",
/// N being the 1-based index into `sets` (a sweep point's overrides), so an error
/// names the value that caused it.
std::string name_set_locations(const std::string& message, const std::vector<std::string>& sets);

/// The stdout table: the swept keys, step time, tokens/s, MFU, bubble (measured and
/// analytic), peak memory, fits, and time to train / cost when the scenario has a
/// `training` key; an invalid point's row says "invalid: REASON".
std::string format_sweep_table(const std::vector<std::string>& keys, const std::vector<SweepOutcome>& outcomes);

/// Where a one-key numeric sweep stops paying: the smallest value of the key from which
/// tokens/s stays within 5 % of the sweep's best fitting point, and, when the bubble varies,
/// the smallest value from which the measured bubble stays below 5 % ("knee: tokens/s within
/// 5 % of the best from layout.microbatches = 32; bubble below 5 % from 32"). Points are
/// ordered by the key's value whatever the table's order; points that failed or do not fit
/// are skipped; a clause that holds at every point (no transition inside the sweep) is left
/// out. "" when more or fewer than one key varies, a value is not a number, or no clause
/// remains. O(points log points).
std::string sweep_knee(const std::vector<std::string>& keys, const std::vector<SweepOutcome>& outcomes);

/// The plot: step time, tokens/s and bubble panels over the points (sweep order);
/// title `title`; x numeric (log 2 when the values span ≥ 8×) when one numeric key
/// varies, else categorical with one line per varying key in each label.
PlotSpec sweep_plot(const std::string& title, const std::vector<SweepAxis>& axes, const std::vector<SweepOutcome>& outcomes);

}  // namespace ls::tools
