// tools/report/progress.cpp — the progress line (see progress.hpp).
#include "tools/report/progress.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace ls::tools {

namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void write_stderr(std::string_view s) {
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
}

// "4.2 s", "37 s", "3 min 05 s", "2 h 07 min": short, and stable in width within a range.
std::string duration_text(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return "?";
  if (s < 10) return fmt::format("{:.1f} s", s);
  if (s < 60) return fmt::format("{:.0f} s", std::floor(s));
  const auto whole = static_cast<long long>(s);
  if (whole < 3600) return fmt::format("{} min {:02} s", whole / 60, whole % 60);
  return fmt::format("{} h {:02} min", whole / 3600, (whole % 3600) / 60);
}

std::string rate_text(double r) {
  if (r >= 100) return fmt::format("{:.0f}/s", r);
  if (r >= 10) return fmt::format("{:.1f}/s", r);
  return fmt::format("{:.2f}/s", r);
}

}  // namespace

bool progress_wanted(bool quiet) { return !quiet && ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(Options o) : opt_(std::move(o)) {
  if (!opt_.clock) opt_.clock = steady_seconds;
  if (!opt_.sink) opt_.sink = write_stderr;
  start_ = opt_.clock();
  if (opt_.enabled && opt_.heartbeat_s > 0) heartbeat_ = std::thread([this] { heartbeat_loop(); });
}

Progress::~Progress() {
  // No exception may leave a destructor (it also runs while another exception unwinds,
  // and would end the program): finish() can throw from the sink (an allocation, a
  // writer that throws) or from join (std::system_error). The line is best-effort, so
  // swallow it — but still stop and join the heartbeat thread, since destroying a
  // joinable std::thread calls std::terminate.
  try {
    finish();
  } catch (...) {
    try {
      {
        std::lock_guard lock(mu_);
        finished_ = true;
      }
      stop_cv_.notify_all();
      if (heartbeat_.joinable()) heartbeat_.join();
    } catch (...) {
      if (heartbeat_.joinable()) heartbeat_.detach();  // last resort: never terminate
    }
  }
}

std::string Progress::format_line(const std::string& label, const std::string& unit, std::size_t done, std::size_t total,
                                  double elapsed_s, double done_cost, double total_cost) {
  std::string s = label + ": ";
  if (total > 0) s += fmt::format("{}/{} {}", done, total, unit);
  else if (done > 0) s += fmt::format("{} {}", done, unit);
  const bool counted = total > 0 || done > 0;
  if (done > 0 && elapsed_s > 0) s += " · " + rate_text(static_cast<double>(done) / elapsed_s);
  s += fmt::format("{}{} elapsed", counted ? " · " : "", duration_text(elapsed_s));
  if (total > 0 && done > 0 && done < total && elapsed_s > 0) {
    const double left = total_cost > 0 && done_cost > 0 ? std::max(0.0, total_cost - done_cost) / done_cost
                                                        : static_cast<double>(total - done) / static_cast<double>(done);
    s += " · ETA " + duration_text(elapsed_s * left);
  }
  return s;
}

void Progress::draw_locked(bool force) {
  if (!opt_.enabled || finished_) return;
  const double now = opt_.clock();
  const double elapsed = now - start_;
  if (elapsed < opt_.delay_s) return;
  if (!force && now - last_draw_ < opt_.min_interval_s) return;
  last_draw_ = now;
  drawn_ = true;
  // \r: back to the line's start; ESC[K: clear what a longer previous line left.
  // Appended, not `"\r" + ...`: GCC 12 misreads that prepend as an overlapping copy (-Wrestrict).
  std::string line = "\r";
  line += format_line(opt_.label, opt_.unit, done_, opt_.total, elapsed, done_cost_, opt_.total_cost);
  line += "\x1b[K";
  opt_.sink(line);
}

void Progress::advance(std::size_t n) {
  std::lock_guard lock(mu_);
  done_ += n;
  draw_locked(opt_.total > 0 && done_ >= opt_.total);
}

void Progress::update(std::size_t done, std::size_t total) {
  std::lock_guard lock(mu_);
  done_ = done;
  opt_.total = total;
  draw_locked(total > 0 && done >= total);
}

void Progress::advance_cost(double cost) {
  std::lock_guard lock(mu_);
  ++done_;
  done_cost_ += cost;
  draw_locked(opt_.total > 0 && done_ >= opt_.total);
}

void Progress::stage(std::string label, std::string unit, std::size_t total, double total_cost) {
  std::lock_guard lock(mu_);
  opt_.label = std::move(label);
  opt_.unit = std::move(unit);
  opt_.total = total;
  opt_.total_cost = total_cost;
  done_ = 0;
  done_cost_ = 0;
  start_ = opt_.clock();
  last_draw_ = -1e300;
}

void Progress::tick() {
  std::lock_guard lock(mu_);
  draw_locked(false);
}

std::size_t Progress::done() const {
  std::lock_guard lock(mu_);
  return done_;
}

void Progress::finish() {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    if (drawn_) opt_.sink("\r\x1b[K");
  }
  stop_cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

void Progress::heartbeat_loop() {
  std::unique_lock lock(mu_);
  const auto period = std::chrono::duration<double>(opt_.heartbeat_s);
  while (!finished_) {
    stop_cv_.wait_for(lock, period, [this] { return finished_; });
    // An exception leaving a thread's function ends the program; a progress line is
    // not worth that (the sink may throw), so a failed draw is skipped.
    try {
      if (!finished_) draw_locked(false);
    } catch (...) {
    }
  }
}

}  // namespace ls::tools
