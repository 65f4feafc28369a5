# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""Resource attribute names Gym takes from lens (otelcol-gym's bridge; see nemo/lens/__init__.py)."""

NV_DL_RANK = "dl.rank"
NV_DL_WORLD_SIZE = "dl.world_size"
