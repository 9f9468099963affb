"""Finding a pipeline from what a user types: ``module.path:attribute``, ``path/to/file.py[:attribute]``,
or the name of a sample (``topk``, ``incidents``). The attribute defaults to ``pipeline``.

The reference is kept on the loaded :class:`~.definition.Pipeline` (``pipeline.ref``, a file path made
absolute), so every later submission (a replica, a restart, a profiling copy) loads the same code.

    >>> load_pipeline("topk").ref
    'spark_jobs.workloads.topk:pipeline'
    >>> load_pipeline("no.such.module:pipeline")
    Traceback (most recent call last):
    ...
    ft_core.errors.InputError: --pipeline: cannot import module 'no.such.module' (No module named 'no')
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from ft_core.errors import InputError
from spark_jobs.pipeline.definition import Pipeline, Workload

SAMPLES = {
    "topk": "spark_jobs.workloads.topk:pipeline",
    "incidents": "spark_jobs.workloads.incidents:pipeline",
    "smartcity": "spark_jobs.workloads.smartcity:pipeline",
}
_LOADED: dict[str, Pipeline] = {}


def load_pipeline(ref: str) -> Pipeline:
    """The :class:`Pipeline` a reference names (InputError saying what is wrong with it)."""
    ref = SAMPLES.get(ref, ref)
    if not ref or not isinstance(ref, str):
        raise InputError("--pipeline: expected module.path:attribute or a .py file")
    target, _, attr = ref.rpartition(":") if ":" in ref and not _is_windows_drive(ref) else (ref, "", "pipeline")
    attr = attr or "pipeline"
    if target.endswith(".py") or "/" in target:
        path = Path(target).expanduser().resolve()
        key = f"{path}:{attr}"
        module = _module_from_file(path)
    else:
        key = f"{target}:{attr}"
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise InputError(f"--pipeline: cannot import module {target!r} ({exc})") from None
    if key in _LOADED:
        return _LOADED[key]
    pipeline = getattr(module, attr, None)
    if not isinstance(pipeline, Pipeline):
        found = type(pipeline).__name__ if pipeline is not None else "nothing"
        raise InputError(f"--pipeline: {key} is {found}, not a spark_jobs.pipeline.Pipeline")
    pipeline.ref = key
    _LOADED[key] = pipeline
    return pipeline


def load_workload(ref: str, params=None) -> Workload:
    """The pipeline ``ref`` bound to ``params`` (``key=value`` strings or a dict)."""
    return load_pipeline(ref).bind(params)


def pipeline_file(ref: str) -> Path | None:
    """The file a file-based reference names (spark-submit ships it to the executors), else None."""
    target = SAMPLES.get(ref, ref).rpartition(":")[0] or ref
    return Path(target).expanduser().resolve() if target.endswith(".py") else None


def pipeline_label(ref: str) -> str:
    """A short name for application and folder names: the sample's name, the module's last part or
    the file's stem (``pkg.jobs.sessions:pipeline`` -> ``sessions``)."""
    ref = SAMPLES.get(ref, ref)
    if ref in SAMPLES.values():
        return next(name for name, target in SAMPLES.items() if target == ref)
    target = ref.rpartition(":")[0] if ":" in ref else ref
    label = Path(target).stem if target.endswith(".py") else target.rsplit(".", 1)[-1]
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in label) or "pipeline"


def add_pipeline_arguments(parser, positional: bool = False) -> None:
    """``--pipeline REF`` and, for the samples, a workload name (positional or ``--workload``)."""
    if positional:
        parser.add_argument("workload", nargs="?", help=f"a sample pipeline ({', '.join(SAMPLES)}); or use --pipeline")
    else:
        parser.add_argument("--workload", help=f"a sample pipeline ({', '.join(SAMPLES)}); or use --pipeline")
    parser.add_argument("--pipeline", metavar="REF", help="your pipeline: module.path:attribute or path/to/file.py[:attribute]")


def pipeline_ref(args) -> str:
    """The reference given by :func:`add_pipeline_arguments`' options (exactly one of them)."""
    workload, ref = getattr(args, "workload", None), getattr(args, "pipeline", None)
    if workload and ref:
        raise InputError("--pipeline: give a workload name or --pipeline, not both")
    if not workload and not ref:
        raise InputError(f"--pipeline: which pipeline? give --pipeline module:attribute (or a sample: {', '.join(SAMPLES)})")
    if workload and workload not in SAMPLES:
        raise InputError(f"workload {workload!r}: expected one of {', '.join(SAMPLES)} (your own job: --pipeline)")
    return workload or ref


def _module_from_file(path: Path):
    if not path.is_file():
        raise InputError(f"--pipeline: file {str(path)!r} does not exist")
    name = f"ftops_user_pipeline_{abs(hash(str(path)))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: say what failed, without our traceback
        del sys.modules[name]
        raise InputError(f"--pipeline: {path} failed to load: {type(exc).__name__}: {exc}") from None
    return module


def _is_windows_drive(ref: str) -> bool:
    return len(ref) > 2 and ref[1] == ":" and ref[2] in "\\/"
