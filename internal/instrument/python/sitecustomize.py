# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""`otelcol-gym instrument`'s hook in every Python process the command starts.

``otelcol-gym instrument`` puts this file's directory first on PYTHONPATH, so Python
imports it at start-up in every process, and every Gym server inherits it from
``gym env start``. It acts only in Gym's own processes (the ``gym`` CLI and each server's
``app.py``; otelcol_gym_instrument/role.py), never in Ray's or anyone else's, and there
gives the richest telemetry this process's Python can give (otelcol_gym_instrument/choice.py):

- Gym's own telemetry, through the installed nemo-lens when it has what this Gym imports,
  else through otelcol-gym's nemo-lens bridge when the installed nemo-lens lacks it;
- else the generic OpenTelemetry instrumentation (FastAPI, ASGI, aiohttp client), with
  one ``service.name`` per process (otelcol_gym_instrument/generic.py).

Each process decides for itself (a Gym server may run from a venv of its own), and says so
on stderr in one line when it decides otherwise than ``otelcol-gym instrument`` announced
for the command. Nothing here may take a Gym process down: a failure is one line on stderr.
Another sitecustomize further along sys.path (a distribution's own) still runs after this one.
"""

import os
import sys


#: What this process got: "gym", "bridge", "generic", "off", "notgym", or None (not a Gym process).
TELEMETRY = None


def _instrument():
    global TELEMETRY
    from otelcol_gym_instrument import role

    name = role.of_this_process()
    if name is None:
        return
    from otelcol_gym_instrument import choice, generic

    bridge_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bridge")
    decided = choice.decide(os.environ.get(choice.REQUESTED_ENV, "auto"), bridge_dir)
    TELEMETRY = decided.telemetry
    announced = os.environ.get(choice.ANNOUNCED_ENV, "")
    if announced and decided.telemetry != announced:
        sys.stderr.write("otelcol-gym instrument: %s (%s): %s\n" % (name, sys.executable, decided.summary))
    if decided.telemetry in (choice.GYM, choice.BRIDGE):
        os.environ[choice.GYM_ENABLED_ENV] = "1"
    elif decided.telemetry == choice.GENERIC:
        os.environ[choice.GYM_ENABLED_ENV] = "0"  # never Gym's own and the generic instrumentation at once
        generic.setup(name)


def _next_sitecustomize():
    """Runs the first other sitecustomize.py on sys.path, which this file shadows."""
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        path = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("_otelcol_gym_next_sitecustomize", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


try:
    _instrument()
except Exception as exc:  # a telemetry failure must not take a Gym process down
    sys.stderr.write("otelcol-gym instrument: no telemetry in this process (%s): %s: %s\n" % (sys.executable, type(exc).__name__, exc))
try:
    _next_sitecustomize()
except Exception as exc:
    sys.stderr.write("otelcol-gym instrument: the next sitecustomize failed: %s: %s\n" % (type(exc).__name__, exc))
