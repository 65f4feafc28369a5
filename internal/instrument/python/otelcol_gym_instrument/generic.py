# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""The generic OpenTelemetry instrumentation of one Gym process (see choice.py for when).

What ``opentelemetry-instrument`` does with the distro, without needing the distro (which
``nemo-gym[telemetry]`` does not bring): a TracerProvider with a BatchSpanProcessor (SDK
defaults, ``OTEL_BSP_*``) over the OTLP/HTTP exporter (``OTEL_EXPORTER_OTLP_*``, which
``otelcol-gym instrument`` sets), and OpenTelemetry's FastAPI (with its ASGI spans) and
aiohttp-client instrumentation, applied before Gym creates its app or its client session.
W3C trace context is the SDK's default propagator (``OTEL_PROPAGATORS``).

One ``service.name`` per process, ``<OTEL_SERVICE_NAME>/<role>`` (``nemo-gym/openai_model``,
``nemo-gym/orchestrator``, ``nemo-gym/gym-eval-run``): Gym's processes share one
environment, and with one name for all a service map has no edge to draw. The resource
also carries ``host.name``, ``process.pid`` and, when the run has one
(``NEMO_GYM_OTEL_RUN_ID``, ``--run-id``), ``nemo.run.id``, as Gym's own telemetry does.
"""

import os
import socket

DEFAULT_GROUP = "nemo-gym"


def resource_attributes(role, environ=None):
    environ = os.environ if environ is None else environ
    group = environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_GROUP
    attrs = {
        "service.name": "%s/%s" % (group, role),
        "host.name": socket.gethostname(),
        "process.pid": os.getpid(),
    }
    run_id = environ.get("NEMO_GYM_OTEL_RUN_ID", "").strip()
    if run_id:
        attrs["nemo.run.id"] = run_id
    return attrs


def setup(role):
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create(resource_attributes(role)))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)  # shut down (its spans flushed) at exit by the SDK
    FastAPIInstrumentor().instrument()
    AioHttpClientInstrumentor().instrument()
