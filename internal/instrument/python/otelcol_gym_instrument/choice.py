# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""The richest telemetry this Python can give a Gym process, and why (design §6).

``decide(requested, bridge_dir)`` answers, in order:

1. No ``nemo_gym`` here: ``notgym`` (the process is left alone).
2. Gym's own telemetry needs nemo-lens. What Gym imports from it is read from the
   installed Gym's own code (every ``from nemo.lens... import ...`` in
   ``nemo_gym/telemetry/``; ``nemo.lens.logging_bridge`` aside, which Gym imports only with
   ``logs_enabled`` and guards), so the answer follows the installed Gym, not a list.
   - The installed nemo-lens has every name: ``gym`` (nothing of ours is loaded).
   - It lacks some (nemo-lens 0.1.0, the one on the package index, lacks
     ``nemo.lens.semconv.NV_DL_RANK`` and ``nemo.lens.groups.SpanRegistry``, and Gym's
     telemetry then switches itself off): ``bridge``. The bridge is put in front of the
     installed nemo-lens (the modules of the failed check are forgotten) and checked the
     same way; if it lacks a name too (a Gym newer than the bridge), it is taken out again.
   - No nemo-lens: ``generic``, unless ``--telemetry gym`` asked for Gym's own, which the
     bridge then gives.
3. ``generic`` (chosen, asked for with ``--telemetry generic``, or when the bridge cannot
   serve): OpenTelemetry's FastAPI, ASGI and aiohttp-client instrumentation.
4. The OpenTelemetry packages a choice needs are missing: ``off``, naming them and the one
   ``pip`` command that installs them into this Python.

The bridge is put in front only in a process that chose it, and only after the installed
nemo-lens failed the check: a nemo-lens that works is never shadowed.
"""

import ast
import importlib
import importlib.util
import os
import sys

GYM, BRIDGE, GENERIC, OFF, NOTGYM = "gym", "bridge", "generic", "off", "notgym"
REQUESTED_ENV = "OTELCOL_GYM_TELEMETRY"  # auto | gym | generic (--telemetry)
ANNOUNCED_ENV = "OTELCOL_GYM_ANNOUNCED"  # what `otelcol-gym instrument` printed for the command
GYM_ENABLED_ENV = "NEMO_GYM_OTEL_ENABLED"

# (module, pip package) each way of instrumenting needs.
_SDK = [
    ("opentelemetry.sdk", "opentelemetry-sdk"),
    ("opentelemetry.exporter.otlp.proto.http", "opentelemetry-exporter-otlp-proto-http"),
]
_FASTAPI = [("opentelemetry.instrumentation.fastapi", "opentelemetry-instrumentation-fastapi")]
_AIOHTTP = [("opentelemetry.instrumentation.aiohttp_client", "opentelemetry-instrumentation-aiohttp-client")]
NEEDS = {BRIDGE: _SDK + _FASTAPI, GENERIC: _SDK + _FASTAPI + _AIOHTTP}
GENERIC_NAME = "generic OpenTelemetry instrumentation (FastAPI, ASGI, aiohttp client)"
BRIDGE_NAME = "Gym's own telemetry through otelcol-gym's nemo-lens bridge"
# Imported by Gym only with logs_enabled (off by default), inside a try; the bridge has no logging bridge.
_OPTIONAL = ("nemo.lens.logging_bridge",)


class Choice:
    def __init__(self, telemetry, summary, gym=None, lens=None):
        self.telemetry = telemetry
        self.summary = summary
        self.gym = gym  # nemo-gym's version, None when not Gym
        self.lens = lens  # the installed nemo-lens's version, None when not installed

    def as_dict(self):
        return {"telemetry": self.telemetry, "summary": self.summary, "gym": self.gym, "lens": self.lens,
                "python": sys.executable, "python_version": "%d.%d.%d" % sys.version_info[:3]}


def decide(requested, bridge_dir):
    gym = _version("nemo-gym") if _has("nemo_gym") else None
    if gym is None:
        return Choice(NOTGYM, "not Gym: %s has no nemo_gym" % sys.executable)
    lens = _version("nemo-lens") if _has("nemo.lens") else None
    wanted = gym_lens_imports()
    if requested == GENERIC or not wanted:
        why = "as --telemetry generic asks" if requested == GENERIC else "nemo-gym %s has no nemo-lens telemetry" % gym
        return _needing(GENERIC, "%s, %s" % (GENERIC_NAME, why), gym, lens)
    if lens is not None:
        lacks = missing(wanted)
        if not lacks:
            return Choice(GYM, "Gym's own telemetry: nemo-lens %s has everything nemo-gym %s imports from it" % (lens, gym), gym, lens)
        why = "the installed nemo-lens %s lacks %s, which nemo-gym %s imports" % (lens, _few(lacks), gym)
    elif requested == GYM:
        why = "nemo-lens is not installed, and --telemetry gym asks for Gym's own telemetry"
    else:
        return _needing(GENERIC, "%s: nemo-lens, which Gym's own telemetry needs, is not installed" % GENERIC_NAME, gym, lens)
    absent = _absent(NEEDS[BRIDGE])
    if absent:
        return _off(absent, gym, lens)
    bridge_lacks = _with_bridge(bridge_dir, wanted)
    if bridge_lacks:
        return _needing(GENERIC, "%s: %s, and otelcol-gym's bridge lacks %s" % (GENERIC_NAME, why, _few(bridge_lacks)), gym, lens)
    return Choice(BRIDGE, "%s: %s" % (BRIDGE_NAME, why), gym, lens)


def gym_lens_imports():
    """(module, name) for every ``from nemo.lens... import name`` in the installed nemo_gym/telemetry/."""
    spec = importlib.util.find_spec("nemo_gym")
    found = set()
    for root in (spec.submodule_search_locations or []) if spec else []:
        tdir = os.path.join(root, "telemetry")
        if not os.path.isdir(tdir):
            continue
        for fname in sorted(os.listdir(tdir)):
            if fname.endswith(".py"):
                found.update(_lens_imports_of(os.path.join(tdir, fname)))
    return sorted(found)


def _lens_imports_of(path):
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if (node.module == "nemo.lens" or node.module.startswith("nemo.lens.")) and node.module not in _OPTIONAL:
                for alias in node.names:
                    yield node.module, alias.name


def missing(wanted):
    """The dotted names of wanted that the importable nemo.lens does not have."""
    lacks = []
    for module, name in wanted:
        try:
            mod = importlib.import_module(module)
        except Exception:
            lacks.append("%s.%s" % (module, name))
            continue
        if hasattr(mod, name):
            continue
        try:
            importlib.import_module("%s.%s" % (module, name))  # a submodule (from nemo.lens import handle)
        except Exception:
            lacks.append("%s.%s" % (module, name))
    return lacks


def _with_bridge(bridge_dir, wanted):
    """Puts the bridge in front of the installed nemo-lens; what it lacks of wanted (then taken out again)."""
    _forget_lens()
    sys.path.insert(0, bridge_dir)
    nemo_path = _nemo_path()
    bridge_nemo = os.path.join(bridge_dir, "nemo")
    if isinstance(nemo_path, list) and bridge_nemo not in nemo_path:
        nemo_path.insert(0, bridge_nemo)  # nemo is a regular package here (NeMo's own), not a namespace
    importlib.invalidate_caches()
    lacks = missing(wanted)
    if lacks:
        _forget_lens()
        sys.path.remove(bridge_dir)
        if isinstance(nemo_path, list) and bridge_nemo in nemo_path:
            nemo_path.remove(bridge_nemo)
        importlib.invalidate_caches()
    return lacks


def _nemo_path():
    try:
        return importlib.import_module("nemo").__path__
    except Exception:
        return None


def _forget_lens():
    for name in [n for n in sys.modules if n == "nemo.lens" or n.startswith("nemo.lens.")]:
        del sys.modules[name]
    nemo = sys.modules.get("nemo")
    if nemo is not None and hasattr(nemo, "lens"):
        delattr(nemo, "lens")


def _needing(telemetry, summary, gym, lens):
    absent = _absent(NEEDS[telemetry])
    if absent:
        return _off(absent, gym, lens)
    return Choice(telemetry, summary, gym, lens)


def _off(packages, gym, lens):
    return Choice(OFF, "no telemetry: %s lacks %s; install them with: %s -m pip install %s"
                  % (sys.executable, ", ".join(packages), sys.executable, " ".join(packages)), gym, lens)


def _absent(needs):
    return [package for module, package in needs if not _has(module)]


def _has(module):
    try:
        return importlib.util.find_spec(module) is not None
    except Exception:  # a parent package that is missing or fails to import
        return False


def _version(distribution):
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except Exception:
        return "(unknown version)"


def _few(names):
    if len(names) <= 3:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:3]), len(names) - 3)
