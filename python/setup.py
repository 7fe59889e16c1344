# python/setup.py — the build step pyproject.toml cannot state: CMake builds the native
# module (target layoutsim_python) from the repository one level up, and the wheel takes
# it as layoutsim._core. LAYOUTSIM_BUILD_DIR names a CMake build folder to use (an
# existing one is reused, so a built tree packs in seconds); by default
# <repository>/build-python. The version is the CMake project's.
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = pathlib.Path(os.environ.get("LAYOUTSIM_BUILD_DIR", ROOT / "build-python")).resolve()


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(layoutsim VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError(f"{ROOT / 'CMakeLists.txt'}: no `project(layoutsim VERSION ...)`")
    return match.group(1)


class CMakeBuild(build_ext):
    """Builds layoutsim._core with CMake instead of compiling sources itself."""

    def build_extension(self, ext):
        if not (BUILD / "CMakeCache.txt").exists():
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release",
                            f"-DPython3_EXECUTABLE={sys.executable}"], check=True)
        subprocess.run(["cmake", "--build", str(BUILD), "--target", "layoutsim_python"], check=True)
        built = sorted((BUILD / "python" / "layoutsim").glob("_core*.so"))
        if not built:
            raise RuntimeError(f"{BUILD / 'python' / 'layoutsim'}: CMake built no _core module")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


# setuptools' own scratch (build/, *.egg-info) goes under the CMake build folder, not
# into the source tree.
SCRATCH = BUILD / "python-dist"
SCRATCH.mkdir(parents=True, exist_ok=True)

setup(
    version=project_version(),
    packages=["layoutsim"],
    ext_modules=[Extension("layoutsim._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(SCRATCH / "build")}, "egg_info": {"egg_base": str(SCRATCH)}},
    zip_safe=False,
)
