// tests/test_regressions.cpp — runs the regression corpus against the
// built command: every line of tests/fuzz/regressions.txt (allowed exit codes, then
// arguments), and every file of tests/fuzz/corpus/ (including the fuzzer's finds)
// with `run -q`. Whatever the input, the command must answer within 60 s with one of
// the allowed codes — never 3 (internal error), never a signal, never a hang.
#include <doctest/doctest.h>

#include "run_binary.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef LAYOUTSIM_BIN
#error "LAYOUTSIM_BIN must be defined (path of the layoutsim executable)"
#endif

namespace fs = std::filesystem;

namespace {

constexpr int kTimeoutSeconds = 60;

std::string substitute(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

struct Outcome {
  int rc = -1;
  std::string err;
};

// Runs `timeout 60 layoutsim ARGS`; our redirections come first so that ARGS's own
// (">/dev/full") win.
Outcome run_args(const std::string& args) {
  const std::string err_path = ls::test::tmp("regression_err.txt");
  const std::string cmd = "timeout -s KILL " + std::to_string(kTimeoutSeconds) + " '" LAYOUTSIM_BIN "' >/dev/null 2>'" + err_path +
                          "' " + args;
  const int st = std::system(cmd.c_str());
  Outcome o;
  o.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  o.err = ls::test::slurp(err_path);
  return o;
}

std::set<int> parse_codes(const std::string& s) {
  std::set<int> codes;
  std::stringstream ss(s);
  for (std::string c; std::getline(ss, c, ',');) codes.insert(std::stoi(c));
  return codes;
}

void expect(const std::string& args, const std::set<int>& allowed) {
  const Outcome o = run_args(args);
  INFO("layoutsim " << args << "\nstderr: " << o.err.substr(0, 600));
  CHECK(o.rc != 3);
  CHECK(o.rc < 128);  // 137 = killed by the 60 s timeout, others a crash
  CHECK(allowed.count(o.rc) == 1);
}

}  // namespace

TEST_CASE("every reproducer of the regression list gives its expected exit code") {
  std::ifstream list(REGRESSIONS_FILE);
  REQUIRE(list);
  const std::string scratch = ls::test::tmp("regression_dir");
  fs::create_directories(scratch);
  int lines = 0;
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    REQUIRE(sp != std::string::npos);
    std::string args = line.substr(line.find_first_not_of(' ', sp));
    args = substitute(args, "@CORPUS@", CORPUS_DIR);
    args = substitute(args, "@SCENARIOS@", SCENARIOS_DIR);
    args = substitute(args, "@TMP@", scratch);
    expect(args, parse_codes(line.substr(0, sp)));
    ++lines;
  }
  CHECK(lines >= 30);
}

TEST_CASE("every corpus file checks and runs, or is rejected cleanly (never exit 3)") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(CORPUS_DIR))
    if (e.is_regular_file()) files.push_back(e.path());
  REQUIRE(!files.empty());
  for (const auto& f : files) {
    expect("check '" + f.string() + "'", {0, 1});
    expect("run -q '" + f.string() + "'", {0, 1});
  }
}
