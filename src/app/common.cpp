#include "app/common.h"

#include <filesystem>

#include "core/error.h"
#include "io/checkpoint.h"
#include "train/backend_factory.h"

namespace fs = std::filesystem;

namespace splat::app {

namespace {
// The config a checkpoint saved. A key added since keeps the behaviour of the version that wrote
// it: data.max_image_width (1600 by default) was no limit before it existed.
Config saved_config(const std::string& toml, const std::string& origin) {
  Config c;
  if (toml.find("max_image_width") == std::string::npos) c.data.max_image_width = 0;
  apply_config_text(c, toml, origin);
  return c;
}
}  // namespace

Config resolve_config(const ConfigArgs& args,
                      const std::string& base_toml,
                      const std::string& base_origin) {
  return resolve_config(args, base_toml.empty() ? Config{} : saved_config(base_toml, base_origin));
}

Config resolve_model_config(const ConfigArgs& args, const std::string& model_path) {
  Config base;
  if (fs::path(model_path).extension() == ".ckpt") {
    const Config trained =
        saved_config(read_checkpoint(model_path).config_toml, model_path + " (its config)");
    base.data = trained.data;
    base.model.antialiased = trained.model.antialiased;  // render it as it trained
  }
  return resolve_config(args, std::move(base));
}

Config resolve_config(const ConfigArgs& args, Config cfg) {
  if (!args.config_file.empty()) apply_config_file(cfg, args.config_file);
  if (!args.config_text.empty()) apply_config_text(cfg, args.config_text, "config", false);
  if (args.downscale > 0) apply_override(cfg, "data.downscale=" + std::to_string(args.downscale));
  if (args.timing) apply_override(cfg, "backend.timing=true");
  for (const std::string& s : args.sets) apply_override(cfg, s);
  if (args.downscale > 0 && cfg.data.downscale != args.downscale)
    throw Error("--downscale " + std::to_string(args.downscale) +
                " disagrees with --set data.downscale=" + std::to_string(cfg.data.downscale) +
                " (give one of them)");
  cfg.validate();
  return cfg;
}

ModelRenderer model_renderer(const TrainState& model, const Config& cfg) {
  ModelRenderer r{make_backend(cfg.backend), final_raster_settings(cfg)};
  r.backend->set_state(model);
  r.settings.sh_degree = model.params.sh_degree;
  return r;
}

EvalResult evaluate_model(const std::string& model_path,
                          const std::vector<View>& views,
                          const Config& cfg,
                          const std::string& render_dir,
                          float alpha_max) {
  return evaluate_model(load_model(model_path), model_path, views, cfg, render_dir, alpha_max);
}

EvalResult evaluate_model(const TrainState& model,
                          const std::string& name,
                          const std::vector<View>& views,
                          const Config& cfg,
                          const std::string& render_dir,
                          float alpha_max) {
  ModelRenderer renderer = model_renderer(model, cfg);
  renderer.settings.alpha_max = alpha_max;
  EvalResult r = evaluate(*renderer.backend, views, renderer.settings, render_dir);
  // A score of the background alone reads like a result; it is a model that draws nothing here.
  if (!views.empty() && r.blank_views == views.size())
    throw Error(name + ": the model draws nothing: every one of the " +
                std::to_string(views.size()) + " renders is the background alone (each of its " +
                std::to_string(model.params.size()) +
                " splats is outside the views, too large to draw or too transparent)");
  return r;
}

std::string default_out_dir(const std::string& data_path) {
  fs::path p = fs::path(data_path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return (fs::path("out") / p.filename()).string();
}

nlohmann::json eval_json(const EvalResult& r,
                         const std::string& model,
                         const std::string& split,
                         float alpha_max) {
  nlohmann::json j{{"model", model},      {"split", split},      {"alpha_max", alpha_max},
                   {"psnr", r.mean_psnr}, {"ssim", r.mean_ssim}, {"cc_psnr", r.mean_cc_psnr}};
  j[split + "_views"] = nlohmann::json::array();
  for (const ViewMetrics& v : r.views) j[split + "_views"].push_back(view_json(v));
  return j;
}

std::unique_ptr<RunDir> open_results_dir(const std::string& out, const std::string& kind) {
  auto dir = std::make_unique<RunDir>(out, "--out " + out, kind);
  const std::vector<std::string> previous = dir->owned_existing();
  if (!previous.empty() && dir->previous_kind() != kind)
    throw Error("--out " + out + " holds the outputs of splat " + dir->previous_kind() + " (" +
                previous.front() + ", ...); splat " + kind +
                " replaces only its own earlier results: choose another --out");
  dir->remove_owned();
  return dir;
}

}  // namespace splat::app
