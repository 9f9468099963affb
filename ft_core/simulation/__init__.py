"""What users of a job see when a rack fails now: the failure timeline simulator.

:mod:`~ft_core.simulation.failure_timeline` combines the papers' models: tentative OF from the
replicas (paper 000), the staged restart as capacity arrives (paper 003) and the catch-up of the
backlog, into per-query recovery times and an OF curve.
"""

import lazy_loader

# Public names load on first use, so importing one module of the package (the CLI does, for every
# command) does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "failure_timeline": ["Arrival", "Timeline", "TimelineParams", "simulate"],
    },
)
