"""znskit from Python: emulated NVMe ZNS SSDs in deterministic virtual time.

Thin calls into the Rust libraries (the native module ``znskit._native``,
crate zns-py): every run is a simulation in virtual time, the same numbers
for the same seed on any machine. Long runs release the GIL.

- :func:`bench` runs a fio job (file text, a path, or a dict of options) and
  gives fio's JSON as a dict (:attr:`BenchResult.json`) and the completion
  latency percentiles as a pandas DataFrame (:attr:`BenchResult.percentiles`).
- :func:`crashtest`, :func:`cache_run`, :func:`repro_zraid`, :func:`fidelity`
  give the reports of ``zns raid crashtest``, ``zns cache run``,
  ``zns repro zraid`` and ``zns fidelity`` as dicts.
- :class:`Device` opens an emulated device and takes zone commands one at a
  time, each advancing its virtual clock.
- :func:`sweep` runs a sweep file (docs/sweep.md) locally or on Ray and
  returns its table as a DataFrame; :func:`plot` draws a table.

Errors are exceptions: :class:`ZnsError`, and its subclass :class:`NvmeError`
for a command the device rejected (``status``, ``sct``, ``sc``, ``injected``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._native import Device, NvmeError, ZnsError

try:
    from importlib.metadata import version as _version

    __version__ = _version("znskit")
except Exception:  # not installed as a distribution (a source checkout on sys.path)
    __version__ = "0+unknown"

__all__ = [
    "__version__",
    "BenchResult",
    "Device",
    "NvmeError",
    "ZnsError",
    "bench",
    "cache_run",
    "crashtest",
    "fidelity",
    "job_text",
    "load_table",
    "plot",
    "repro_zraid",
    "sweep",
]

PathLike = Union[str, "os.PathLike[str]"]
Options = Mapping[str, Any]


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def job_text(options: Union[Options, Mapping[str, Options]], name: str = "job") -> str:
    """fio job text from options.

    A flat dict is one job named ``name``; a dict of dicts is one section per
    key (``"global"`` included), as in a job file. A value ``True`` is a flag
    (``group_reporting``), ``False`` leaves the option out; ``None`` is an
    error (a value that was meant to be set).
    """
    if options and all(isinstance(v, Mapping) for v in options.values()):
        sections = options
    else:
        sections = {name: options}
    lines: List[str] = []
    for section, opts in sections.items():
        lines.append(f"[{section}]")
        for k, v in opts.items():  # type: ignore[union-attr]
            if v is None:
                raise ZnsError(f"[{section}] {k}=None: give the option a value, or leave it out (False)")
            if v is True:
                lines.append(str(k))
            elif v is False:
                continue
            else:
                lines.append(f"{k}={_value(v)}")
    return "\n".join(lines) + "\n"


class BenchResult:
    """A bench run: fio's JSON as a dict, and its latency percentiles."""

    def __init__(self, doc: Dict[str, Any]) -> None:
        self.json: Dict[str, Any] = doc

    @property
    def jobs(self) -> List[Dict[str, Any]]:
        return list(self.json.get("jobs", []))

    @property
    def percentiles(self) -> "Any":
        """Completion latency percentiles, one row per (job, direction, percentile):
        columns job, direction, percentile, clat_ns (a pandas DataFrame)."""
        import pandas as pd

        rows = []
        for j in self.jobs:
            for d in ("read", "write", "trim"):
                pct = j.get(d, {}).get("clat_ns", {}).get("percentile")
                if not pct:
                    continue
                for p, ns in pct.items():
                    rows.append(
                        {"job": j.get("jobname"), "direction": d, "percentile": float(p), "clat_ns": int(ns)}
                    )
        return pd.DataFrame(rows, columns=["job", "direction", "percentile", "clat_ns"])

    def __repr__(self) -> str:
        names = ", ".join(str(j.get("jobname")) for j in self.jobs)
        return f"BenchResult(jobs=[{names}])"


JobArg = Union[str, PathLike, Options, Mapping[str, Options]]


def _job_text(job: JobArg) -> Tuple[str, str]:
    """(text, name) of one job argument of :func:`bench`."""
    if isinstance(job, Mapping):
        return job_text(job), "job"
    if isinstance(job, str) and "[" in job:
        return job, "job"
    path = Path(job)
    try:
        return path.read_text(), str(path)
    except OSError as e:
        raise ZnsError(f"{path}: {e}") from None


def bench(
    job: Union[JobArg, Sequence[JobArg]],
    seed: int = 0,
    plus: bool = False,
) -> BenchResult:
    """Runs fio jobs in virtual time (``zns bench``).

    ``job`` is job-file text (it contains a ``[section]``), a path to a job
    file, or a dict of options (see :func:`job_text`); or a list of them,
    run one after another on the same devices as ``zns bench FILE FILE...``
    runs several files (each starts a new reporting group: a read file can
    follow the file that wrote its data).
    """
    jobs = list(job) if isinstance(job, (list, tuple)) else [job]
    if not jobs:
        raise ZnsError("bench: no jobs (an empty list)")
    texts, names = zip(*(_job_text(j) for j in jobs))
    return BenchResult(json.loads(_native.bench(list(texts), list(names), seed, plus)))


def _run(kind: str, params: Dict[str, Any], files_dir: Optional[PathLike] = None) -> Dict[str, Any]:
    clean = {k: v for k, v in params.items() if v is not None}
    fd = None if files_dir is None else os.fspath(files_dir)
    return json.loads(_native.run(kind, json.dumps(clean), None, fd))


def crashtest(policy: str = "wplog", trials: int = 100, seed: int = 1, **params: Any) -> Dict[str, Any]:
    """A ZRAID crash-test campaign (``zns raid crashtest`` for one policy).

    Other parameters: fail_device, members, chunk_kib, zones, qd, max_cut_ms,
    profile, per_write_progress. Returns trials, failures, failure_rate,
    mean_loss_bytes, the failing trials with their seeds, ...
    """
    return _run("crashtest", dict(policy=policy, trials=trials, seed=seed, **params))


def cache_run(**params: Any) -> Dict[str, Any]:
    """A ZNCache run (``zns cache run`` with a generated workload); the report.

    Parameters as the CLI's flags with ``_`` (device, zones, chunk, policy,
    ratio, requests, remote_latency, workers, seed, ...).
    """
    return _run("cache", params)


def repro_zraid(fig: str = "7,8,waf,11", seed: int = 1, out: PathLike = "repro-zraid", **params: Any) -> Dict[str, Any]:
    """The ZRAID paper's emulated figures (``zns repro zraid``); CSV and PNG in ``out``."""
    return _run("repro-zraid", dict(fig=fig, seed=seed, **params), files_dir=out)


def fidelity(
    filter: Optional[str] = None,
    seed: int = 1,
    experiments_dir: Optional[PathLike] = None,
    plots_dir: Optional[PathLike] = None,
) -> Dict[str, Any]:
    """The fidelity suite (``zns fidelity``): every target's paper value,
    emulated value, error and verdict, as a dict."""
    ed = None if experiments_dir is None else os.fspath(experiments_dir)
    pd_ = None if plots_dir is None else os.fspath(plots_dir)
    return json.loads(_native.fidelity(filter, seed, ed, pd_))


def _frame(table_json: str) -> "Any":
    import pandas as pd

    t = json.loads(table_json)
    return pd.DataFrame(t["rows"], columns=t["columns"])


def sweep(
    spec: PathLike,
    out: Optional[PathLike] = None,
    engine: str = "local",
    workers: Optional[int] = None,
    resume: bool = False,
    retry_failed: bool = False,
    address: Optional[str] = None,
) -> "Any":
    """Runs a sweep file (``zns sweep``; docs/sweep.md) and returns its merged
    table as a pandas DataFrame (also in ``out``/results.csv and .parquet).

    ``engine="local"`` runs the points on ``workers`` threads (default: every
    CPU); ``engine="ray"`` submits them as Ray tasks to the cluster at
    ``address`` (None: a local Ray instance).
    """
    spec = Path(spec)
    out = Path(out) if out is not None else Path(f"{spec.stem}.out")
    if engine == "local":
        if address is not None:
            raise ZnsError("address= belongs to engine='ray'")
        table, _summary = _native.sweep_local(os.fspath(spec), os.fspath(out), workers, resume, retry_failed)
        return _frame(table)
    if engine == "ray":
        if workers is not None:
            raise ZnsError("workers= is the local engine's: Ray places tasks by [resources] cpus")
        from .ray_sweep import run_ray

        table, _summary = run_ray(spec, out, address=address, resume=resume, retry_failed=retry_failed)
        return _frame(table)
    raise ZnsError(f"engine={engine!r}: expected 'local' or 'ray'")


def load_table(out: PathLike) -> "Any":
    """A finished sweep's table from its output directory (results.csv)."""
    import pandas as pd

    path = Path(out) / "results.csv"
    if not path.exists():
        raise ZnsError(f"{path}: no such table (has the sweep finished?)")
    return pd.read_csv(path)


def plot(
    table: "Any",
    x: str,
    y: str,
    by: Optional[str] = None,
    png: PathLike = "sweep.png",
    title: Optional[str] = None,
) -> Path:
    """Draws ``y`` against ``x``, one line per value of ``by``, in the
    project's plot style (zns-plot); rows sharing an x on a line are averaged,
    rows whose ``status`` is not ``ok`` are left out. ``table`` is a
    DataFrame (from :func:`sweep` or :func:`load_table`) or a sweep's output
    directory. Writes the PNG and a CSV of the drawn numbers beside it."""
    if isinstance(table, (str, os.PathLike)):
        table = load_table(table)
    cols = [str(c) for c in table.columns]
    rows = json.loads(table.to_json(orient="values"))
    _native.plot(json.dumps({"columns": cols, "rows": rows}), x, y, os.fspath(png), by, title)
    return Path(png)
