#pragma once
// Model files in every format splat writes and reads: the 3DGS .ply (float, lossless) and the
// compact formats users publish (.splat, .spz, PlayCanvas compressed .ply).
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/gaussians.h"

namespace splat {

// Model file formats: the float 3DGS .ply and the compact published ones.
enum class ModelFormat { Ply, Splat, Spz, CompressedPly };
// Their names in output.formats and on the command line.
inline constexpr std::pair<ModelFormat, std::string_view> kModelFormatNames[] = {
    {ModelFormat::Ply, "ply"},
    {ModelFormat::Splat, "splat"},
    {ModelFormat::Spz, "spz"},
    {ModelFormat::CompressedPly, "compressed-ply"}};
std::string_view to_string(ModelFormat f);

// The file a training run writes for a format: model.ply, model.splat, model.spz,
// model.compressed.ply.
std::string model_file_name(ModelFormat f);

// The format a file name asks for: .splat, .spz, .compressed.ply, else .ply; nothing otherwise.
std::optional<ModelFormat> format_from_name(const std::string& path);

// The model with its SH cut to `degree`, or padded with zero coefficients up to it (0..3).
Gaussians with_sh_degree(const Gaussians& g, int degree);

// Writes g in format f; the SH degree is the model's (a .splat keeps degree 0 only).
void write_model(const std::string& path, const Gaussians& g, ModelFormat f);

// Reads a model file of any of the formats: .spz and .splat by their extension, any other name
// as a .ply, standard or compressed (told apart by its header's elements).
Gaussians read_model(const std::string& path);

}  // namespace splat
