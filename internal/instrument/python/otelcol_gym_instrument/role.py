# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""Which Gym process this is, named as its service is (see otelcol_gym_instrument/__init__.py).

- A Gym server: ``<venv python> <server dir>/app.py``, started by ``gym env start`` with
  ``NEMO_GYM_CONFIG_PATH`` set (its config name); named for its directory
  (``openai_model``, ``simple_agent``).
- The Gym CLI: ``gym`` or ``ng`` (and the legacy ``ng_*``/``nemo_gym_*`` commands):
  ``orchestrator`` for ``gym env start``, else ``gym-<its words>`` (``gym-eval-run``).
- Anything else (Ray's raylet, dashboard and workers, other programs): None.
"""

import os
import sys

GYM_CLIS = ("gym", "ng")
LEGACY_CLI_PREFIXES = ("ng_", "nemo_gym_")
SERVER_CONFIG_ENV = "NEMO_GYM_CONFIG_PATH"


def of_this_process(argv=None, environ=None):
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    argv0 = argv[0] if argv else ""
    base = os.path.basename(argv0)
    if base == "app.py" and environ.get(SERVER_CONFIG_ENV):
        return os.path.basename(os.path.dirname(os.path.abspath(argv0)))
    if base in GYM_CLIS:
        words = [a for a in argv[1:3] if not a.startswith("-")]
        if words[:2] == ["env", "start"]:
            return "orchestrator"
        return "-".join(["gym"] + words)
    if base.startswith(LEGACY_CLI_PREFIXES):
        return base
    return None
