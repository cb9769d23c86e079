"""``python -m memorywire``: the same program as the ``memorywire`` script."""

import sys

from memorywire.cli.main import main

sys.exit(main())
