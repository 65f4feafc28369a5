# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""The Python side of ``otelcol-gym instrument``, shipped inside the otelcol-gym binary.

    role.py     which Gym process this is (the gym CLI, a server's app.py), or none
    choice.py   the richest telemetry this process's Python can give, and why
    generic.py  the generic OpenTelemetry instrumentation (FastAPI, ASGI, aiohttp client)

``sitecustomize.py`` (beside this package) applies them in every Gym process;
``otelcol_gym_probe.py`` asks choice.py on behalf of ``otelcol-gym instrument`` before it
starts the command. Standard library only at import; OpenTelemetry only where chosen.
"""
