# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""Gym's five undimensioned instruments (otelcol-gym's bridge; see nemo/lens/__init__.py).

Gym calls ``record_gym_metrics(meter, rollout_duration_ms=..., verify_duration_ms=...,
verify_success_rate=..., active_servers=...)`` with any subset of the keywords; each value
given is recorded without attributes, as Gym's nemo_gym/telemetry/metrics.py describes.
"""

import threading

_lock = threading.Lock()
_by_meter: dict = {}


def _instruments(meter) -> dict:
    with _lock:
        got = _by_meter.get(id(meter))
        if got is None:
            got = {
                "rollout_duration_ms": meter.create_histogram("gym.rollout.duration_ms", unit="ms"),
                "verify_duration_ms": meter.create_histogram("gym.verify.duration_ms", unit="ms"),
                "verify_success_rate": meter.create_gauge("gym.verify.success_rate"),
                "active_servers": meter.create_gauge("gym.servers.active"),
                "server_request_duration_ms": meter.create_histogram("gym.server.request_duration_ms", unit="ms"),
            }
            _by_meter[id(meter)] = got
        return got


def record_gym_metrics(meter, **values) -> None:
    instruments = _instruments(meter)
    for key, value in values.items():
        if value is None or key not in instruments:
            continue
        instrument = instruments[key]
        if hasattr(instrument, "record"):
            instrument.record(value)
        else:
            instrument.set(value)
