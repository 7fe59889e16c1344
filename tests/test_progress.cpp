// tests/test_progress.cpp — the progress line (tools/report/progress.hpp): its text, its
// rate limit and erase, driven with an injected clock and sink; thread safety under
// concurrent advance(); and, end to end, that `layoutsim sweep` draws it on a
// pseudo-terminal and never when stderr is a file or with --quiet.
#include <doctest/doctest.h>

#include "run_binary.hpp"

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <string>
#include <thread>
#include <vector>

#include "tools/report/progress.hpp"

#ifndef LAYOUTSIM_BIN
#error "LAYOUTSIM_BIN must be defined (path of the layoutsim executable)"
#endif

using ls::tools::Progress;

namespace {

struct Fake {
  double now = 0;
  std::string written;
  Progress::Options options(std::size_t total) {
    Progress::Options o;
    o.label = "sweep";
    o.unit = "points";
    o.total = total;
    o.clock = [this] { return now; };
    o.sink = [this](std::string_view s) { written += s; };
    return o;
  }
};

}  // namespace

TEST_CASE("format_line: done/total, rate, elapsed and ETA") {
  // 10 of 40 in 5 s: 2/s, the 30 left take 15 s.
  CHECK(Progress::format_line("sweep", "points", 10, 40, 5.0) == "sweep: 10/40 points · 2.00/s · 5.0 s elapsed · ETA 15 s");
  // Unknown total: no ETA.
  CHECK(Progress::format_line("calibrate", "simulations", 120, 0, 60.0) == "calibrate: 120 simulations · 2.00/s · 1 min 00 s elapsed");
  // Nothing counted (a long run): elapsed only.
  CHECK(Progress::format_line("run x", "", 0, 0, 3.25) == "run x: 3.2 s elapsed");
  // Done: no ETA.
  CHECK(Progress::format_line("sweep", "points", 4, 4, 2.0) == "sweep: 4/4 points · 2.00/s · 2.0 s elapsed");
}

/// The seconds the ETA on a drawn line says ("ETA 15 s", "ETA 1 min 05 s"); -1 without one.
double eta_seconds(const std::string& line) {
  const auto at = line.rfind("ETA ");
  if (at == std::string::npos) return -1;
  const std::string t = line.substr(at + 4);
  double s = 0;
  if (const auto m = t.find(" min"); m != std::string::npos) {
    s = 60 * std::stod(t.substr(0, m));
    if (const auto r = t.find_first_of("0123456789", m); r != std::string::npos) s += std::stod(t.substr(r));
  } else {
    s = std::stod(t);
  }
  return s;
}

TEST_CASE("Progress: a cost-weighted ETA stays within 2x of the truth on uneven items; a count ETA does not") {
  // 40 items, one in eight 50x dearer than the rest, processed in order at 1 s per cost
  // unit (a validate where a few runs are 16k-GPU rows). After each item the line's ETA is
  // compared with the time the rest really take, from the first dear item on (before
  // one has been seen no estimate can know of them).
  std::vector<double> cost(40, 1.0);
  for (std::size_t i = 3; i < cost.size(); i += 8) cost[i] = 50.0;
  double total = 0;
  for (double c : cost) total += c;
  for (const bool weighted : {true, false}) {
    CAPTURE(weighted);
    Fake f;
    auto o = f.options(cost.size());
    o.min_interval_s = 0;
    if (weighted) o.total_cost = total;
    Progress p(o);
    double left = total, worst = 1;
    for (std::size_t i = 0; i + 1 < cost.size(); ++i) {
      f.now += cost[i];
      left -= cost[i];
      f.written.clear();
      if (weighted) p.advance_cost(cost[i]);
      else p.advance();
      const double eta = eta_seconds(f.written);
      REQUIRE(eta > 0);
      if (i >= 3) worst = std::max(worst, std::max(eta / left, left / eta));
    }
    if (weighted) CHECK(worst <= 2.0);
    else CHECK(worst > 2.0);  // what the count-based line showed validate's users
  }
  // The cost-weighted formula itself: 10 of 100 cost units in 5 s leave 45 s.
  CHECK(Progress::format_line("validate", "runs", 2, 9, 5.0, 10, 100) == "validate: 2/9 runs · 0.40/s · 5.0 s elapsed · ETA 45 s");
}

TEST_CASE("Progress: a new stage restarts the clock and the counts on the same line") {
  Fake f;
  auto o = f.options(1000);
  o.label = "search: analytic";
  o.unit = "candidates";
  o.min_interval_s = 0;
  Progress p(o);
  f.now = 24;  // a 24 s analytic stage
  p.update(1000, 1000);
  p.stage("search: simulating", "candidates", 64);
  f.now = 25;
  f.written.clear();
  p.update(8, 64);
  // 8 in the stage's 1 s: the 56 left take 7 s, not the 24 s × 7 the command's clock would say.
  CHECK(f.written.find("search: simulating: 8/64 candidates") != std::string::npos);
  CHECK(eta_seconds(f.written) == doctest::Approx(7.0));
}

TEST_CASE("Progress: redraws at most once per interval, always at the end, and erases itself") {
  Fake f;
  auto o = f.options(3);
  o.min_interval_s = 1.0;
  Progress p(o);
  f.now = 0.5;
  p.advance();  // first draw
  CHECK(f.written == "\rsweep: 1/3 points · 2.00/s · 0.5 s elapsed · ETA 1.0 s\x1b[K");
  f.now = 0.9;
  p.advance();  // inside the interval: nothing
  CHECK(f.written.find("2/3") == std::string::npos);
  f.now = 1.0;
  p.advance();  // complete: drawn whatever the interval
  CHECK(f.written.find("3/3 points") != std::string::npos);
  p.finish();
  CHECK(f.written.size() >= 4);
  CHECK(f.written.substr(f.written.size() - 4) == "\r\x1b[K");
  const std::size_t size = f.written.size();
  p.finish();  // idempotent
  p.advance();
  CHECK(f.written.size() == size);
}

TEST_CASE("Progress: disabled or before its delay, it writes nothing") {
  Fake f;
  auto o = f.options(2);
  o.enabled = false;
  {
    Progress p(o);
    p.advance(2);
  }
  CHECK(f.written.empty());
  auto d = f.options(0);
  d.delay_s = 2;
  {
    Progress p(d);
    f.now = 1;
    p.tick();
    CHECK(f.written.empty());
  }
  CHECK(f.written.empty());  // nothing drawn, nothing to erase
}

TEST_CASE("Progress: concurrent advance() counts every item") {
  Fake f;
  auto o = f.options(8000);
  o.min_interval_s = 0;
  Progress p(o);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) p.advance();
    });
  for (auto& t : threads) t.join();
  CHECK(p.done() == 8000);
  CHECK(f.written.find("8000/8000 points") != std::string::npos);
}

namespace {

const char* kSmall = R"(name: progress-small
cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 4}
model: {preset: llama3-8b, layers: 8}
layout: {tp: 2, pp: 4, dp: 1, microbatches: 4}
)";

/// Runs `layoutsim ARGS...` with stderr on a pseudo-terminal and stdout in `out_path`;
/// returns what the terminal received.
std::string run_on_pty(const std::vector<std::string>& args, const std::string& out_path, int& rc) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::dup2(fd, STDOUT_FILENO) < 0) ::_exit(126);
    std::vector<char*> argv;
    std::string bin = LAYOUTSIM_BIN;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  std::string got;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child has exited
    got.append(buf, static_cast<std::size_t>(n));
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::close(master);
  rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return got;
}

}  // namespace

TEST_CASE("layoutsim sweep: a progress line on a terminal, none in a file, none with --quiet; stdout unchanged") {
  const std::string scenario = ls::test::tmp("progress-small.yaml");
  {
    std::FILE* f = std::fopen(scenario.c_str(), "w");
    REQUIRE(f);
    std::fputs(kSmall, f);
    std::fclose(f);
  }
  int rc = -1;
  const std::string out_tty = ls::test::tmp("progress-out-tty.txt");
  const std::string term = run_on_pty({"sweep", scenario, "--microbatches", "4,8", "--jobs", "1"}, out_tty, rc);
  CHECK(rc == 0);
  CHECK(term.find("sweep: 2/2 points") != std::string::npos);
  CHECK(term.find('\r') != std::string::npos);
  const std::string out_quiet = ls::test::tmp("progress-out-quiet.txt");
  const std::string quiet = run_on_pty({"sweep", scenario, "--microbatches", "4,8", "--jobs", "1", "--quiet"}, out_quiet, rc);
  CHECK(rc == 0);
  CHECK(quiet.find("points") == std::string::npos);
  // stderr to a file: no progress, and stdout is the same table as on the terminal.
  const auto r = ls::test::run_layoutsim("sweep '" + scenario + "' --microbatches 4,8 --jobs 1");
  CHECK(r.rc == 0);
  CHECK(r.err.find("points") == std::string::npos);
  CHECK(r.err.find('\r') == std::string::npos);
  CHECK(r.out == ls::test::slurp(out_tty));
  CHECK(r.out == ls::test::slurp(out_quiet));
}
