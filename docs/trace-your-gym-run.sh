#!/usr/bin/env bash
# In a clone after `make build`: MODEL_URL=http://127.0.0.1:8000/v1 MODEL=my-model [PYTHON=python3.13] docs/trace-your-gym-run.sh
set -eum  # m: Gym and the collector in process groups of their own, stopped as Ctrl-C stops them
export NEMO_GYM_CAPTURE_DIR=$PWD/captures PATH=$PWD/gym-venv/bin:$PATH
# 1. Gym from the package index, once (nemo-gym 0.7.0 asks for Python 3.13.14 and runs on 3.13.0)
[ -x gym-venv/bin/gym ] || { "${PYTHON:=python3.13}" -c 'import sys; assert sys.version_info[:2] == (3, 13)' ||
  { echo "no Python 3.13 at '$PYTHON': name one, e.g. PYTHON=\$(pyenv root)/versions/3.13.0/bin/python" >&2; exit 1; }
  "$PYTHON" -m venv gym-venv && gym-venv/bin/pip install --ignore-requires-python "nemo-gym[telemetry]==0.7.0"; }
# 2. The collector; Gym's servers from this venv (Gym would make one per server with uv), traced
bin/otelcol-gym --set=extensions::gymview::gym_output=$PWD/gym-output & collector=$! gym=; trap 'exit 0' INT TERM
trap 'set +e; [ -z "$gym" ] || { kill -INT -$gym; wait $gym; }; kill $collector; wait $collector' EXIT
until curl -sf http://127.0.0.1:13133/ >/dev/null; do kill -0 $collector; sleep 1; done
for s in resources_servers/example_single_tool_call responses_api_agents/simple_agent \
  responses_api_models/openai_model environment_servers/legacy_agent; do
  mkdir -p gym-venvs/$s && ln -sfn $PWD/gym-venv gym-venvs/$s/.venv; done
bin/otelcol-gym instrument -- gym env start --resources-server example_single_tool_call --model-type openai_model \
  --model-url $MODEL_URL --model-api-key dummy --model $MODEL ++skip_venv_if_present=true ++uv_venv_dir=$PWD/gym-venvs \
  ++observability_enabled=true ++model_call_capture_dir=$NEMO_GYM_CAPTURE_DIR >gym.log 2>&1 & gym=$!
until grep -q "servers ready" gym.log; do kill -0 $gym; sleep 2; done; grep "^otelcol-gym" gym.log
# 3. Rollouts: Gym's example tasks, twice each; then Gym stops (its servers send their last spans)
bin/otelcol-gym instrument -- gym eval run --no-serve --agent example_single_tool_call_simple_agent --num-repeats 2 \
  --input resources_servers/example_single_tool_call/data/example.jsonl --output gym-output/rollouts.jsonl \
  ++observability_enabled=true ++model_call_capture_dir=$NEMO_GYM_CAPTURE_DIR
kill -INT -$gym; wait $gym || true; gym=
# 4. The viewer: each rollout's spans beside its model calls, until Ctrl-C
echo "otelcol-gym: the viewer is at http://127.0.0.1:13180/ (capture dir $NEMO_GYM_CAPTURE_DIR)"; wait $collector
