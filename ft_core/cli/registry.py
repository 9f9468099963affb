"""The command modules of ``ftops``; each has ``register(sub, groups)``.

``sub`` is the top-level subparsers object; ``groups`` maps shared group names (``plan``,
``bench``) to their subparsers, so that e.g. ``ftops plan recovery`` lives beside the recovery CLI
code rather than in one large file. Packages outside ft_core (``spark_jobs``) add command groups
through the ``ftops.commands`` entry point, so ft_core never imports them; a module that adds a command
to a group another entry point creates does it in ``extend(sub, groups)``, called once every module's
``register`` has run (entry points load in no set order).

Renamed commands and flags keep their old names for one release (:func:`add_old_name`,
:func:`add_renamed_flag`): they work as before, are hidden from ``--help`` and print a note on stderr.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from collections.abc import Callable
from importlib.metadata import entry_points

COMMAND_MODULES = [
    "ft_core.cli.topology",
    "ft_core.cli.budget",
    "ft_core.cli.demo",
    "ft_core.cli.bench_replication",
    "ft_core.cli.bench_fleet",
    "ft_core.cli.fleet_recovery",
    "ft_core.cli.db",
    "ft_core.cli.checkpoint",
    "ft_core.cli.recovery",
    "ft_core.cli.simulate",
    "ft_core.cli.fault_tolerance",
]
GROUPS = {
    "plan": "compute a plan (replication, recovery, stages, checkpoint)",
    "bench": "benchmarks that reproduce the papers' comparisons and write docs/benchmarks/",
}


def register_all(sub) -> None:
    groups = {}
    for name, help_text in GROUPS.items():
        parser = sub.add_parser(name, help=help_text, description=help_text)
        groups[name] = parser.add_subparsers(dest=f"{name}_command", required=True, parser_class=type(parser))
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub, groups)
    modules = [entry.load() for entry in entry_points(group="ftops.commands")]
    for module in modules:
        module.register(sub, groups)
    for module in modules:  # commands that join another module's group, once every group exists (any load order)
        if hasattr(module, "extend"):
            module.extend(sub, groups)


def group_commands(sub, name: str):
    """The subcommands of the top-level group ``name`` another module created, to add one beside them."""
    group = sub.choices[name]
    # argparse offers no public accessor for an existing parser's subcommands
    return next(a for a in group._actions if isinstance(a, argparse._SubParsersAction))


def add_old_name(sub, old: str, new: str, add_arguments: Callable, func: Callable) -> None:
    """Keep ``ftops <old>`` working for one release after the command moved to ``ftops <new>``: the same
    arguments and behaviour, and a note on stderr (stdout, JSON included, is unchanged)."""
    @functools.wraps(func)  # the command still belongs to its own module
    def run(args):
        print(f"ftops: note: `ftops {old}` is now `ftops {new}`; the old name goes away in the next release",
              file=sys.stderr)
        return func(args)

    parser = sub.add_parser(old, help=f"old name of `ftops {new}` (kept for one release)",
                            description=f"Old name of `ftops {new}`, kept for one release.")
    add_arguments(parser)
    parser.set_defaults(func=run)


class _RenamedFlag(argparse.Action):
    """argparse's plain store, which also answers to the flag's old spelling and then says so on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string not in self.option_strings:
            print(f"ftops: note: `{option_string}` is now `{self.option_strings[0]}`; the old spelling goes away in "
                  "the next release", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_renamed_flag(container, new: str, old: str, **kwargs) -> argparse.Action:
    """``container.add_argument(new, **kwargs)`` (a parser or a group) that still accepts ``old`` for one
    release: hidden from ``--help`` and from error messages, a note on stderr when used (stdout, JSON
    included, is unchanged). The flag keeps ``new``'s destination, ``required`` and mutual exclusions.

    >>> parser = argparse.ArgumentParser(prog="ftops")
    >>> _ = add_renamed_flag(parser, "--state-file", "--state")
    >>> parser.parse_args(["--state", "s.json"]).state_file  # and a note on stderr
    's.json'
    >>> print(parser.format_usage(), end="")
    usage: ftops [-h] [--state-file STATE_FILE]
    """
    action = container.add_argument(new, old, action=_RenamedFlag, **kwargs)
    action.option_strings = [new]  # the parser still maps `old` to this action; --help shows the new name only
    return action
