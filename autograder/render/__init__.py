"""render: views of Reports (terminal text, CSV gradebook, HTML page and notebook fragment). Pure functions; no torch,
no sympy."""
