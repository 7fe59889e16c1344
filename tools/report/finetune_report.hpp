// tools/report/finetune_report.hpp — the fine-tuning and checkpoint parts of the summary
// table and of the JSON summary (workloads/cost/training_method.hpp, checkpoint.hpp), kept
// apart from summary.cpp and report_json.cpp so those stay about the step.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "workloads/build/result.hpp"

namespace ls::tools {

/// "Parameters (lora): 175.6 M trained, 70.55 G frozen" when anything is frozen or the
/// method is not pretrain, then the checkpoint section when the scenario has one.
void append_finetune_summary(std::string& out, const wl::Result& r);
/// The same parameters line for `layoutsim check`.
void append_plan_parameters(std::string& out, const wl::Scenario& s);

/// memory.trained_parameters / frozen_parameters / adapter_parameters / training_method
/// into `memory`; `checkpoint` and `goodput` into `j` when the scenario has a checkpoint.
void add_training_memory_json(nlohmann::ordered_json& memory, const wl::Result& r);
void add_checkpoint_json(nlohmann::ordered_json& j, const wl::Result& r);

}  // namespace ls::tools
