"""judging: the grading semantics, pure. What a run observed and the key -> outcomes: the sympy oracle
(analytic), the comparisons (compare), what cells say read as syntax trees (sources), the rule that a
prediction is worked out (worked), the commit records (commit) and the judge itself (judge). No torch, no
processes, no files of a submission.

Layer: above the shared vocabulary (model, wire, report, keyfile, profile); below grading, authoring,
student and integrations. Never imports the sandbox or render.

May import: nothing.
"""
