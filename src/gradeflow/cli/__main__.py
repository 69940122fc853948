"""``python -m gradeflow.cli``: the same as the ``gradeflow`` command."""

from gradeflow.cli.main import main

raise SystemExit(main())
