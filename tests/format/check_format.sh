#!/usr/bin/env bash
# The format.clang_format test: fails when any source differs from what .clang-format asks for.
# Skips (exit 77) without clang-format, or with a major version other than the one the tree is
# formatted with: another version formats some constructs differently, and that is not a defect.
set -uo pipefail
root=$1
wanted_major=14
clang_format=$(command -v "clang-format-$wanted_major" || command -v clang-format || true)
if [[ -z $clang_format ]]; then
  echo "SKIP: clang-format is not installed"
  exit 77
fi
major=$("$clang_format" --version | sed -n -E 's/.*version ([0-9]+)\..*/\1/p')
if [[ $major != "$wanted_major" ]]; then
  echo "SKIP: $clang_format is version $major; the tree is formatted with clang-format $wanted_major"
  exit 77
fi
if ! CLANG_FORMAT=$clang_format "$root/scripts/format" --check; then
  echo "FAIL: the files above are not formatted; run scripts/format"
  exit 1
fi
echo "every source is formatted"
