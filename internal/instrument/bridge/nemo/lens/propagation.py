# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""W3C context injection at Gym's HTTP egress (otelcol-gym's bridge; see nemo/lens/__init__.py)."""

from opentelemetry import propagate


def inject_context(carrier: dict) -> None:
    """Write the current context (traceparent, baggage) into carrier with the global propagator."""
    propagate.inject(carrier)
