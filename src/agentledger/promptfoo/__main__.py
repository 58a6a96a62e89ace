"""Print the paths promptfoo's config names: the assertion's and the provider's files."""

from __future__ import annotations

import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.stdout.write(
    f"assertion: file://{here / 'assertion.py'}\nprovider: file://{here / 'provider.py'}\n"
)
