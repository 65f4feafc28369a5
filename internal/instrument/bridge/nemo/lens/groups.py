# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""Span groups and presets libraries register (otelcol-gym's bridge; see nemo/lens/__init__.py).

Gym calls ``SpanRegistry.register(namespace, groups=..., presets=..., allow_override=True)``
at import and ``SpanRegistry.resolve(spec)[0]`` to turn a ``span_groups`` spec into the set
of enabled groups. A spec is a comma-separated list of group names and preset names;
``all`` is every registered group, ``none`` is none, and a ``-name`` entry removes a group
or a preset's groups. Names nothing registered are returned as the second element.
"""

import threading


class SpanRegistry:
    _lock = threading.Lock()
    _groups: dict = {}  # group -> set of namespaces that registered it
    _presets: dict = {}  # preset -> frozenset of groups (union across namespaces)

    @classmethod
    def register(cls, namespace: str, groups=(), presets=None, allow_override: bool = False) -> None:
        with cls._lock:
            for group in groups:
                cls._groups.setdefault(group, set()).add(namespace)
            for name, members in (presets or {}).items():
                cls._presets[name] = frozenset(cls._presets.get(name, frozenset()) | frozenset(members))

    @classmethod
    def resolve(cls, spec: str):
        with cls._lock:
            known = frozenset(cls._groups)
            enabled: set = set()
            unknown: list = []
            for raw in (spec or "").split(","):
                entry = raw.strip()
                if not entry:
                    continue
                remove = entry.startswith("-")
                name = entry[1:].strip() if remove else entry
                if name == "all":
                    members = known
                elif name == "none":
                    members = frozenset()
                elif name in cls._presets:
                    members = cls._presets[name] & known
                elif name in known:
                    members = frozenset([name])
                else:
                    unknown.append(name)
                    continue
                if remove:
                    enabled -= members
                else:
                    enabled |= members
            return frozenset(enabled), unknown
