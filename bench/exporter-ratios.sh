#!/usr/bin/env bash
# Runs BenchmarkExport of the gymspans exporter against contrib fileexporter in
# interleaved rounds (each benchmark once per round, in its own process) and
# prints, per gymspans variant, the median over the rounds of its ratio to
# fileexporter's figure in the same round: the machine's drift between rounds
# cancels out of a ratio taken within one. The variants that fsync every
# second (gymspans's default flush_interval) are also given against
# fileexporter_json_synced, fileexporter with its dir synced as often, in the
# rows marked @synced.
#
# usage: bench/exporter-ratios.sh [rounds (default 6)] [dir to write in (default $TMPDIR or /tmp)]
set -euo pipefail
rounds=${1:-6}
dir=${2:-${TMPDIR:-/tmp}}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)/gse.test
out=$(mktemp)
trap 'rm -rf "$(dirname "$bin")" "$out"' EXIT
(cd "$root" && go test -c -o "$bin" ./exporter/gymspansexporter/)

names="gymspans_console gymspans_console_flush1h gymspans_console_lockhold0 gymspans_otlp_json gymspans_otlp_json_no_combined gymspans_otlp_json_no_combined_flush1h fileexporter_json fileexporter_json_synced"
# The write floors (one caller): console's bytes in its layout with no
# encoding and no locking, without and with the flusher's syncfs.
floors="per_file per_file_synced"
for r in $(seq "$rounds"); do
	for callers in "" _4callers; do
		for n in $names; do
			TMPDIR=$dir "$bin" -test.run XXX -test.bench "BenchmarkExport/$n$callers\$" \
				-test.benchtime 1s -test.count 1 | awk -v r="$r" '/^Benchmark/ { print r, $0 }' >>"$out"
		done
	done
	for f in $floors; do
		TMPDIR=$dir "$bin" -test.run XXX -test.bench "BenchmarkWriteFloor/console/$f\$" \
			-test.benchtime 1s -test.count 1 | awk -v r="$r" '/^Benchmark/ { sub(/^BenchmarkWriteFloor\/console\//, "BenchmarkWriteFloor/floor_console_"); print r, $0 }' >>"$out"
	done
done

# Input lines: round, benchmark name, then value-unit pairs. Emit "variant unit ratio" per round, then
# the median and range of each variant and unit.
awk '
BEGIN { nu = split("spans/s spans/cpu-s", us, " ") }
{
	split($2, p, "/"); name = p[2]; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) for (k = 1; k <= nu; k++) if ($(i+1) == us[k]) v[$1, name, us[k]] = $i
	names[name] = 1; rounds[$1] = 1
}
# ratios prints, per unit and round, n over base as "label unit ratio".
function ratios(n, base, label,    k, r) {
	for (k = 1; k <= nu; k++) for (r in rounds) if ((r, n, us[k]) in v && (r, base, us[k]) in v)
		print label, us[k], v[r, n, us[k]] / v[r, base, us[k]]
}
END {
	for (n in names) {
		if (n ~ /^fileexporter_json(_4callers)?$/) continue
		four = (n ~ /_4callers$/) ? "_4callers" : ""
		ratios(n, "fileexporter_json" four, n)
		# The variants that fsync every second, also against fileexporter
		# synced as often (equal durability).
		if (n !~ /^fileexporter|flush1h|^floor/) ratios(n, "fileexporter_json_synced" four, n "@synced")
	}
}' "$out" | sort -k1,1 -k2,2 -k3,3g | awk '
function flush() {
	if (c == 0) return
	m = (c % 2) ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2
	printf "%-42s %-12s median %.2fx  (%.2f-%.2f, %d rounds)\n", key1, key2, m, x[1], x[c], c
}
$1 != key1 || $2 != key2 { flush(); key1 = $1; key2 = $2; c = 0 }
{ x[++c] = $3 }
END { flush() }'
