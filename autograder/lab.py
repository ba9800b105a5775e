"""lab: the name every student notebook imports (`from autograder.lab import Lab`, in its locked setup cell),
kept stable for the notebooks already handed out. The module itself is `autograder.student.lab`.

May import: autograder.student.lab.
"""
from autograder.student.lab import Lab, SelfCheck

__all__ = ["Lab", "SelfCheck"]
