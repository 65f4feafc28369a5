# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""Telemetry settings from the environment (otelcol-gym's bridge; see nemo/lens/__init__.py).

Gym calls ``NemoLensConfig.from_env(prefix="NEMO_GYM_OTEL", fallback_prefix="NEMO_LENS")``:
each key is read from ``<prefix>_<KEY>`` first, then ``<fallback_prefix>_<KEY>``. Gym then
reads ``enabled``, ``service_name`` (which it rewrites to ``<group>/<server>``),
``span_groups``, ``metrics_enabled``, ``logs_enabled`` and ``run_id``. The service name is
the standard ``OTEL_SERVICE_NAME`` (``nemo`` when unset), the run id
``<prefix>_RUN_ID`` (the orchestrator mints one for every process of a run).
"""

import os
import uuid
from dataclasses import dataclass
from typing import Optional

EXPORTERS = ("otlp", "console")
_TRUE = ("1", "true", "yes", "on")


@dataclass
class NemoLensConfig:
    enabled: bool = False
    service_name: str = "nemo"
    span_groups: str = "default"
    traces_enabled: bool = True
    metrics_enabled: bool = True
    logs_enabled: bool = False
    exporter: str = "otlp"
    run_id: Optional[str] = None

    def __post_init__(self) -> None:
        if self.exporter not in EXPORTERS:
            raise ValueError(f"exporter must be one of {EXPORTERS}, got {self.exporter!r}")
        if not self.run_id:
            self.run_id = uuid.uuid4().hex[:12]

    @classmethod
    def from_env(cls, prefix: str = "NEMO_LENS", fallback_prefix: Optional[str] = None) -> "NemoLensConfig":
        def env(key: str, default: str) -> str:
            for p in (prefix, fallback_prefix):
                if p:
                    raw = os.environ.get(f"{p}_{key}", "").strip()
                    if raw:
                        return raw
            return default

        def flag(key: str, default: bool) -> bool:
            raw = env(key, "")
            return default if not raw else raw.lower() in _TRUE

        return cls(
            enabled=flag("ENABLED", False),
            service_name=os.environ.get("OTEL_SERVICE_NAME", "").strip() or "nemo",
            span_groups=env("SPAN_GROUPS", "default"),
            traces_enabled=flag("TRACES_ENABLED", True),
            metrics_enabled=flag("METRICS_ENABLED", True),
            logs_enabled=flag("LOGS_ENABLED", False),
            exporter=env("EXPORTER", "otlp").lower(),
            run_id=env("RUN_ID", "") or None,
        )
