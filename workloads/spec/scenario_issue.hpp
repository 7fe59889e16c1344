// workloads/spec/scenario_issue.hpp — a broken rule of a scenario, located by its key, and
// the user error that carries them. Every check that judges a scenario (resolve() and
// the hardware, training and layout rules it calls) reports in this one form, so the
// loader can point each issue at its file:line:column.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/error.hpp"

namespace ls::wl {

/// One problem with a scenario.
struct ScenarioIssue {
  std::string key_path;  // the key to blame, e.g. "layout.tp" or "perturbations.links[2].link"
  std::string message;   // the rule and the numbers
  std::string hint;      // optional: how to fix it
  /// Where a file-aware caller should point when it is not key_path itself (e.g.
  /// "cluster" for a bandwidth derived from the GPU); empty: key_path.
  std::string blame_path;
  bool at_value = false;  // point at the value rather than the key
};

/// A scenario that breaks rules. what(): one "KEY: message (hint)" line per issue;
/// message(): the same lines as "error: KEY: message (hint)".
class InvalidScenario : public UserError {
public:
  explicit InvalidScenario(std::vector<ScenarioIssue> issues);
  const std::vector<ScenarioIssue>& issues() const { return issues_; }
  std::string message() const override;
private:
  std::vector<ScenarioIssue> issues_;
};

/// One "PREFIXKEY: message (hint)" line per issue.
std::string issues_text(const std::vector<ScenarioIssue>& issues, std::string_view prefix = "");

}  // namespace ls::wl
