#!/usr/bin/env bash
# Prints the path of the Python venv the real-Gym tests run Arize Phoenix from (issue #36),
# making it first when it is not cached yet.
#
# The venv lives outside the repo, under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-gym/mlflow-<key>
# where <key> is a hash of requirements.txt and of this script: a change of pins or of the
# way they are installed makes a new venv, an unchanged pair reuses the cached one. A venv
# counts as made only once its `.complete` marker exists, so an interrupted setup is redone.
#
# It is a Python 3.13.0 venv (pyenv's, as on every machine of the team and CI) with every
# pinned package installed with --no-deps (the pins are a complete, resolved set).
# Everything is logged to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
pins="$here/requirements.txt"
key="$(cat "$pins" "$here/setup-venv.sh" | sha256sum | cut -c1-16)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-gym"
venv="$cache/mlflow-$key"

mkdir -p "$cache"
exec 9>"$venv.lock"
flock 9 # one setup at a time; a second caller waits and then finds the venv made

if [ -f "$venv/.complete" ]; then
  echo "mlflow venv: cached at $venv" >&2
  echo "$venv"
  exit 0
fi

start=$(date +%s)
echo "mlflow venv: making $venv" >&2
rm -rf "$venv"
PYENV_VERSION=3.13.0 python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -c 'import sys; assert sys.version_info[:3] == (3, 13, 0), sys.version' >&2

"$py" -m pip install --quiet --no-deps -r "$pins" >&2
"$py" -m pip check >&2

touch "$venv/.complete"
echo "mlflow venv: made in $(($(date +%s) - start))s" >&2
echo "$venv"
