"""The ``ftops`` command line's planning commands (no Spark, no Airflow): ``plan``, ``fidelity``,
``topology``, ``simulate``, ``transparency``, ``faults`` (profiles and schedules), ``db``, ``demo`` and the
planners' benchmarks. :mod:`ft_core.cli.main` builds the parser, adds the Spark and Airflow commands
through the ``ftops.commands`` entry point and applies the error contract of :mod:`ft_core.cli.contract`
(one line or one JSON document, fixed exit codes) to every command.
"""
