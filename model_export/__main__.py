"""``python -m model_export`` runs the ``model-export`` command line."""

import sys

from .cli import main

sys.exit(main())
