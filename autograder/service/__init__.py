"""service: the course service (`autograder serve`): it keeps the full keys, records each exercise's predictions
(with its own clock, before anything is judged), judges the kernel's observations with the same pure judge, and
answers with the report. Staff use it for rosters, releases and batch grading with its commits.

Submodules: db (tables, engines, migrations), store (the course's operations on them), app (the tornado web app:
routes, identity, limits), hub (JupyterHub mode), commands (the CLI's serve, course, login and the course part of
release). Kernels and staff tools talk to it with autograder.student.service_client (stdlib only).

May import: nothing.
"""
