"""``python -m om_eval.cli``: the same as the ``om-eval`` command."""

import sys

from om_eval.cli import main

sys.exit(main())
