"""student: what runs on a learner's side: `lab` (imported by every notebook, in the student's kernel) and
`selfcheck` (the helper process that holds the public key and judges the kernel's observations, so that
the comparison never runs in the kernel). Notebooks import it by its public name, `autograder.lab`.

Layer: above grading; beside authoring (neither imports the other).

May import: nothing.
"""
