"""What the check_*.py scripts of this folder share (they run strata on the
workloads; the workloads themselves import nothing from here)."""
import os
import subprocess

SKIP = 77  # ctest's SKIP_RETURN_CODE for these checks


def framework_python(tool, module, python="", python_env=""):
    """The Python to run the workloads with: `python`, or the one named by the
    environment variable `python_env`; None (after saying why the check is
    skipped) when it is unset or cannot import `module`."""
    if python_env:
        python = os.environ.get(python_env, "")
        if not python:
            print(f"{tool}: {python_env} is not set: skipped")
            return None
    try:
        can = subprocess.run([python, "-c", "import " + module], capture_output=True).returncode == 0
    except OSError:
        can = False
    if not can:
        print(f"{tool}: {python} cannot import {module}: skipped")
        return None
    return python
