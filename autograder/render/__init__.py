"""render: views of Reports (terminal text, CSV gradebook). Pure functions; no torch, no sympy."""
