"""`python -m flows.cli …`: the `gridbots` program."""

import sys

from flows.entry import main

sys.exit(main())
