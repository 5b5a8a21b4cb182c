"""Shared fixtures of the Python tests (run on the installed package)."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo() -> Path:
    return REPO


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# a small crash-test sweep with two failing points (members = 2 is no RAID-5)
SMALL_SWEEP = """
run = "crashtest"
seeds = [1, 2]
[params]
trials = 2
[grid]
members = [2, 3]
policy = ["stripe", "wplog"]
"""


@pytest.fixture
def small_sweep(tmp_path: Path) -> Path:
    return write(tmp_path / "small.toml", SMALL_SWEEP)


def zns_bin() -> str:
    """The zns binary (ZNS_BIN, else the workspace's debug build)."""
    b = os.environ.get("ZNS_BIN") or str(REPO / "target" / "debug" / "zns")
    if not Path(b).exists():
        pytest.fail(f"no zns binary at {b}: build it (cargo build -p zns-cli) or set ZNS_BIN")
    return b
