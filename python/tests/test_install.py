"""The package as pip installed it (make test installs it into its .venv): `import qmm` loads the
libqmm.so installed with the package, and the `qmm` command runs the tool installed with it. Run in
a child process without QMM_LIBRARY or PYTHONPATH, so the tests' own settings do not hide a broken
install."""

import os
import subprocess
import sys

import pytest


def clean_env():
    env = dict(os.environ)
    env.pop("QMM_LIBRARY", None)
    env.pop("PYTHONPATH", None)
    return env


def test_installed_package_loads_its_own_library(tmp_path):
    r = subprocess.run([sys.executable, "-c", "import qmm; print(qmm.library_path()); print(qmm.Context().describe())"],
                       capture_output=True, text=True, env=clean_env(), cwd=tmp_path)
    if r.returncode != 0 and "No module named 'qmm'" in r.stderr:
        pytest.skip(f"the package is not installed in {sys.executable} (pip install .)")
    assert r.returncode == 0, r.stderr
    lib_path = r.stdout.splitlines()[0]
    assert os.path.basename(lib_path) == "libqmm.so" and "site-packages" in lib_path, lib_path


def test_qmm_command_is_installed(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "qmm")
    if not os.path.exists(exe):
        pytest.skip(f"no qmm script beside {sys.executable} (pip install .)")
    r = subprocess.run([exe, "--version"], capture_output=True, text=True, env=clean_env(), cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("qmm "), r.stderr
