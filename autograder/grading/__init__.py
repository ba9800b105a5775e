"""grading: one submission and a batch of them, end to end: read the notebook (notebook), decide whose it is
(identity), draw each student's points and build the probe request (plan), run it in the sandbox, judge it
(grade) and write the reports and the gradebook (batch).

Layer: above the vocabulary, sandbox, judging and render; below authoring, student and integrations.

May import: nothing.
"""
