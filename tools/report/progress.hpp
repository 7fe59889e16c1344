// tools/report/progress.hpp — one self-updating progress line on stderr for long work
// (`sweep`, `search`, `validate`, `calibrate`, and a `run` that lasts more than a
// couple of seconds): "sweep: 12/40 points · 3.1/s · 4 s elapsed · ETA 9 s".
//
// The line is drawn only when stderr is a terminal and the user did not ask for
// --quiet (progress_wanted); it never goes to stdout nor into any file, so the
// outputs stay byte-identical whether it is drawn or not. Each redraw starts with a
// carriage return and ends by clearing the rest of the line; finish() erases the
// line, so later messages on stderr start on a clean line.
//
// Thread safety: advance(), tick() and finish() may be called from any thread (the
// sweep and search workers call advance() as points complete); one mutex serialises
// the count and the writes. The clock and the sink are injectable so tests can drive
// the class without a terminal or real time.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace ls::tools {

/// True when a progress line should be drawn: not quiet, and stderr is a terminal.
bool progress_wanted(bool quiet);

class Progress {
public:
  using Clock = std::function<double()>;               // monotonic seconds
  using Sink = std::function<void(std::string_view)>;  // where the line goes

  struct Options {
    std::string label{};        // "sweep"
    std::string unit{};         // "points" (after done/total)
    std::size_t total = 0;      // 0: unknown (no ETA, no "/total")
    /// > 0: the ETA weighs items by their cost (advance_cost): elapsed × cost left /
    /// cost done, instead of by their count (items that differ 100× in cost).
    double total_cost = 0;
    bool enabled = true;        // false: every call is a no-op
    double min_interval_s = 0.1;  // at most one redraw per interval (the last one always shows)
    double delay_s = 0;         // draw nothing before this much time has passed
    double heartbeat_s = 0;     // > 0: a background thread redraws this often (elapsed time moves without advance())
    Clock clock{};              // default: std::chrono::steady_clock
    Sink sink{};                // default: stderr, flushed
  };

  explicit Progress(Options o);
  ~Progress();  // finish()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// n more items done; redraws when the interval has passed or the work is complete.
  void advance(std::size_t n = 1);
  /// Sets done/total (for callbacks that report both).
  void update(std::size_t done, std::size_t total);
  /// One more item done, of `cost` (units of Options::total_cost).
  void advance_cost(double cost);
  /// A new stage on the same line: label, unit, total and cost restart, and so do the
  /// clock and the counts, so that one stage's rate does not price the next.
  void stage(std::string label, std::string unit, std::size_t total, double total_cost = 0);
  /// Redraws if the interval has passed (heartbeat).
  void tick();
  /// Erases the line if one was drawn; later calls are no-ops. Idempotent.
  void finish();

  std::size_t done() const;

  /// The text of one line (no control characters): "LABEL: DONE/TOTAL UNIT · RATE/s ·
  /// ELAPSED elapsed · ETA T"; without a total: "LABEL: DONE UNIT · RATE/s · ELAPSED elapsed";
  /// with nothing done and no total: "LABEL: ELAPSED elapsed".
  /// With total_cost > 0 the ETA is elapsed × (total_cost − done_cost) / done_cost.
  static std::string format_line(const std::string& label, const std::string& unit, std::size_t done, std::size_t total,
                                 double elapsed_s, double done_cost = 0, double total_cost = 0);

private:
  void draw_locked(bool force);
  void heartbeat_loop();

  Options opt_;
  double start_ = 0, last_draw_ = -1e300;
  std::size_t done_ = 0;
  double done_cost_ = 0;
  bool drawn_ = false, finished_ = false;
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  std::thread heartbeat_;
};

}  // namespace ls::tools
