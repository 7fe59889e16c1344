// sim/error.hpp — the two kinds of failure every layer reports, so that a caller (the
// command, the Python binding, a program on the C++ API) needs one catch for each:
//
//   UserError      the input asks for something wrong or impossible: an invalid
//                  scenario, a file that cannot be read or written, a bad option.
//                  The command exits 1 (UsageError: 2). Carries, where known, the
//                  location, the key path, what was expected and a hint.
//   InternalError  a broken precondition or post-condition inside layoutsim: a bug.
//                  The command exits 3 and says "internal error".
//
// Anything else that escapes (std::bad_alloc, a std::logic_error from a library) is
// treated as internal too. The concrete types (scenario, I/O, time-range, runs-file
// errors) derive from these and decide only how their message reads.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace ls {

/// Where and what, for a located error message; every field may be empty.
struct ErrorDetail {
  std::string location;  // "FILE:LINE:COL", or a flag such as "--set"
  std::string key_path;  // the input's dotted key, e.g. "a.b"
  std::string expected;  // "an integer >= 1"
  std::string hint;      // "did you mean ..."
};

class UserError : public std::runtime_error {
public:
  explicit UserError(const std::string& what, ErrorDetail detail = {})
      : std::runtime_error(what), detail_(std::move(detail)) {}
  const ErrorDetail& detail() const { return detail_; }
  /// The text for stderr (one or more lines, no trailing newline). By default
  /// "error: WHAT"; messages already in compiler style (FILE:LINE:COL: error: ...)
  /// return themselves.
  virtual std::string message() const { return "error: " + std::string(what()); }

private:
  ErrorDetail detail_;
};

/// A command line that cannot be run as given (two outputs on stdout, a malformed
/// list, an unknown device name): the command exits 2 and points at --help.
class UsageError : public UserError {
public:
  using UserError::UserError;
  std::string message() const override {
    return "error: " + std::string(what()) + "\nRun with --help for more information.";
  }
};

class InternalError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

}  // namespace ls
