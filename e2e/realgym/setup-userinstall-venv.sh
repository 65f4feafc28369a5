#!/usr/bin/env bash
# Prints the path of the venv that `make test-realgym`'s user-install mode runs NeMo Gym from,
# making it first when it is not cached yet (issue #34): exactly as docs/trace-your-gym-run.sh
# makes it for a user, by running that script's step 1 (its lines from "# 1." to "# 2.":
# `python3.13 -m venv gym-venv`, `pip install --ignore-requires-python "nemo-gym[telemetry]==0.7.0"`,
# nothing pinned, so it brings what the package index gives a user: nemo-lens 0.1.0 among it)
# with Python 3.13.0 from pyenv, in a directory of the cache instead of the user's.
#
# The venv is <dir>/gym-venv, <dir> being
#   ${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-gym/userinstall-<key>
# where <key> is a hash of that step and of this script: a change of either makes a new venv; a
# change elsewhere in the quickstart does not (the install takes about 6 min). It counts as made
# only once <dir>/.complete exists. Everything is logged to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
script="$here/../../docs/trace-your-gym-run.sh"
step1="$(sed -n '/^# 1\./,/^# 2\./p' "$script" | sed '$d')"
case "$step1" in
*gym-venv*"pip install"*) ;;
*) echo "user-install venv: no step 1 (\"# 1.\" ... pip install ... \"# 2.\") in $script" >&2; exit 1 ;;
esac
key="$( (echo "$step1"; cat "$here/setup-userinstall-venv.sh") | sha256sum | cut -c1-16)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-gym"
dir="$cache/userinstall-$key"

mkdir -p "$cache"
exec 9>"$dir.lock"
flock 9 # one setup at a time; a second caller waits and then finds the venv made

if [ -f "$dir/.complete" ]; then
  echo "user-install venv: cached at $dir/gym-venv" >&2
  echo "$dir/gym-venv"
  exit 0
fi

start=$(date +%s)
echo "user-install venv: making $dir/gym-venv with the quickstart's step 1:" >&2
echo "$step1" >&2
rm -rf "$dir"
mkdir -p "$dir"
(cd "$dir" && PYENV_VERSION=3.13.0 bash -euc "$step1") >&2
"$dir/gym-venv/bin/python" -c 'import sys; assert sys.version_info[:2] == (3, 13), sys.version' >&2
"$dir/gym-venv/bin/python" -m pip list --format=freeze 2>/dev/null | grep -iE '^(nemo-gym|nemo-lens|opentelemetry-sdk)==' >&2

touch "$dir/.complete"
echo "user-install venv: made in $(($(date +%s) - start))s" >&2
echo "$dir/gym-venv"
