import sys

from paging.cli import main

sys.exit(main())
