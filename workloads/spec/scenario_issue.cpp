// workloads/spec/scenario_issue.cpp — see scenario_issue.hpp.
#include "workloads/spec/scenario_issue.hpp"

#include <fmt/format.h>

namespace ls::wl {

std::string issues_text(const std::vector<ScenarioIssue>& issues, std::string_view prefix) {
  std::string all;
  for (const auto& i : issues) {
    if (!all.empty()) all += '\n';
    all += prefix;
    all += i.key_path.empty() ? i.message : fmt::format("{}: {}", i.key_path, i.message);
    if (!i.hint.empty()) all += fmt::format(" ({})", i.hint);
  }
  return all;
}

InvalidScenario::InvalidScenario(std::vector<ScenarioIssue> issues)
    : UserError(issues_text(issues)), issues_(std::move(issues)) {}

std::string InvalidScenario::message() const { return issues_text(issues_, "error: "); }

}  // namespace ls::wl
