# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""FastAPI ingress instrumentation (otelcol-gym's bridge; see nemo/lens/__init__.py).

Gym calls ``instrument_fastapi(app)`` once per server; the SERVER spans and their ASGI
``http send``/``http receive`` children come from OpenTelemetry's FastAPI instrumentor,
applied with its defaults (no excluded spans), as Gym's docs describe.
"""


def instrument_fastapi(app, service_name: str = "nemo-gym") -> None:  # service_name is unused, as in Gym's docs
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app)
