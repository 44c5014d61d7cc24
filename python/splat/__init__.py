"""splat: 3D Gaussian Splatting from Python, on the same C++/CUDA code as the `splat` command.

Each function does what the command of the same name does, with the same config keys, the same
checks and the same error messages (raised as :class:`splat.Error`)::

    import splat
    run = splat.train("data/lego", config="configs/lego.toml", out="out/lego", train__iterations=3000)
    image = run.model.render(splat.load_dataset("data/lego").test[0].camera)
    print(splat.eval(run.model, "data/lego")["psnr"])

Config: ``config`` is a TOML file (``--config``) or a dict of the TOML's shape
(``{"train": {"iterations": 3000}}``); keyword overrides are ``section__key=value`` or
``**{"section.key": value}`` (``--set section.key=value``). Docs: docs/python.md.
"""
from __future__ import annotations

import json
import math
import os
import tomllib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

import numpy as np

from ._splat import Camera, Dataset, DeviceArray, Error, Model, TrainProgress, View
from . import _splat

__all__ = [
    "Camera", "Dataset", "DeviceArray", "Error", "Model", "TrainProgress", "TrainResult", "View",
    "config", "demo", "eval", "load", "load_dataset", "read_image", "train", "write_png",
]

PathLike = Union[str, "os.PathLike[str]"]
ConfigLike = Union[PathLike, Mapping[str, Mapping[str, Any]], None]


# ---- Config: a file, a dict, and keyword overrides --------------------------------------------

def _toml_value(value: Any, where: str) -> str:
    """A Python value as TOML text (the value of a config key)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "nan"
        return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    if isinstance(value, (str, os.PathLike)):
        # A JSON string is a TOML basic string once DEL is escaped too.
        return json.dumps(os.fspath(value), ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_toml_value(v, where) for v in list(value)) + "]"
    raise TypeError(f"{where}: {type(value).__name__} is not a config value "
                    "(bool, int, float, str or a list of them)")


def _config_args(config: ConfigLike, overrides: Mapping[str, Any]) -> tuple[str, str, list[str]]:
    """(config file, config TOML text, --set assignments) for the C++ side."""
    file, text = "", ""
    if isinstance(config, Mapping):
        lines = []
        for section, keys in config.items():
            if not isinstance(keys, Mapping):
                # Left to the TOML checks, which say that a key must be under a section.
                lines.insert(0, f"{json.dumps(str(section))} = {_toml_value(keys, str(section))}")
                continue
            lines.append(f"[{json.dumps(str(section))}]")
            lines += [f"{json.dumps(str(k))} = {_toml_value(v, f'{section}.{k}')}"
                      for k, v in keys.items()]
        text = "\n".join(lines) + "\n"
    elif config is not None:
        file = os.fspath(config)
    sets = []
    for name, value in overrides.items():
        key = name.replace("__", ".", 1) if "." not in name else name
        if "." not in key:
            raise TypeError(f"unexpected keyword argument '{name}': config overrides are "
                            "section__key=value (e.g. train__iterations=500)")
        sets.append(f"{key}={_toml_value(value, key)}")
    return file, text, sets


def config(config: ConfigLike = None, **overrides: Any) -> dict[str, dict[str, Any]]:
    """The resolved config as a dict: the defaults, then ``config``, then the overrides, validated
    as ``splat config --config FILE --set ...`` validates them."""
    return tomllib.loads(_splat.resolve_config(*_config_args(config, overrides)))


# ---- Data and models ----------------------------------------------------------------------------

def load_dataset(path: PathLike, config: ConfigLike = None, **overrides: Any) -> Dataset:
    """The dataset at ``path`` (NeRF-synthetic, transforms.json or COLMAP) as training loads it,
    with the config's ``[data]`` settings (downscale, background, holdout)."""
    return _splat.load_dataset(os.fspath(path), *_config_args(config, overrides))


def load(path: PathLike, config: ConfigLike = None, *, device: Optional[str] = None,
         **overrides: Any) -> Model:
    """A model file (.ply, .compressed.ply, .splat, .spz) or checkpoint (.ckpt), as ``splat
    render`` and ``splat eval`` load it. ``device``: "cpu", "cuda", or None for the config's
    backend.type ("auto": the GPU where there is one). On the CPU the parameter arrays are NumPy
    arrays over the model's memory; on the GPU they are :class:`DeviceArray`, which PyTorch takes
    without a copy (``torch.from_dlpack(model.means)``)."""
    if device is not None:
        overrides = {**overrides, "backend.type": device}
    return _splat.load(os.fspath(path), *_config_args(config, overrides))


def _render(self: Model, camera: Camera, dtype: Any = np.float32) -> np.ndarray:
    """The model seen by ``camera``: an [H, W, 3] array, float32 in [0, 1], or uint8 rounded
    as ``splat render`` writes its PNGs (``dtype=np.uint8``)."""
    kind = np.dtype(dtype)
    if kind not in (np.dtype(np.float32), np.dtype(np.uint8)):
        raise TypeError(f"render: dtype {kind} is not float32 or uint8")
    return self._render(camera, kind == np.dtype(np.uint8))


def _export(self: Model, path: PathLike, format: Optional[str] = None,
            sh_degree: Optional[int] = None) -> None:
    """Writes the model as ``splat export MODEL --out PATH [--format F] [--sh-degree D]`` does:
    format "ply", "splat", "spz" or "compressed-ply" (None: from the file name)."""
    self._export(os.fspath(path), format or "", -1 if sh_degree is None else int(sh_degree))


def _scales(self: Model) -> np.ndarray:
    """exp(log_scales): the splats' standard deviations along their axes, [N, 3] (a copy)."""
    return np.exp(np.asarray(self.log_scales))


def _opacities(self: Model) -> np.ndarray:
    """sigmoid(raw_opacity), [N] (a copy)."""
    return 1.0 / (1.0 + np.exp(-np.asarray(self.raw_opacity)))


Model.render = _render
Model.export = _export
Model.scales = property(_scales)
Model.opacities = property(_opacities)


def eval(model: Union[Model, PathLike], data: Union[Dataset, PathLike], *, split: str = "test",
         config: ConfigLike = None, **overrides: Any) -> dict[str, Any]:
    """PSNR and SSIM of ``model`` on ``data``'s test (or training) views, as ``splat eval MODEL
    DATA [--split S]``: the dict of its metrics.json (psnr, ssim, cc_psnr, SPLIT_views)."""
    if split not in ("train", "test"):
        raise Error(f"--split {split}: not one of train, test")
    if not isinstance(model, Model):
        model = load(model, config, **overrides)
        config, overrides = None, {}
    if not isinstance(data, Dataset):
        data = os.fspath(data)
    return json.loads(model._evaluate(data, split, *_config_args(config, overrides)))


def read_image(path: PathLike) -> np.ndarray:
    """An image file (PNG, JPEG, WebP) decoded as splat decodes its datasets: float32 [H, W, C]
    in [0, 1], C = 3 or 4."""
    return _splat.read_image(os.fspath(path))


def write_png(path: PathLike, image: np.ndarray) -> None:
    """Writes an [H, W, C] (or [H, W]) image as an 8-bit PNG, as ``splat render`` writes its
    renders: float values in [0, 1] (clamped and rounded), or uint8."""
    pixels = np.asarray(image)
    if pixels.dtype == np.uint8:
        pixels = pixels.astype(np.float32) / 255.0
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    _splat.write_png(os.fspath(path), pixels)


# ---- Training -----------------------------------------------------------------------------------

@dataclass
class TrainResult:
    """What a training run left in ``out``: the model (from checkpoint.ckpt, or the first model
    file when the run kept no checkpoint) and metrics.json (None for a run stopped early)."""
    out: str
    model: Model
    metrics: Optional[dict[str, Any]]


def _result(out: str, status: int) -> TrainResult:
    with open(os.path.join(out, "config.toml"), "rb") as f:
        device = tomllib.load(f)["backend"]["type"]
    for name in ("checkpoint.ckpt", "model.ply", "model.spz", "model.compressed.ply",
                 "model.splat"):
        path = os.path.join(out, name)
        if os.path.exists(path):
            break
    metrics = None
    if status == 0:
        with open(os.path.join(out, "metrics.json")) as f:
            metrics = json.load(f)
    return TrainResult(out, load(path, device=device), metrics)


Progress = Optional[Callable[[TrainProgress], Any]]


def train(data: PathLike, config: ConfigLike = None, out: Optional[PathLike] = None,
          progress: Progress = None, *, resume: Optional[PathLike] = None,
          init_from: Optional[PathLike] = None, overwrite: bool = False,
          **overrides: Any) -> TrainResult:
    """Trains as ``splat train DATA [--config F] [--out DIR] [--resume C | --init-from M]
    [--overwrite] [--set ...]`` does, writing the same files into ``out`` (default
    out/<dataset name>). ``progress(p)`` is called every train.log_every steps and after the last
    with a :class:`TrainProgress`. Ctrl-C stops training after the step in progress, writes
    checkpoint.ckpt and model.ply as the CLI does, then raises KeyboardInterrupt."""
    data = os.fspath(data)
    out = os.fspath(out) if out is not None else _splat.default_out_dir(data)
    status = _splat.train(data, out, os.fspath(resume) if resume else "",
                          os.fspath(init_from) if init_from else "", overwrite,
                          *_config_args(config, overrides), progress)
    return _result(out, status)


def demo(out: PathLike = "demo_out", progress: Progress = None, *, config: ConfigLike = None,
         **overrides: Any) -> TrainResult:
    """``splat demo``: generates the demo scene in out/scene and trains on it with the demo's
    settings (config and overrides apply on top). The dataset is ``os.path.join(out, "scene")``."""
    out = os.fspath(out)
    return _result(out, _splat.demo(out, *_config_args(config, overrides), progress))
