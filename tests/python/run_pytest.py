"""Runs pytest on the given folder for ctest, or exits 77 (ctest's skip) with the reason when
pytest is not installed (scripts/bootstrap installs Debian's python3-pytest)."""

import sys

try:
    import pytest
except ImportError:
    print("SKIP: pytest is not installed (apt-get install python3-pytest)")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
