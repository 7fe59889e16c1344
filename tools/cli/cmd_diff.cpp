// tools/cli/cmd_diff.cpp — `layoutsim diff`: two run summaries (run --json) side by
// side, with the change in percent (tools/study/diff.hpp).
#include <memory>

#include <fmt/format.h>

#include "tools/api/layoutsim.hpp"
#include "tools/cli/command.hpp"
#include "tools/report/atomic_file.hpp"
#include "tools/study/diff.hpp"

namespace ls::cli {

namespace {

struct DiffArgs {
  std::string a, b, json;
};

nlohmann::json read_summary_file(const std::string& p) {
  try {
    return api::read_summary(tools::read_input(p, tools::kMaxSummaryBytes), p);
  } catch (const tools::DiffInputError&) {
    throw;
  } catch (const std::exception& e) {
    throw tools::DiffInputError(fmt::format("{}: error: {}", p, e.what()));
  }
}

int run(const DiffArgs& a) {
  check_outputs({{"--json", &a.json}}, {{"first summary", &a.a}, {"second summary", &a.b}});
  const api::DiffReport rep = api::diff(read_summary_file(a.a), a.a, read_summary_file(a.b), a.b);
  if (!a.json.empty()) write_out(a.json, api::diff_json(rep).dump(2) + "\n");
  if (a.json != "-") print_out(api::diff_text(rep));
  return kExitOk;
}

}  // namespace

Subcommand add_diff(CLI::App& parent) {
  auto a = std::make_shared<DiffArgs>();
  auto* cmd = parent.add_subcommand("diff", "Compare two run summaries (run --json) side by side, with the change in percent");
  cmd->add_option("a", a->a, "First summary JSON (A)")->required()->check(non_empty_path());
  cmd->add_option("b", a->b, "Second summary JSON (B)")->required()->check(non_empty_path());
  cmd->add_option("--json", a->json, "Write {a, b, rows: [{section, label, path, unit, a, b, change}]} ('-' = stdout, replaces the table)")
      ->type_name("FILE")
      ->check(non_empty_path());
  return {cmd, [a] { return run(*a); }};
}

}  // namespace ls::cli
