// tests/run_binary.hpp — runs the built `layoutsim` binary (path from the compile
// definition LAYOUTSIM_BIN) with stdout and stderr captured in a per-process scratch
// directory; shared by the end-to-end tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ls::test {

namespace fs = std::filesystem;

/// One scratch directory per test process, removed at exit.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("layoutsim_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

inline Scratch& scratch() {
  static Scratch s;
  return s;
}

inline std::string tmp(const std::string& name) { return (scratch().dir / name).string(); }

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Run {
  int rc = -1;  // exit status, or 128 + signal if the process crashed
  std::string out, err;
};

/// Runs `layoutsim ARGS` (ARGS is passed to the shell as written).
inline Run run_layoutsim(const std::string& args) {
  static int n = 0;
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "lit" + to_string().
  std::string id = std::to_string(n++);
  std::string oname = "out", ename = "err";
  oname += id;
  oname += ".txt";
  ename += id;
  ename += ".txt";
  const std::string o = tmp(oname), e = tmp(ename);
  std::string cmd = "'";
  cmd += LAYOUTSIM_BIN;
  cmd += "' ";
  cmd += args;
  cmd += " >'" + o + "' 2>'" + e + "'";
  const int st = std::system(cmd.c_str());
  Run r;
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

}  // namespace ls::test
