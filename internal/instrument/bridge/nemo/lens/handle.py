# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""The provider layer: one ``setup_telemetry`` per process (otelcol-gym's bridge; see nemo/lens/__init__.py).

``setup_telemetry(config, resource_attributes=...)`` builds this process's resource
(``service.name``, ``service.instance.id`` = ``<run id>-rank<rank>``, ``nemo.run.id``,
``host.name``, ``process.pid``, what Gym passes, merged over the SDK defaults and
``OTEL_RESOURCE_ATTRIBUTES``), registers a TracerProvider with a BatchSpanProcessor (SDK
defaults: ``OTEL_BSP_*``) over the OTLP exporter (``http/protobuf`` or ``http/json``; gRPC
is asked for by default but its exporter is not installed, so HTTP is used, the fallback
Gym's docs describe) or the console exporter (one ``ReadableSpan.to_json`` line a span),
and a MeterProvider with a periodic OTLP reader, and enables the span groups its spec
resolves to. A second enabled call in one process raises; ``_INITIALIZED`` says whether
one happened (Gym reads it).
"""

import os
import socket
import threading
from typing import Optional

from opentelemetry import metrics as _metrics
from opentelemetry import trace as _trace
from opentelemetry.sdk.resources import Resource

from nemo.lens import groups, state

_INITIALIZED = False
_lock = threading.Lock()


class TelemetryHandle:
    def __init__(self, tracer, meter, is_exporting: bool, tracer_provider=None, meter_provider=None) -> None:
        self._tracer = tracer
        self._meter = meter
        self.is_exporting = is_exporting
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._shut = False

    @property
    def tracer(self):
        return self._tracer

    @property
    def meter(self):
        return self._meter

    def shutdown(self, timeout_ms: int = 5000) -> None:
        if self._shut:
            return
        self._shut = True
        if self._tracer_provider is not None:
            self._tracer_provider.shutdown()
        if self._meter_provider is not None:
            self._meter_provider.shutdown(timeout_millis=timeout_ms)


def _span_exporter(config):
    if config.exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(formatter=lambda span: span.to_json(indent=None) + "\n")
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc"
    if protocol.strip() == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter()
        except ImportError:
            pass
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def _meter_provider(config, resource):
    if not config.metrics_enabled or config.exporter != "otlp":
        return None
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    return MeterProvider(resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())])


def setup_telemetry(config, rank: int = 0, world_size: int = 1, resource_attributes: Optional[dict] = None):
    global _INITIALIZED
    with _lock:
        if not config.enabled:
            return TelemetryHandle(_trace.get_tracer("nemo.lens"), _metrics.get_meter("nemo.lens"), False)
        if _INITIALIZED:
            raise RuntimeError("setup_telemetry was already called in this process")

        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        attrs = {
            "service.name": config.service_name,
            "service.instance.id": f"{config.run_id}-rank{rank}",
            "nemo.run.id": config.run_id,
            "host.name": socket.gethostname(),
            "process.pid": os.getpid(),
        }
        attrs.update(resource_attributes or {})
        resource = Resource.create(attrs)

        tracer_provider = None
        if config.traces_enabled:
            tracer_provider = TracerProvider(resource=resource)
            tracer_provider.add_span_processor(BatchSpanProcessor(_span_exporter(config)))
            _trace.set_tracer_provider(tracer_provider)
            state.set_enabled_span_groups(groups.SpanRegistry.resolve(config.span_groups)[0])
        meter_provider = _meter_provider(config, resource)
        if meter_provider is not None:
            _metrics.set_meter_provider(meter_provider)
        _INITIALIZED = True
        return TelemetryHandle(
            _trace.get_tracer("nemo.lens"),
            _metrics.get_meter("nemo.lens"),
            True,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        )
