"""``python -m proofs [--json]``: check every theorem of the ledger and print it
(see proofs/__init__)."""

import sys

from proofs import main

sys.exit(main())
