"""authoring: what an instructor writes and releases: the spec (spec.toml -> a typed Key), the student copy
of a solution notebook (student_copy) and the release (release: the solution judged and graded the way
every submission is, the key cross-checked, the files written).

Layer: above grading (a release grades the solution with it); below integrations and the command.

May import: nothing.
"""
