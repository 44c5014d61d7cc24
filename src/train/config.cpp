// The configuration system. One field table (fields() below) drives everything that touches a
// key: reading a config file, --set overrides, range checks in validate() and to_toml(). Defaults
// are not in the table: they are Config{}'s member initializers, so they live in one place.
#include "train/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/suggest.h"
#include "io/read_file.h"
#include "train/config_values.h"

namespace splat {
namespace {

using namespace config_detail;

// ---- The field table ---------------------------------------------------------------------------

struct Field {
  std::string_view section, key, doc;
  std::string allowed;  // for config_reference(): "[0, 1]", ">= 1", "auto, cpu, cuda" or empty
  // Decodes, range-checks and assigns; returns the error message (naming the key) instead.
  std::function<std::optional<std::string>(Config&, const toml::node&)> read = {};
  std::function<std::string(const Config&)> write = {};  // the value as TOML text
  std::function<std::optional<std::string>(const Config&)> check = {};
};

template <class S, class T>
Field make_field(std::string_view section,
                 std::string_view key,
                 S Config::*sec,
                 T S::*member,
                 std::optional<RangeOf<T>> range,
                 std::string_view doc) {
  const std::string name = std::string(section) + "." + std::string(key);
  std::string allowed = range ? range_text(*range) : "";
  if constexpr (std::is_enum_v<T>) allowed = "one of " + valid_names<T>();
  if constexpr (IsEnumList<T>::value)
    allowed = "each one of " + valid_names<typename T::value_type>();
  Field f{section, key, doc, allowed};
  f.read = [=](Config& c, const toml::node& n) -> std::optional<std::string> {
    T v;
    try {
      v = decode<T>(n);
    } catch (const Bad& b) {
      return name + ": " + b.what;
    }
    if (auto p = problem(name, v, range ? &*range : nullptr)) return p;
    (c.*sec).*member = std::move(v);
    return std::nullopt;
  };
  f.write = [=](const Config& c) { return encode((c.*sec).*member); };
  f.check = [=](const Config& c) {
    return problem(name, (c.*sec).*member, range ? &*range : nullptr);
  };
  return f;
}

// One section of the table: its TOML name and the Config member that holds it. Entries come in
// two spellings: with an inclusive range, and without one (bools, strings, enums).
template <class S>
struct Section {
  std::string_view name;
  S Config::*sec;
  template <class T>
  Field operator()(std::string_view key,
                   T S::*member,
                   std::type_identity_t<RangeOf<T>> range,
                   std::string_view doc) const {
    return make_field(name, key, sec, member, std::optional(range), doc);
  }
  template <class T>
  Field operator()(std::string_view key, T S::*member, std::string_view doc) const {
    return make_field<S, T>(name, key, sec, member, std::nullopt, doc);
  }
};
// Spelled out for compilers without C++20's deduction for aggregates (clang before 17, which
// the sanitizer and fuzz build uses).
template <class S>
Section(std::string_view, S Config::*) -> Section<S>;

// densify.strategy: a string naming a registered strategy (strategy/strategy.h), checked where the
// value is read (so the error names the file and line) and by validate().
Field registered_strategy(Field f) {
  f.allowed = "one of " + join(strategy_names());
  f.read = [read = f.read](Config& c, const toml::node& n) -> std::optional<std::string> {
    if (const auto* v = n.as_string())
      if (auto err = unknown_strategy(v->get())) return err;
    return read(c, n);
  };
  f.check = [](const Config& c) { return unknown_strategy(c.densify.strategy); };
  return f;
}

const std::vector<Field>& fields() {
  // TOML integers are signed 64-bit, so a larger seed could not be written back by to_toml().
  constexpr auto kMaxSeed = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  // 1e8 splats with their Adam moments and gradients fill the memory of the largest GPU.
  constexpr std::int64_t kMaxSplats = 100'000'000;
  const Section data{"data", &Config::data};
  const Section model{"model", &Config::model};
  const Section train{"train", &Config::train};
  const Section backend{"backend", &Config::backend};
  const Section densify{"densify", &Config::densify};
  const Section output{"output", &Config::output};
  const Section prepare{"prepare", &Config::prepare};
  using D = DataConfig;
  using M = ModelConfig;
  using T = TrainConfig;
  using O = OutputConfig;
  // clang-format off
  static const std::vector<Field> table = {
      data("background", &D::background, {0, 1}, "RGB composited under RGBA images"),
      data("downscale", &D::downscale, {1, 64}, "integer image downscale factor (COLMAP and transforms.json: the dataset's own images_N/ copies where it has them, as 3DGS -r N)"),
      data("test_every", &D::test_every, {1}, "evaluate every n-th test view"),
      data("max_train_views", &D::max_train_views, {0}, "at most n training views (0 = all)"),
      data("holdout_every", &D::holdout_every, {2}, "COLMAP/transforms.json: every n-th image is a test view"),
      data("crop_undistorted", &D::crop_undistorted, "distorted/fisheye images: crop to what the lens saw (false: keep the size, repeat edges)"),
      data("max_image_size", &D::max_image_size, {0, 1 << 20}, "shrink images whose long side exceeds n pixels after downscale, area filter (0 = no limit, else at least 32)"),
      data("max_image_width", &D::max_image_width, {0, 1 << 20}, "shrink images wider than n pixels after downscale to n wide, area filter, as 3DGS does with 1600 (0 = no limit, else at least 32)"),
      data("alpha_mask", &D::alpha_mask, "RGBA images: alpha below 1/2 leaves the pixel out of the loss (false: alpha is composited on the background)"),
      model("sh_degree", &M::sh_degree, {0, 3}, "maximum spherical-harmonics degree"),
      model("init", &M::init, "auto: the dataset's points if any, else random"),
      model("init_points", &M::init_points, {1, kMaxSplats}, "random init: number of splats"),
      model("init_extent", &M::init_extent, {0}, "random init: cube of e scene half-sizes ([-e, e]^3 on NeRF-synthetic; forward-facing rigs without points sample the views instead)"),
      // Stored as a logit, so 0 and 1 themselves would be infinite.
      model("init_opacity", &M::init_opacity, {0.001, 0.999}, "initial opacity of every splat"),
      model("init_scale", &M::init_scale, {1e-6, 1e6}, "multiplies each initial splat's nearest-neighbour scale"),
      model("antialiased", &M::antialiased, "Mip-Splatting: 3D smoothing filter from the training cameras and 2D mip filter (model.ply has the 3D filter baked in)"),
      train("iterations", &T::iterations, {0}, "optimization steps (0 = auto: 30,000 as 3DGS, gsplat and FastGS; on captures over 36 training MP 1,080,000 / the training megapixels, at least 10,000 and 170 per training view, with the schedule compressed alike)"),
      train("time_budget", &T::time_budget, {0, 1e7}, "seconds of training (0 = no budget): iterations and step schedules are compressed to fit, planned from this run's measured steps; never stretched"),
      train("seed", &T::seed, {0, kMaxSeed}, "random seed (initialization, view order)"),
      train("loss", &T::loss, "photometric loss: l1 = mean |r - t|, l2 = mean (r - t)^2; l1_ssim (3DGS) and l2_ssim = (1 - ssim_lambda) l1 or l2 + ssim_lambda (1 - SSIM); l1 and l2 compute no SSIM"),
      train("ssim_lambda", &T::ssim_lambda, {0, 1}, "l1_ssim, l2_ssim: loss = (1 - l) data term + l (1 - SSIM)"),
      train("sh_increase_every", &T::sh_increase_every, {1}, "SH degree grows every n steps"),
      train("coarse_factor", &T::coarse_factor, {0, 16}, "coarse-to-fine: the first steps train on images downscaled by this power of two, halved at even steps up to full resolution at coarse_until (1 = off; 0 = auto: 4, less where a coarse image would be under 32 pixels)"),
      train("coarse_until", &T::coarse_until, {0}, "coarse-to-fine: the step from which training is at full resolution (0 = auto: half of the iterations)"),
      train("lr_means", &T::lr_means, {0}, "means learning rate, times the scene extent"),
      train("lr_means_final", &T::lr_means_final, {0}, "means learning rate at the last step"),
      train("lr_log_scales", &T::lr_log_scales, {0}, "log-scales learning rate"),
      train("lr_quats", &T::lr_quats, {0}, "rotation learning rate"),
      train("lr_opacity", &T::lr_opacity, {0}, "opacity (logit) learning rate"),
      train("lr_sh0", &T::lr_sh0, {0}, "SH DC learning rate"),
      train("lr_shN", &T::lr_shN, {0}, "higher SH bands learning rate"),
      train("sparse_sh_adam", &T::sparse_sh_adam, "Adam leaves an SH coefficient and its moments as they are in a step that gives it no gradient (a splat the view does not see; Taming 3DGS's sparse Adam, for the SH coefficients only: the bulk of a splat's bytes)"),
      train("appearance", &T::appearance, "real captures with varying exposure: affine colour transform per training image, applied to the render before the loss (test views, renders and model files use none)"),
      train("lr_appearance", &T::lr_appearance, {0}, "learning rate of the per-image transforms"),
      train("appearance_reg", &T::appearance_reg, {0}, "pull of the per-image transforms toward the identity (weight of their squared distance in each view's loss)"),
      train("pose_opt", &T::pose_opt, "camera pose refinement (gsplat's pose_opt): a rigid correction of each training image's pose (translation + 6D rotation), learnt with the splats, for SfM poses with small errors (test views, renders and model files use the given poses; cpu backend, one view per step, one process)"),
      train("lr_pose", &T::lr_pose, {0}, "learning rate of the per-image pose corrections"),
      train("pose_reg", &T::pose_reg, {0}, "pull of the pose corrections toward the identity: Adam weight decay as torch's (an L2 term, reg * correction added to the gradient), as gsplat's pose_opt_reg"),
      train("log_every", &T::log_every, {1}, "progress line period when not on a terminal"),
      train("eval_every", &T::eval_every, {0}, "test-view PSNR/SSIM every n steps, into metrics.jsonl (0 = only at the end)"),
      train("batch_size", &T::batch_size, {1, 4096}, "views per step over all ranks; gradients averaged, one Adam update"),
      train("lr_batch_scaling", &T::lr_batch_scaling, "learning rates times sqrt(batch_size) (Grendel-GS), batch_size (linear) or 1 (none)"),
      train("digest_every", &T::digest_every, {0}, "several ranks: compare a digest of the model across ranks every n steps (0 = never)"),
      train("collective_timeout", &T::collective_timeout, {0}, "several ranks: seconds a collective waits before the job ends with an error (0 = forever)"),
      backend("type", &BackendConfig::type, "auto: cuda if a GPU is found, else cpu"),
      backend("threads", &BackendConfig::threads, {0}, "CPU backend threads (0 = all cores)"),
      backend("timing", &BackendConfig::timing, "per-stage GPU timing (CUDA events), reported at the end"),
      backend("submission", &BackendConfig::submission,
              "cuda: a host wait after every stage, one per step, or the step as a CUDA graph; auto: graph "
              "(per_kernel with timing)"),
      backend("pipelining", &BackendConfig::pipelining,
              "cuda: depth2 queues the next step while the GPU runs this one; auto: depth2 (off with timing)"),
      backend("deterministic", &BackendConfig::deterministic,
              "cuda: bit-identical runs from the same seed (gradient sums in fixed point)"),
      backend("fast_math", &BackendConfig::fast_math,
              "cuda: the rasterizer's exp and 1 / (1 - alpha) from the hardware's approximations (a few ulp; "
              "false: expf and IEEE division); cpu: no effect, always accurate"),
      backend("gpu_images_gb", &BackendConfig::gpu_images_gb, {-1, 1e6},
              "cuda: GiB of training images kept on the GPU; the rest stay in host memory and are copied in "
              "for each step that uses them (-1 = auto: half the GPU's free memory; 0 = copy every image)"),
      registered_strategy(densify("strategy", &DensifyConfig::strategy, "densification strategy")),
      densify("refine_every", &DensifyConfig::refine_every, {1}, "steps between refine ticks"),
      densify("refine_start", &DensifyConfig::refine_start, {0}, "first step with a refine tick"),
      densify("refine_stop", &DensifyConfig::refine_stop, {0}, "no refine ticks from this step on (mcmc: 25000; adc: set 15000, as 3DGS)"),
      densify("min_opacity", &DensifyConfig::min_opacity, {0, 1}, "mcmc: splats at or below are relocated"),
      densify("cap_max", &DensifyConfig::cap_max, {0, kMaxSplats}, "mcmc: most splats (0 = auto: from the training pixels and their detail)"),
      densify("growth", &DensifyConfig::growth, {0, 10}, "mcmc: splats added per tick, fraction of the count"),
      densify("noise_lr", &DensifyConfig::noise_lr, {0}, "mcmc: position noise, times the means learning rate"),
      densify("opacity_reg", &DensifyConfig::opacity_reg, {0}, "mcmc: L1 regularizer on opacity, times the share of the training pixels the subject covers (cut-out images)"),
      densify("scale_reg", &DensifyConfig::scale_reg, {0}, "mcmc: L1 regularizer on scale, weighed as opacity_reg"),
      densify("mcmc_grad_power", &DensifyConfig::mcmc_grad_power, {0, 4}, "mcmc: relocation and growth draw splats by opacity times (mean screen-space gradient since the last tick)^p (0 = by opacity, as the paper)"),
      densify("grow_grad2d", &DensifyConfig::grow_grad2d, {0}, "adc: mean screen-space gradient above which a splat grows (fastgs: at or above which a small splat is cloned)"),
      densify("grow_scale3d", &DensifyConfig::grow_scale3d, {0}, "adc, fastgs: growing splats up to this scale (x scene extent) are cloned, larger split"),
      densify("prune_opacity", &DensifyConfig::prune_opacity, {0, 1}, "adc, fastgs: splats below this opacity are pruned (fastgs: some of them, drawn)"),
      densify("prune_scale3d", &DensifyConfig::prune_scale3d, {0}, "adc, fastgs: after the first opacity reset, larger splats (x scene extent) are pruned (fastgs: some of them, drawn)"),
      densify("reset_every", &DensifyConfig::reset_every, {0}, "adc, fastgs: opacities reset to 2 * prune_opacity every n steps (0 = never)"),
      densify("grow_grad2d_abs", &DensifyConfig::grow_grad2d_abs, {0}, "fastgs: mean absolute (AbsGS) screen-space gradient at or above which a large splat splits"),
      densify("fastgs_views", &DensifyConfig::fastgs_views, {1, 10000}, "fastgs: training views each tick renders and scores (at most all of them)"),
      densify("fastgs_loss_thresh", &DensifyConfig::fastgs_loss_thresh, {0, 1}, "fastgs: a pixel whose error, normalized to [0, 1] per view, is above this is in the view's error mask"),
      densify("fastgs_min_importance", &DensifyConfig::fastgs_min_importance, {0}, "fastgs: a splat grows only if the masked pixels it blends, per scored view, are more than this"),
      densify("fastgs_opacity_cap", &DensifyConfig::fastgs_opacity_cap, {0, 1}, "fastgs: opacities clamped to this after every densify tick"),
      densify("fastgs_final_every", &DensifyConfig::fastgs_final_every, {0}, "fastgs: final pruning every n steps after refine_stop (0 = none)"),
      densify("fastgs_final_stop", &DensifyConfig::fastgs_final_stop, {0}, "fastgs: no final pruning from this step on"),
      densify("fastgs_final_opacity", &DensifyConfig::fastgs_final_opacity, {0, 1}, "fastgs: final pruning removes splats below this opacity"),
      densify("fastgs_final_score", &DensifyConfig::fastgs_final_score, {0, 1}, "fastgs: final pruning removes splats whose pruning score (multi-view error, normalized to [0, 1]) is above this"),
      output("save_renders", &O::save_renders, "write the test renders as PNG"),
      output("save_checkpoint", &O::save_checkpoint, "write checkpoint.ckpt at the end (false: a run that needs no resuming)"),
      output("checkpoint_every", &O::checkpoint_every, {0}, "also every n steps (0 = never)"),
      output("checkpoint_minutes", &O::checkpoint_minutes, {0}, "rewrite checkpoint.ckpt every m minutes of training (0 = never)"),
      output("formats", &O::formats, "model files written at the end: model.ply, .splat, .spz, .compressed.ply"),
      prepare("max_image_size", &PrepareOptions::max_image_size, {0, 1 << 20}, "structure from motion finds features in images shrunk to this long side (0 = full size); the cameras are those of the full-size images"),
      prepare("frames", &PrepareOptions::frames, {3, 100000}, "video: frames kept, the sharpest of each of this many equal windows"),
      prepare("camera_model", &PrepareOptions::camera, "COLMAP camera model (auto: OPENCV for one shared camera, SIMPLE_RADIAL for a camera per image)"),
      prepare("shared_camera", &PrepareOptions::sharing, "auto: one camera for a video's frames and for photos of one size, else one per image"),
      prepare("matcher", &PrepareOptions::matcher, "image pairs matched (auto: sequential for video frames and for more than exhaustive_max photos, else exhaustive)"),
      prepare("exhaustive_max", &PrepareOptions::exhaustive_max, {0}, "matcher auto: every pair is matched up to this many photos"),
      prepare("threads", &PrepareOptions::threads, {0}, "COLMAP's threads (0 = all cores)"),
  };
  // clang-format on
  return table;
}

std::vector<std::string_view> section_names() {
  std::vector<std::string_view> out;
  for (const Field& f : fields())
    if (std::find(out.begin(), out.end(), f.section) == out.end()) out.push_back(f.section);
  return out;
}

std::vector<std::string_view> keys_of(std::string_view section) {
  std::vector<std::string_view> out;
  for (const Field& f : fields())
    if (f.section == section) out.push_back(f.key);
  return out;
}

// ---- Lookup with suggestions ------------------------------------------------------------------

std::string unknown_section(std::string_view section) {
  std::string msg = "unknown section [" + std::string(section) + "]";
  if (auto s = closest(section, section_names()))
    return msg + " (did you mean [" + std::string(*s) + "]?)";
  return msg + " (valid sections: " + join(section_names()) + ")";
}

std::string unknown_key(std::string_view section, std::string_view key) {
  std::string msg = "unknown key '" + std::string(section) + "." + std::string(key) + "'";
  if (auto k = closest(key, keys_of(section)))
    return msg + " (did you mean '" + std::string(section) + "." + std::string(*k) + "'?)";
  for (const Field& f : fields())  // a key put under the wrong header
    if (f.key == key)
      return msg + " (did you mean '" + std::string(f.section) + "." + std::string(key) + "'?)";
  return msg + " (valid keys in [" + std::string(section) + "]: " + join(keys_of(section)) + ")";
}

const Field* find_field(std::string_view section, std::string_view key) {
  for (const Field& f : fields())
    if (f.section == section && f.key == key) return &f;
  return nullptr;
}

bool is_section(std::string_view s) {
  const auto names = section_names();
  return std::find(names.begin(), names.end(), s) != names.end();
}

// ---- Applying parsed TOML ---------------------------------------------------------------------

// Where text came from: "file:line" for files; --set text is one line, so it gets no number.
struct Origin {
  std::string name;
  bool has_lines = true;
  std::string at(const toml::source_region& r) const {
    if (!has_lines || r.begin.line == 0) return name;
    return name + ":" + std::to_string(r.begin.line);
  }
};

void apply_table(Config& cfg, const toml::table& root, const Origin& origin) {
  for (auto&& [name, node] : root) {
    const std::string_view section = name.str();
    const std::string at = origin.at(name.source());
    if (!node.is_table()) {
      if (is_section(section))
        throw Error(at + ": '" + std::string(section) + "' must be a section [" +
                    std::string(section) + "], got " + kind_of(node));
      for (const Field& f : fields())
        if (f.key == section)
          throw Error(at + ": key '" + std::string(section) +
                      "' must be under a section (did you mean '" + std::string(f.section) + "." +
                      std::string(section) + "'?)");
      throw Error(at + ": key '" + std::string(section) +
                  "' must be under a section (valid sections: " + join(section_names()) + ")");
    }
    if (!is_section(section)) throw Error(at + ": " + unknown_section(section));
    for (auto&& [key, value] : *node.as_table()) {
      const Field* f = find_field(section, key.str());
      if (!f) throw Error(origin.at(key.source()) + ": " + unknown_key(section, key.str()));
      if (auto err = f->read(cfg, value)) throw Error(origin.at(value.source()) + ": " + *err);
    }
  }
}

// to_toml() and, with `docs`, config_reference(): every key in table order under its header.
std::string render(const Config& cfg, bool docs) {
  constexpr std::size_t kCommentColumn = 32;
  std::string out;
  std::string_view section;
  for (const Field& f : fields()) {
    if (f.section != section) {
      out += (out.empty() ? "[" : "\n[") + std::string(f.section) + "]\n";
      section = f.section;
    }
    std::string line = std::string(f.key) + " = " + f.write(cfg);
    if (docs) {
      line.resize(std::max(line.size() + 1, kCommentColumn), ' ');
      line += "# " + std::string(f.doc) + (f.allowed.empty() ? "" : "; " + f.allowed);
    }
    out += line + "\n";
  }
  return out;
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(" \t") - b + 1));
}

// A word that reads the same quoted or not: `--set backend.type=cpu` means "cpu".
bool is_bare_word(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_-./:+~@", c) != nullptr;
  });
}

// Digits, with a sign or not, that a 64-bit integer cannot hold (TOML cannot read them either).
bool is_out_of_range_integer(std::string_view s) {
  std::int64_t v;
  const std::string_view digits = s.starts_with('+') ? s.substr(1) : s;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return ec == std::errc::result_out_of_range && end == digits.data() + digits.size();
}

}  // namespace

// ---- Public API ---------------------------------------------------------------------------------

std::string_view to_string(InitKind k) {
  return name_of(k);
}
std::string_view to_string(LrBatchScaling k) {
  return name_of(k);
}
std::string_view to_string(AppearanceKind k) {
  return name_of(k);
}

template <class E>
E from_string(std::string_view name) {
  return parse_enum<E>(name);
}
template BackendKind from_string(std::string_view);
template InitKind from_string(std::string_view);
template Submission from_string(std::string_view);
template Pipelining from_string(std::string_view);
template LrBatchScaling from_string(std::string_view);
template AppearanceKind from_string(std::string_view);
template LossKind from_string(std::string_view);
template ModelFormat from_string(std::string_view);

void Config::validate() const {
  for (const Field& f : fields())
    if (auto p = f.check(*this)) throw Error("config: " + *p);
  if (train.lr_means_final > train.lr_means)
    throw Error("config: train.lr_means_final = " + number(train.lr_means_final) +
                " is greater than train.lr_means = " + number(train.lr_means) +
                " (the means learning rate decays from the first to the second, never up)");
  if (output.checkpoint_every > 0 && !output.save_checkpoint)
    throw Error("config: output.checkpoint_every = " + std::to_string(output.checkpoint_every) +
                " asks for checkpoints, but output.save_checkpoint = false");
  if (output.formats.empty() && !output.save_checkpoint)
    throw Error(
        "config: output.formats = [] and output.save_checkpoint = false leave the run with no "
        "model at all (list a format, e.g. output.formats = [\"ply\"], or save the checkpoint)");
  // The budget plans from measured steps: under a second leaves a handful of them, no training.
  if (train.time_budget > 0 && train.time_budget < kMinTimeBudget)
    throw Error("config: train.time_budget = " + number(train.time_budget) +
                " s is too short to train (at least " + number(kMinTimeBudget) +
                " s; 0 = no budget)");
  if (densify.strategy == "mcmc" && densify.cap_max > 0 &&
      double(densify.cap_max) < double(model.init_points) && model.init == InitKind::Random)
    throw Error("config: densify.cap_max = " + std::to_string(densify.cap_max) +
                " is below model.init_points = " + std::to_string(model.init_points) +
                " (MCMC never removes splats, so the cap must hold the initial ones)");
  // Smaller images hold too little for a 16-pixel tile grid, let alone a scene.
  constexpr std::int64_t kMinImageSize = 32;
  for (const auto& [key, n, what] :
       {std::tuple{"max_image_size", data.max_image_size, "a long side"},
        std::tuple{"max_image_width", data.max_image_width, "a width"}}) {
    if (n > 0 && n < kMinImageSize)
      throw Error(std::string("config: data.") + key + " = " + std::to_string(n) +
                  " would shrink every image to " + what + " of " + std::to_string(n) +
                  " pixels; it must be at least " + std::to_string(kMinImageSize) +
                  " (or 0: no limit)");
  }
  if (train.coarse_factor > 1 && !std::has_single_bit(std::uint64_t(train.coarse_factor)))
    throw Error("config: train.coarse_factor = " + std::to_string(train.coarse_factor) +
                " is not a power of two (1, 2, 4, 8 or 16)");
  validate_backend();
  if (densify.strategy == "fastgs") validate_fastgs();
  if (train.pose_opt) validate_pose_opt();
  if (densify.refine_stop < densify.refine_start && densify.strategy != "none")
    throw Error("config: densify.refine_stop = " + std::to_string(densify.refine_stop) +
                " is before densify.refine_start = " + std::to_string(densify.refine_start));
}

// What the FastGS strategy's first version (one view per step) cannot run with.
void Config::validate_fastgs() const {
  const std::string fastgs = "densify.strategy = \"fastgs\"";
  if (train.batch_size > 1)
    throw Error("config: " + fastgs +
                " and train.batch_size = " + std::to_string(train.batch_size) +
                " cannot be combined: the fastgs strategy trains one view per step so far");
}

// What train.pose_opt's first version (one view per step) cannot run with.
void Config::validate_pose_opt() const {
  const std::string pose = "train.pose_opt = true";
  if (train.batch_size > 1)
    throw Error("config: " + pose + " and train.batch_size = " + std::to_string(train.batch_size) +
                " cannot be combined: pose refinement trains one view per step so far");
  if (densify.strategy == "fastgs")
    throw Error("config: " + pose +
                " and densify.strategy = \"fastgs\" cannot be combined: the fastgs score pass "
                "renders the training views from their given poses, not the corrected ones");
}

// Execution modes that cannot work together are rejected, naming both keys; none is overridden.
void Config::validate_backend() const {
  auto conflict = [](const std::string& a, const std::string& b, const std::string& why) {
    return Error("config: " + a + " and " + b + " cannot be combined: " + why);
  };
  const std::string submission =
      "backend.submission = \"" + std::string(to_string(backend.submission)) + "\"";
  const std::string pipelining =
      "backend.pipelining = \"" + std::string(to_string(backend.pipelining)) + "\"";
  const Submission sub = resolved(backend.submission, backend.timing, train.batch_size);
  const Pipelining pipe = resolved(backend.pipelining, sub, backend.timing);
  if (sub == Submission::PerKernel && pipe == Pipelining::Depth2)
    throw conflict(submission, pipelining,
                   "per_kernel waits after every stage, so nothing can overlap");
  if (backend.timing && sub == Submission::Graph)
    throw conflict(
        "backend.timing = true", submission,
        "stage events cannot be read inside a replayed graph; time with per_kernel or chained");
  if (backend.timing && pipe == Pipelining::Depth2)
    throw conflict("backend.timing = true", pipelining,
                   "stage times need each step to finish before the next");
  if (sub == Submission::Graph && train.batch_size > 1)
    throw conflict(submission, "train.batch_size = " + std::to_string(train.batch_size),
                   "a replayed graph renders one view per step; use chained");
  if (backend.type == BackendKind::Cpu && backend.submission != Submission::Auto)
    throw conflict("backend.type = \"cpu\"", submission, "submission modes are the cuda backend's");
  if (backend.type == BackendKind::Cpu && backend.pipelining != Pipelining::Auto)
    throw conflict("backend.type = \"cpu\"", pipelining,
                   "the cpu backend runs each step to the end");
}

std::string Config::to_toml() const {
  return render(*this, false);
}

std::string config_reference() {
  return render(Config{}, true);
}

void apply_config_file(Config& cfg, const std::string& path) {
  apply_config_text(cfg, read_input_file(path, "config file", kMaxConfigBytes), path);
}

void apply_config_text(Config& cfg,
                       std::string_view toml,
                       const std::string& origin,
                       bool has_lines) {
  toml::table root;
  try {
    root = toml::parse(toml, origin);
  } catch (const toml::parse_error& e) {
    const auto& pos = e.source().begin;
    throw Error(origin + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
                ": TOML syntax error: " + std::string(e.description()));
  }
  // All or nothing: a bad key half way through leaves `cfg` as it was.
  Config next = cfg;
  apply_table(next, root, Origin{origin, has_lines});
  cfg = std::move(next);
}

void apply_override(Config& cfg, const std::string& assignment) {
  const Origin origin{"--set " + assignment, false};
  const auto form_error = [&] {
    return Error(origin.name + ": expected section.key=value, e.g. --set train.iterations=500");
  };
  const auto eq = assignment.find('=');
  if (eq == std::string::npos) throw form_error();
  const std::string path = trim(std::string_view(assignment).substr(0, eq));
  const std::string value = trim(std::string_view(assignment).substr(eq + 1));
  const auto dot = path.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == path.size()) throw form_error();
  const std::string section = path.substr(0, dot), key = path.substr(dot + 1);
  if (!is_section(section)) throw Error(origin.name + ": " + unknown_section(section));
  const Field* f = find_field(section, key);
  if (!f) throw Error(origin.name + ": " + unknown_key(section, key));
  if (value.find_first_of("\r\n") != std::string::npos)
    throw Error(origin.name + ": " + path + ": the value must be on one line");

  // The value is TOML ("500", "[1, 1, 1]", "\"cpu\""), parsed by the same parser as files.
  toml::table doc;
  try {
    doc = toml::parse("value = " + value + "\n", origin.name);
  } catch (const toml::parse_error& e) {
    if (is_out_of_range_integer(value))
      throw Error(origin.name + ": " + path + ": " + value +
                  " is out of range: an integer holds -9223372036854775808 to "
                  "9223372036854775807" +
                  (f->allowed.empty() ? "" : ", and " + path + " takes " + f->allowed));
    if (!is_bare_word(value))
      throw Error(origin.name + ": " + path + ": '" + value + "' is not a TOML value (" +
                  std::string(e.description()) + ")");
    doc = toml::table{{"value", value}};
  }
  if (auto err = f->read(cfg, *doc.get("value"))) throw Error(origin.name + ": " + *err);
}

}  // namespace splat
