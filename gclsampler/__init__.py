"""gclsampler: choose representative GPU kernel invocations for sampled simulation.

Submodules are imported lazily by their users so that ``import gclsampler`` stays
cheap (no torch import) for the command-line tools that only parse traces.
"""

__version__ = "0.1.0"
