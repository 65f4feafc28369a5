#!/usr/bin/env bash
# otelcol-gym replay on a 1 GiB OTLP/JSON lines file (issue #56, acceptance 4): peak RSS and spans/s.
# One gymsim run (200 rollouts, default preset) through upstream's file exporter (e2e's oracle config),
# then copies of it until 1 GiB, each a run of its own (run id, trace ids, times 60 s apart:
# replay_copies.py), replayed with /usr/bin/time -v. Usage, after make build: bench/replay-1gb.sh [WORKDIR]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
cd "$work"
rm -rf live job out && mkdir -p live job/otel out
sed -e 's/${HEALTH}/23133/; s/${GRPC}/24317/' -e "s#\${CAPTURE_DIR}#$work/live#g" \
  "$repo/e2e/testdata/replay_oracle_collector.yaml" > collector.yaml
"$repo/bin/otelcol-gym" --config collector.yaml > collector.log 2>&1 & pid=$!
until curl -sf http://127.0.0.1:23133/ >/dev/null; do kill -0 $pid; sleep 0.2; done
"$repo/bin/gymsim" --rollouts=200 --concurrency=16 --preset=default --run-id=benchrun0000 --retry-rate=0.1 \
  --error-rate=0.05 --batch-delay=200ms --blocking --capture-dir="$work/live" --endpoint=127.0.0.1:24317 > gymsim.log 2>&1
kill $pid; wait $pid || true
python3 "$repo/bench/replay_copies.py" job/otel/traces.jsonl big.jsonl $((1024*1024*1024))
/usr/bin/time -v "$repo/bin/otelcol-gym" replay --capture-dir out big.jsonl > replay.out 2> time.txt
tr "\r" "\n" < time.txt | grep -E "read from|Maximum resident|Elapsed"
