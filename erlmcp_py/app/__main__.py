"""``python -m erlmcp_py.app``: the ``erlmcp-py`` command."""

import sys

from erlmcp_py.app import main

sys.exit(main())
