"""render: views of Reports (terminal text, CSV gradebook, HTML page and notebook fragment, Gradescope). Pure
functions; no torch, no sympy.

May import: nothing.
"""
