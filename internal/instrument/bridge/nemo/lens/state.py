# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""The span groups enabled in this process (otelcol-gym's bridge; see nemo/lens/__init__.py).

Gym gates every call site on ``is_span_group_enabled(group)`` before doing any work, and
the groups are set once by ``setup_telemetry``: a process that never set telemetry up
(Gym's ``gym eval run --no-serve`` process, for one) has every group off.
"""

_ENABLED: frozenset = frozenset()


def set_enabled_span_groups(groups: frozenset) -> None:
    global _ENABLED
    _ENABLED = frozenset(groups)


def is_span_group_enabled(group: str) -> bool:
    return group in _ENABLED
