"""Types of splat._splat, the C++ core (python/_splat.cpp). Use it through the splat package."""
from typing import Any, Callable, Optional, Union

import numpy as np
import numpy.typing as npt

class Error(Exception):
    """An error of splat's, with the message the CLI prints after "error: "."""

class Camera:
    """A pinhole camera: world-to-camera rotation R and translation t with OpenCV axes (x right,
    y down, z forward), pixel centers at (x + 0.5, y + 0.5)."""
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    def __init__(self, width: int, height: int, fx: float, fy: float, cx: float, cy: float,
                 R: npt.ArrayLike, t: npt.ArrayLike) -> None: ...
    @staticmethod
    def from_c2w_opengl(c2w: npt.ArrayLike, width: int, height: int, fx: float, fy: float,
                        cx: float, cy: float) -> Camera:
        """From a Blender/NeRF camera-to-world 4x4 (OpenGL axes: y up, z back)."""
    @staticmethod
    def from_w2c(w2c: npt.ArrayLike, width: int, height: int, fx: float, fy: float, cx: float,
                 cy: float) -> Camera:
        """From a world-to-camera 4x4 with OpenCV axes."""
    @property
    def R(self) -> npt.NDArray[np.float64]:
        """[3, 3] world-to-camera rotation (a copy)."""
    @property
    def t(self) -> npt.NDArray[np.float64]:
        """[3] world-to-camera translation (a copy)."""
    @property
    def center(self) -> npt.NDArray[np.float64]:
        """[3] the camera's position in the world."""
    def downscaled(self, factor: int) -> Camera:
        """The camera of the image scaled by 1/factor."""

class View:
    """One posed image of a dataset."""
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def camera(self) -> Camera: ...
    @property
    def image(self) -> npt.NDArray[np.uint8]:
        """[H, W, C] as training reads it (C = 3, or 4 with alpha)."""

class Dataset:
    """A dataset as training loads it, split into training and test views."""
    @property
    def train(self) -> list[View]: ...
    @property
    def test(self) -> list[View]: ...

class DeviceArray:
    """A parameter group of a model on the GPU, exchanged without a copy through DLPack
    (torch.from_dlpack, cupy.from_dlpack, jax.dlpack.from_dlpack); np.asarray copies it to the
    host."""
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def data_ptr(self) -> int:
        """The device address of the first element."""
    def __dlpack__(self, *, stream: Optional[int] = None, max_version: Optional[tuple[int, int]] = None,
                   dl_device: Optional[tuple[int, int]] = None, copy: Optional[bool] = None) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> npt.NDArray[Any]: ...
    def numpy(self) -> npt.NDArray[np.float32]:
        """A host copy."""

Array = Union[npt.NDArray[np.float32], DeviceArray]

class Model:
    """3D Gaussians as stored (DESIGN.md section 3): means [N, 3], log_scales [N, 3], quats [N, 4]
    (w, x, y, z), raw_opacity [N] (a logit), sh [N, K, 3] (K = (sh_degree + 1)^2, DC first). On
    the CPU the arrays are NumPy views of the model (writes change what it renders); on the GPU
    they are DeviceArrays over the backend's buffers."""
    @property
    def path(self) -> str: ...
    @property
    def sh_degree(self) -> int: ...
    @property
    def device(self) -> str:
        """"cpu" or "cuda"."""
    @property
    def config(self) -> str:
        """The config it renders and evaluates with, as TOML."""
    def __len__(self) -> int: ...
    @property
    def means(self) -> Array: ...
    @property
    def log_scales(self) -> Array: ...
    @property
    def quats(self) -> Array: ...
    @property
    def raw_opacity(self) -> Array: ...
    @property
    def sh(self) -> Array: ...
    @property
    def scales(self) -> npt.NDArray[np.float32]:
        """exp(log_scales) (a host copy)."""
    @property
    def opacities(self) -> npt.NDArray[np.float32]:
        """sigmoid(raw_opacity) (a host copy)."""
    def render(self, camera: Camera, dtype: Any = np.float32) -> npt.NDArray[Any]:
        """[H, W, 3] float32 in [0, 1], or uint8 rounded as splat render's PNGs."""
    def export(self, path: Union[str, Any], format: Optional[str] = None,
               sh_degree: Optional[int] = None) -> None:
        """As splat export: "ply", "splat", "spz" or "compressed-ply" (None: from the name)."""
    def _render(self, camera: Camera, uint8: bool) -> npt.NDArray[Any]: ...
    def _export(self, path: str, format: str, sh_degree: int) -> None: ...
    def _evaluate(self, data: Union[str, Dataset], split: str, config_file: str, config_text: str,
                  sets: list[str]) -> str: ...

class TrainProgress:
    """What the progress line shows after a step."""
    @property
    def iteration(self) -> int: ...
    @property
    def total(self) -> int: ...
    @property
    def loss(self) -> float:
        """Smoothed training loss."""
    @property
    def splats(self) -> int: ...

def load(path: str, config_file: str, config_text: str, sets: list[str]) -> Model: ...
def load_dataset(path: str, config_file: str, config_text: str, sets: list[str]) -> Dataset: ...
def resolve_config(config_file: str, config_text: str, sets: list[str]) -> str: ...
def default_out_dir(data: str) -> str: ...
def read_image(path: str) -> npt.NDArray[np.float32]: ...
def write_png(path: str, pixels: npt.NDArray[np.float32]) -> None: ...
def train(data: str, out: str, resume: str, init_from: str, overwrite: bool, config_file: str,
          config_text: str, sets: list[str],
          progress: Optional[Callable[[TrainProgress], Any]]) -> int: ...
def demo(out: str, config_file: str, config_text: str, sets: list[str],
         progress: Optional[Callable[[TrainProgress], Any]]) -> int: ...
