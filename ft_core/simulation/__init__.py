"""What users of a job see when a rack fails now: the failure timeline simulator.

:mod:`~ft_core.simulation.failure_timeline` combines the papers' models: tentative OF from the
replicas (paper 000), the staged restart as capacity arrives (paper 003) and the catch-up of the
backlog, into per-query recovery times and an OF curve.
"""

from ft_core.simulation.failure_timeline import Arrival, Timeline, TimelineParams, simulate

__all__ = ["Arrival", "Timeline", "TimelineParams", "simulate"]
