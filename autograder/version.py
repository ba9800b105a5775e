"""version: the package's version, in one place (every layer may read it: reports, fingerprints and the
Dask workers' handshake carry it).

May import: nothing.
"""
__version__ = "0.1.0"
