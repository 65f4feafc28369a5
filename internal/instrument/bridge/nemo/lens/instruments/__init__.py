# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""Metric instruments (otelcol-gym's bridge; see nemo/lens/__init__.py)."""
