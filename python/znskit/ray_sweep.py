"""The Ray engine of ``zns sweep`` (docs/sweep.md, "On a Ray cluster").

The driver (this process) expands the sweep file into points, submits each
pending point as a Ray task that asks for the sweep's ``[resources]`` (CPUs,
memory) and is retried ``retries`` times when its worker is lost, and writes
each result as the point's record in the output directory as it arrives —
the driver alone writes, one record per point id, so a task that ran twice
(a retry after a lost worker) is still counted once. Then it merges the
table exactly as the local engine does. A point is self-contained (a bench
job's text travels with it), so workers need the znskit package and nothing
else of the driver's files.

Run as ``zns sweep SPEC --engine ray --address HOST:PORT`` or
``python -m znskit.ray_sweep SPEC --address HOST:PORT --out DIR``, or from
Python with ``znskit.sweep(spec, engine="ray", address=...)``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import _native


def _run_point(point_json: str) -> Tuple[str, str]:
    """A task: runs one point; (its record as JSON, the id of the Ray node that ran it)."""
    import ray

    from znskit import _native as native

    return native.sweep_run_point(point_json, None), ray.get_runtime_context().get_node_id()


def run_ray(
    spec: Path,
    out: Path,
    address: Optional[str] = None,
    resume: bool = False,
    retry_failed: bool = False,
    progress: bool = False,
) -> Tuple[str, str]:
    """Runs the sweep on Ray; (table JSON, summary JSON) as the local engine's."""
    try:
        import ray
    except ImportError:
        raise _native.ZnsError("--engine ray needs the `ray` package (pip install ray)") from None

    start = time.perf_counter()
    spec_s, out_s = os.fspath(spec), os.fspath(out)
    doc = json.loads(_native.sweep_points(spec_s))
    if doc["run"] == "repro-zraid":
        raise _native.ZnsError("repro-zraid points write files: run them with the local engine")
    points: List[Dict[str, Any]] = doc["points"]
    res = doc["resources"]
    todo = _native.sweep_pending(spec_s, out_s, resume, retry_failed)
    started_here = not ray.is_initialized()
    if started_here:
        # a working directory is not shipped: points carry all they need
        ray.init(address=address, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    try:
        opts: Dict[str, Any] = {"num_cpus": res["cpus"], "max_retries": int(res["retries"])}
        if res.get("memory_bytes"):
            opts["memory"] = int(res["memory_bytes"])
        task = ray.remote(_run_point).options(**opts)
        pending = {task.remote(json.dumps(points[i])): i for i in todo}
        written = set()
        host_s = 0.0
        nodes = set()
        done = 0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    rec_json, node = ray.get(ref)
                except Exception as e:  # the task failed beyond its retries
                    p = points[i]
                    rec = {
                        "index": p["index"],
                        "id": p["id"],
                        "params": p["params"],
                        "status": "error",
                        "error": f"ray task failed: {type(e).__name__}: {e}".strip(),
                        "metrics": {},
                        "host_s": 0.0,
                    }
                    rec_json, node = json.dumps(rec), "?"
                rec = json.loads(rec_json)
                if rec["id"] in written:
                    continue
                written.add(rec["id"])
                host_s += float(rec["host_s"])
                nodes.add(node)
                _native.sweep_write_record(out_s, rec_json, "ray")
                done += 1
                if progress:
                    print(f"\rsweep (ray): {done}/{len(todo)} points", end="", file=sys.stderr, flush=True)
        if progress and todo:
            print(file=sys.stderr)
    finally:
        if started_here:
            ray.shutdown()
    summary = {
        "ran": len(todo),
        "skipped": len(points) - len(todo),
        "workers": len(nodes),  # Ray nodes that returned results
        "wall_s": time.perf_counter() - start,
        "point_host_s": host_s,
        "host_s_per_point": host_s / len(todo) if todo else 0.0,
    }
    return _native.sweep_finish(spec_s, out_s, json.dumps(summary))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m znskit.ray_sweep",
        description="Run a sweep file's points as Ray tasks (docs/sweep.md).",
    )
    ap.add_argument("spec", help="the sweep file (TOML)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--address", default=None, help="the Ray cluster (HOST:PORT or auto; default: a local instance)")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--retry-failed", action="store_true")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    a = ap.parse_args(argv)
    try:
        _table, summary = run_ray(
            Path(a.spec),
            Path(a.out),
            address=a.address,
            resume=a.resume,
            retry_failed=a.retry_failed,
            progress=not a.quiet,
        )
    except _native.ZnsError as e:
        print(f"znskit.ray_sweep: {e}", file=sys.stderr)
        return 3
    s = json.loads(summary)
    if not a.quiet:
        print(
            f"sweep (ray): {s['points']} points, {s['ran']} run, {s['ok']} ok, {s['failed']} failed",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
