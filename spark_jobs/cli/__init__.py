"""The ``ftops`` commands that need Spark, registered through the ``ftops.commands`` entry point
(``pyproject.toml``) so that ``ft_core`` never imports them: ``cluster``, ``workload``, ``units`` and
``recover``, ``profile`` and ``bench checkpoint``, ``drill`` and ``bench drills``, ``faults inject``,
``serve`` and ``bench redundancy``. Each module has ``register(sub, groups)`` like ``ft_core.cli``'s.
"""
