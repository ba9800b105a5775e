"""sandbox.inside: the code that runs in the untrusted process (the warm worker and the probe). It imports
only the shared vocabulary (wire, model) and the sandbox policy; nothing here knows an answer.

May import: nothing.
"""
