"""Bench: the attestd nodes of one benchmark run and every measurement on them."""

from .gateway import Gateway
from .measure import Measure
from .nodes import Nodes
from .purge import Purge


class Bench(Gateway, Purge, Measure, Nodes):
    """One run's work directory, simulated devices and nodes (Nodes), and the measurements: the five
    operations, the pinned and the paired rounds (Measure), the gateway check and the revocations
    (Gateway), the purge and the busy disk (Purge)."""
