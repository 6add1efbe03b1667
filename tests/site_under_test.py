"""The built site the tests read: `make site`'s site/, or another built site named by TX_SITE.

The browser tests serve it and the link check reads it; `make test` builds it first
(`mkdocs build --strict`), so no test builds the whole site again for itself.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITE = Path(os.environ.get("TX_SITE", ROOT / "site"))  # another built site: TX_SITE=/path
