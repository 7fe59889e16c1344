"""The `pip install ./python` path, end to end and offline: builds the wheel with
Debian's setuptools and wheel (no build isolation, no index) against this build tree
(LAYOUTSIM_BUILD_DIR), installs it into a scratch folder and imports it from there.

Usage: python3 tests/python_wheel.py SOURCE_DIR BUILD_DIR SCRATCH_DIR
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

source, build, scratch = (pathlib.Path(p).resolve() for p in sys.argv[1:4])
shutil.rmtree(scratch, ignore_errors=True)
wheels, site = scratch / "wheels", scratch / "site"
env = dict(os.environ, LAYOUTSIM_BUILD_DIR=str(build), PIP_DISABLE_PIP_VERSION_CHECK="1")
pip = [sys.executable, "-m", "pip"]
subprocess.run(pip + ["wheel", "--no-build-isolation", "--no-deps", "--no-index", "-q", "-w", str(wheels), str(source / "python")],
               check=True, env=env)
built = sorted(wheels.glob("layoutsim-*.whl"))
assert len(built) == 1, built
names = zipfile.ZipFile(built[0]).namelist()
assert "layoutsim/__init__.py" in names, names
assert any(n.startswith("layoutsim/_core") and n.endswith(".so") for n in names), names
subprocess.run(pip + ["install", "--no-deps", "--no-index", "-q", "--target", str(site), str(built[0])], check=True, env=env)
# The installed copy, not the build tree's, from a folder where no layoutsim/ lies.
probe = ("import json, layoutsim; print(json.dumps([layoutsim.__file__, layoutsim.__version__, "
         "layoutsim.run()['step_time_s']]))")
out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=scratch,
                     env=dict(env, PYTHONPATH=str(site))).stdout
where, version, step = json.loads(out)
assert pathlib.Path(where).resolve().is_relative_to(site), where
cmake_version = next(l for l in (source / "CMakeLists.txt").read_text().splitlines() if l.startswith("project(layoutsim VERSION"))
assert version in cmake_version, (version, cmake_version)
assert step > 0
print(f"python_wheel: {built[0].name} installs and runs (step {step:.4g} s)")
