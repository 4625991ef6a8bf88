"""``python -m cutile_lab`` runs the ``cutile-lab`` command."""
import sys

from cutile_lab.cli import main

sys.exit(main())
