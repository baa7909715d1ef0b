"""``python -m proofs [--json]``: check Theorems 1-5 and print the ledger (see proofs/__init__)."""

import sys

from proofs import main

sys.exit(main())
