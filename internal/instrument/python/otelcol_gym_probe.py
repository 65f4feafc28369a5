# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""Prints, as one JSON object, what ``otelcol_gym_instrument.choice.decide`` chooses for this
Python: ``otelcol-gym instrument`` runs it (``python -B``, nothing written) with the
command's Python and environment before it starts the command."""

import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

from otelcol_gym_instrument import choice  # noqa: E402

decided = choice.decide(os.environ.get(choice.REQUESTED_ENV, "auto"), os.path.join(os.path.dirname(here), "bridge"))
json.dump(decided.as_dict(), sys.stdout)
sys.stdout.write("\n")
