#pragma once
// The report's plots of training over time, from the metrics.jsonl records.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace splat {

// Four inline SVG plots against step: loss (per step, faint, and smoothed; log scale), test PSNR
// (evaluations during training and the final value from metrics.json), splat count, and it/s.
// Records without a "step" are skipped; a plot whose field no record has says so.
std::vector<std::string> history_plots(const std::vector<nlohmann::json>& history,
                                       const nlohmann::json& metrics);

}  // namespace splat
