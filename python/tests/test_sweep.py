"""Sweeps from Python (the local engine) and the CLI: the same table for
1 and 2 workers and from `zns sweep`, failures recorded, resume, Parquet
equal to CSV, and the plot call."""

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import znskit
from conftest import zns_bin


def test_local_sweep_table_failures_and_resume(small_sweep, tmp_path):
    out1, out2 = tmp_path / "w1", tmp_path / "w2"
    t1 = znskit.sweep(small_sweep, out1, workers=1)
    t2 = znskit.sweep(small_sweep, out2, workers=2)
    pd.testing.assert_frame_equal(t1, t2)
    assert (out1 / "results.parquet").read_bytes() == (out2 / "results.parquet").read_bytes()
    assert len(t1) == 8
    assert list(t1.columns[:7]) == ["point", "id", "trials", "members", "policy", "seed", "status"]
    failed = t1[t1.status == "error"]
    assert set(failed.members) == {2} and len(failed) == 4
    assert failed.error.str.contains("RAID-5 needs at least 3").all()
    ok = t1[t1.status == "ok"]
    assert (ok[ok.policy == "wplog"].failures == 0).all()
    # Parquet holds the same table as CSV
    pq = pd.read_parquet(out1 / "results.parquet")
    csv = pd.read_csv(out1 / "results.csv")
    assert list(pq.columns) == list(csv.columns) == list(t1.columns)
    assert pq["failure_rate"].tolist() == pytest.approx(csv["failure_rate"].tolist(), nan_ok=True)
    # resume: an existing directory is refused without it, and nothing re-runs with it
    with pytest.raises(znskit.ZnsError, match="--resume"):
        znskit.sweep(small_sweep, out1)
    rec = next((out1 / "points").glob("*.json"))
    rec.unlink()
    t3 = znskit.sweep(small_sweep, out1, resume=True)
    pd.testing.assert_frame_equal(t1, t3)
    summary = json.loads((out1 / "summary.json").read_text())
    assert (summary["ran"], summary["skipped"]) == (1, 7)


def test_the_cli_gives_the_same_table(small_sweep, tmp_path):
    py = znskit.sweep(small_sweep, tmp_path / "py", workers=2)
    r = subprocess.run(
        [zns_bin(), "sweep", str(small_sweep), "--out", str(tmp_path / "cli"), "--json", "--eta", "never"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stderr  # the members = 2 points failed
    assert json.loads(r.stdout)["failed"] == 4
    cli = znskit.load_table(tmp_path / "cli")
    assert (tmp_path / "py" / "results.csv").read_text() == (tmp_path / "cli" / "results.csv").read_text()
    assert len(cli) == len(py)


def test_plot_draws_a_sweep_table(small_sweep, tmp_path):
    t = znskit.sweep(small_sweep, tmp_path / "o")
    png = znskit.plot(t, x="seed", y="failure_rate", by="policy", png=tmp_path / "f.png")
    assert png.stat().st_size > 1000
    drawn = pd.read_csv(tmp_path / "f.csv")
    # failed points are left out; one line per policy, one x per seed
    assert set(drawn.line) == {"policy = stripe", "policy = wplog"}
    assert len(drawn) == 4
    # a directory works too, and a missing column is an error naming the columns
    znskit.plot(tmp_path / "o", x="seed", y="failure_rate", png=tmp_path / "g.png")
    with pytest.raises(znskit.ZnsError, match="no column `nope`"):
        znskit.plot(t, x="nope", y="failure_rate", png=tmp_path / "h.png")
