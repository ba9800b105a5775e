"""`python -m autograder`: the same as the `autograder` command.

May import: autograder.cli.
"""
from autograder.cli import main

raise SystemExit(main())
