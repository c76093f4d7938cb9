"""Suite-wide settings.

Property tests run derandomized by default so that `make test` (and CI) gives the same answer on
every run: a red build means a change broke something, not that a new random seed was drawn.
`HYPOTHESIS_PROFILE=explore make test` searches with fresh random seeds and ten times the examples;
whatever it finds goes back into the tests as an explicit `@example`.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
