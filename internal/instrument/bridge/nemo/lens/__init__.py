# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""otelcol-gym's nemo-lens bridge: the provider layer Gym 0.7.0 needs, for a nemo-lens that lacks it.

nemo-gym 0.7.0 creates its spans through ``nemo.lens`` and imports lens APIs that the only
lens release on the package index (0.1.0) does not have (``nemo.lens.groups.SpanRegistry``,
``nemo.lens.semconv.NV_DL_RANK``), so with 0.1.0 Gym's telemetry switches itself off.
This package is NOT nemo-lens and shares no code with it: it implements, on top of the
OpenTelemetry SDK, exactly the names Gym 0.7.0 imports, with the behaviour Gym's call
sites expect of them (read from Gym's code and docs, never from lens's), so that Gym's
real call sites emit their real ``gym.*`` spans:

    nemo.lens                 NemoLensConfig, TelemetryHandle, setup_telemetry, get_tracer,
                              get_meter, handle (its _INITIALIZED flag)
    nemo.lens.semconv         NV_DL_RANK, NV_DL_WORLD_SIZE
    nemo.lens.helpers         managed_span, span_cm, trace_fn, safe_set_span_attributes
    nemo.lens.state           is_span_group_enabled
    nemo.lens.groups          SpanRegistry (register, resolve)
    nemo.lens.propagation     inject_context
    nemo.lens.contrib.fastapi instrument_fastapi
    nemo.lens.instruments.gym record_gym_metrics

Left out: ``nemo.lens.logging_bridge`` (Gym imports it only with ``logs_enabled``, off by
default), lens's export strategies and sampler (Gym's default, ``all_ranks`` with every
process at rank 0, exports from every process), and the closing of spans still open at
shutdown (``nemo.span.truncated``).

It ships inside the otelcol-gym binary (internal/instrument) and is never on PYTHONPATH:
``otelcol-gym instrument`` writes it to a private temporary directory, and its
sitecustomize puts it in front of the installed nemo-lens in a Gym process only when that
nemo-lens lacks what the process's Gym imports (and the bridge has it all), so a nemo-lens
that works is never shadowed (otelcol_gym_instrument/choice.py).
"""

from opentelemetry import metrics as _metrics
from opentelemetry import trace as _trace

from nemo.lens import handle
from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import TelemetryHandle, setup_telemetry

__version__ = "0+otelcol-gym.bridge"


def get_tracer(name: str = "nemo.lens") -> _trace.Tracer:
    """The tracer of the globally registered provider."""
    return _trace.get_tracer(name)


def get_meter(name: str = "nemo.lens") -> _metrics.Meter:
    """The meter of the globally registered provider."""
    return _metrics.get_meter(name)


__all__ = ["NemoLensConfig", "TelemetryHandle", "get_meter", "get_tracer", "handle", "setup_telemetry"]
