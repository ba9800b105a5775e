"""integrations: other systems a course already runs: nbgrader course folders and gradebook (nbgrader),
Gradescope's autograder bundle and its run (gradescope), and Dask clusters for batches (dask). Each is
imported only by the command that needs it.

Layer: above grading and authoring; below the command.

May import: nothing.
"""
