# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""Generic OpenTelemetry auto-instrumentation of NeMo Gym's processes (issue #17, mode 1).

On PYTHONPATH, Python imports this file at start-up in every process, and every Gym
server inherits PYTHONPATH from ``gym env start``. It does what ``opentelemetry-instrument``
does (the distro's ``initialize()``: the SDK configured from the OTEL_* environment, and
every installed instrumentor, here FastAPI and aiohttp-client, applied), with two
choices of its own:

- Only Gym's processes are instrumented: the ``gym`` CLI and each server's ``app.py``.
  The processes Ray starts (raylet, dashboard, workers) are left alone.
- Each process gets its own ``service.name``, ``<OTEL_SERVICE_NAME>/<what it is>``: the
  server's directory for a server (``nemo-gym/openai_model``), ``orchestrator`` for
  ``gym env start``, ``gym-eval-run`` for ``gym eval run``. With
  ``opentelemetry-instrument gym env start ...`` alone every process reports the same
  service.name (they share one environment), and a service map has no edge to draw.
"""

import os
import sys


def _role():
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "app.py":
        return os.path.basename(os.path.dirname(os.path.abspath(argv0)))
    if os.path.basename(argv0) == "gym":
        words = [a for a in sys.argv[1:3] if not a.startswith("-")]
        if words[:2] == ["env", "start"]:
            return "orchestrator"
        return "gym-" + "-".join(words)
    return None


_ROLE = _role()
if _ROLE is not None:
    _group = os.environ.setdefault("OTELCOL_GYM_SERVICE_GROUP", os.environ.get("OTEL_SERVICE_NAME") or "nemo-gym")
    os.environ["OTEL_SERVICE_NAME"] = f"{_group}/{_ROLE}"
    from opentelemetry.instrumentation.auto_instrumentation import initialize

    initialize()
