#!/usr/bin/env bash
# Trace your Gym run: NeMo Gym as the package index has it, its spans into otelcol-gym, the viewer.
# From a clone of otelcol-gym after `make build`, with a model behind an OpenAI-compatible API:
#   MODEL_URL=http://127.0.0.1:8000/v1 MODEL=my-model docs/trace-your-gym-run.sh
# It needs python3.13 on PATH (or PYTHON=/path/to/python3.13) and curl; it writes gym-venv/,
# gym-venvs/, captures/, gym-output/, outputs/ (Hydra's) and gym-env-start.log where it runs.
# (README "Trace your Gym run"; e2e/realgym_userinstall_test.go runs this file as it is.)
set -euo pipefail
set -m  # Gym and the collector in process groups of their own, stopped as Ctrl-C would stop them
otelcol_gym=${OTELCOL_GYM:-$PWD/bin/otelcol-gym}
venv=${GYM_VENV:-$PWD/gym-venv}
export NEMO_GYM_CAPTURE_DIR=${NEMO_GYM_CAPTURE_DIR:-$PWD/captures}  # the collector's = Gym's model_call_capture_dir

# 1. NeMo Gym 0.7.0 from the package index, in a venv of its own (once). It asks for
#    Python >= 3.13.14 and runs on 3.13.0: hence --ignore-requires-python.
if [ ! -x "$venv/bin/gym" ]; then
  "${PYTHON:-python3.13}" -m venv "$venv"
  "$venv/bin/pip" install --ignore-requires-python "nemo-gym[telemetry]==0.7.0"
fi
if [ "${1:-}" = install ]; then exit 0; fi
export PATH="$venv/bin:$PATH"
: "${MODEL_URL:?the OpenAI-compatible API of your model, e.g. http://127.0.0.1:8000/v1}" "${MODEL:?the model name}"

# 2. The collector: OTLP on 127.0.0.1:4317 and :4318, the viewer on http://127.0.0.1:13180/.
#    Ctrl-C (or the script's end) stops Gym, then the collector, which first writes every span it holds.
"$otelcol_gym" & collector=$!
gym=
stop() {
  if [ -n "$gym" ]; then kill -INT -"$gym" && wait "$gym" || true; fi
  kill -TERM "$collector" && wait "$collector"
}
trap stop EXIT
trap 'exit 0' INT TERM
until curl -sf http://127.0.0.1:13133/ >/dev/null; do kill -0 "$collector"; sleep 1; done

# 3. Gym's servers, traced. Gym runs each server from <uv_venv_dir>/<type>/<name>/.venv, which
#    it would make with uv; skip_venv_if_present=true runs each from this venv instead.
for server in resources_servers/example_single_tool_call responses_api_agents/simple_agent \
  responses_api_models/openai_model environment_servers/legacy_agent; do
  mkdir -p "gym-venvs/$server" && ln -sfn "$venv" "gym-venvs/$server/.venv"
done
"$otelcol_gym" instrument -- gym env start --resources-server example_single_tool_call --model-type openai_model \
  --model-url "$MODEL_URL" --model-api-key "${MODEL_API_KEY:-dummy}" --model "$MODEL" \
  ++skip_venv_if_present=true ++uv_venv_dir="$PWD/gym-venvs" \
  ++observability_enabled=true ++model_call_capture_dir="$NEMO_GYM_CAPTURE_DIR" >gym-env-start.log 2>&1 &
gym=$!
until grep -q "servers ready" gym-env-start.log; do
  kill -0 "$gym" || { tail -n 20 gym-env-start.log; exit 1; }
  sleep 2
done
grep "^otelcol-gym instrument" gym-env-start.log || true  # which telemetry Gym got, and why

# 4. Rollouts: Gym's example tasks, twice each.
"$otelcol_gym" instrument -- gym eval run --no-serve --agent example_single_tool_call_simple_agent \
  --input resources_servers/example_single_tool_call/data/example.jsonl --output gym-output/rollouts.jsonl \
  --num-repeats 2 --concurrency 4 ++observability_enabled=true ++model_call_capture_dir="$NEMO_GYM_CAPTURE_DIR"
kill -INT -"$gym" && wait "$gym" || true  # Gym stops its servers and Ray, which send their last spans
gym=

# 5. The viewer: each rollout's spans beside its model calls. Ctrl-C stops the collector.
echo "otelcol-gym: the viewer is at http://127.0.0.1:13180/ (capture dir $NEMO_GYM_CAPTURE_DIR); Ctrl-C stops it"
wait "$collector"
