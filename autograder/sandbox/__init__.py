"""sandbox: both sides of the trust boundary, kept apart. The grader's side is `client` (starts the warm
worker, sends each run's request, reads what comes back) and `policy` (what a run may see and use, for both
sides) and `cgroup` (a cgroup per run: the grader's side makes the worker's folders, the worker one per run).
What runs on the untrusted side, in the sandboxed process, is in `inside/`: `worker` (the warm loop, one fork per
run, limits, clean-up) and `probe` (runs the cells, calls the functions, encodes what it saw). Nothing here knows
an expected value.

Layer: above the shared vocabulary only (model, wire, profile); `inside/` imports only the vocabulary, `policy` and
`cgroup`, never the client.

May import: nothing.
"""
