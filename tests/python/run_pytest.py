"""Runs pytest on the given folder for ctest. Exits 77 (ctest's skip) with the reason when pytest
is not installed (scripts/bootstrap installs Debian's python3-pytest) or when the tests skipped
themselves whole (the GPU tests without CUDA PyTorch)."""

import sys

try:
    import pytest
except ImportError:
    print("SKIP: pytest is not installed (apt-get install python3-pytest)")
    sys.exit(77)

status = pytest.main(["-q", "-rs", "-p", "no:cacheprovider", *sys.argv[1:]])
if status == pytest.ExitCode.NO_TESTS_COLLECTED:  # a module skipped whole (no PyTorch, no GPU)
    sys.exit(77)
sys.exit(status)
