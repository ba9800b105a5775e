"""`python -m autograder`: the same as the `autograder` command."""
from autograder.cli import main

raise SystemExit(main())
