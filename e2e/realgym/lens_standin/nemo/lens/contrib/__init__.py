# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""Framework instrumentation helpers (stand-in; see nemo/lens/__init__.py)."""
