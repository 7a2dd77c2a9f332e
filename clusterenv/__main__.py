"""`python -m clusterenv`: the same as the `clusterenv` command."""

import sys

from clusterenv._cli import main

sys.exit(main())
