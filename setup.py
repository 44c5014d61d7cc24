"""Builds the extension splat._splat with the project's CMake build (its target _splat, which
links the same library as the `splat` command): CUDA where nvcc is found, as for the command, the
CPU backend otherwise.

Environment:
  SPLAT_BUILD_DIR  a CMake build directory of this tree to build the target in, reusing what it has
                   compiled (CI passes build/); configured here first if it holds no build yet.
                   Without it, a build directory of its own under build-python/.
  CMAKE_ARGS       more arguments for the configure step, e.g. -DSPLAT_CUDA=OFF.
"""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        given = os.environ.get("SPLAT_BUILD_DIR")
        build = Path(given).resolve() if given else Path(self.build_temp).resolve() / "cmake"
        configure = ["cmake", "-S", str(ROOT), "-B", str(build), "-DSPLAT_PYTHON=ON",
                     f"-DPython3_EXECUTABLE={sys.executable}"]
        if not (build / "CMakeCache.txt").exists():
            configure += ["-DCMAKE_BUILD_TYPE=Release", "-DSPLAT_TESTS=OFF"]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
        try:  # pip's pybind11 (e.g. beside PyTorch) where Debian's pybind11-dev is absent
            import pybind11
            configure.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
        except ImportError:
            pass
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "_splat",
                        "-j", str(os.cpu_count() or 1)], check=True)
        built = build / ("_splat" + sysconfig.get_config_var("EXT_SUFFIX"))
        if not built.exists():
            others = ", ".join(p.name for p in build.glob("_splat.*")) or "none"
            raise RuntimeError(f"{build}: no {built.name} for this Python (built: {others}); its "
                               "Python is found by CMake's FindPython3 (Python3_EXECUTABLE)")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(
    ext_modules=[Extension("splat._splat", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-python"}},
)
