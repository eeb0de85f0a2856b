"""The package itself: importing memplan needs neither PyTorch nor a loaded library, and every
Python file of the repository compiles."""

import glob
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def test_import_memplan_does_not_import_torch():
    code = ("import sys, memplan; assert 'torch' not in sys.modules, 'torch imported'; "
            "assert memplan._library.loaded_path() is None; print('ok')")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_library_not_found_names_where_it_looked(tmp_path):
    code = ("import memplan\ntry:\n    memplan.load(name='libmemplan_none.so')\n"
            "except FileNotFoundError as e:\n    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    env.pop("MEMPLAN_LIBRARY", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "libmemplan_none.so not found" in done.stdout and "MEMPLAN_LIBRARY" in done.stdout


def test_every_python_file_compiles():
    files = [f for pattern in ("python/memplan/*.py", "examples/python/*.py", "bench/*.py",
                               "tests/python/**/*.py")
             for f in glob.glob(os.path.join(REPO, pattern), recursive=True)]
    assert len(files) >= 15
    for path in files:
        with open(path) as f:
            compile(f.read(), path, "exec")
