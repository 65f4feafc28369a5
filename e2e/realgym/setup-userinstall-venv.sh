#!/usr/bin/env bash
# Prints the path of the venv that `make test-realgym`'s user-install mode runs NeMo Gym from,
# making it first when it is not cached yet (issue #34): exactly as docs/trace-your-gym-run.sh
# makes it for a user (its step 1, `docs/trace-your-gym-run.sh install`: Python 3.13.0 from
# pyenv, `pip install --ignore-requires-python "nemo-gym[telemetry]==0.7.0"`, nothing pinned,
# so it brings what the package index gives a user: nemo-lens 0.1.0 among it).
#
# The venv lives outside the repo, under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-gym/userinstall-<key>
# where <key> is a hash of the script's step 1 (from "# 1." to the line that ends `install`)
# and of this script: a change of either makes a new venv; a change elsewhere in the script
# does not (the install takes about 6 min). A venv counts as made only once its `.complete`
# marker exists. Everything is logged to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
script="$here/../../docs/trace-your-gym-run.sh"
step1="$(sed -n '/^# 1\./,/= install ]/p' "$script")"
case "$step1" in
*"pip\" install"*"= install ]"*) ;;
*) echo "user-install venv: no step 1 (\"# 1.\" ... pip install ... = install ]) in $script" >&2; exit 1 ;;
esac
key="$( (echo "$step1"; cat "$here/setup-userinstall-venv.sh") | sha256sum | cut -c1-16)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-gym"
venv="$cache/userinstall-$key"

mkdir -p "$cache"
exec 9>"$venv.lock"
flock 9 # one setup at a time; a second caller waits and then finds the venv made

if [ -f "$venv/.complete" ]; then
  echo "user-install venv: cached at $venv" >&2
  echo "$venv"
  exit 0
fi

start=$(date +%s)
echo "user-install venv: making $venv with docs/trace-your-gym-run.sh install" >&2
rm -rf "$venv"
PYENV_VERSION=3.13.0 GYM_VENV="$venv" bash "$script" install >&2
"$venv/bin/python" -c 'import sys; assert sys.version_info[:2] == (3, 13), sys.version' >&2
"$venv/bin/python" -m pip list --format=freeze 2>/dev/null | grep -iE '^(nemo-gym|nemo-lens|opentelemetry-sdk)==' >&2

touch "$venv/.complete"
echo "user-install venv: made in $(($(date +%s) - start))s" >&2
echo "$venv"
