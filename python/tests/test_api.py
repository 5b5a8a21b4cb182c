"""The package's API: bench, percentiles, crash tests, cache runs, zone
commands with NVMe status exceptions, and the GIL released while a
simulation runs."""

import threading

import pytest

import znskit

JOB = {
    "filename": "tiny",
    "ioengine": "psync",
    "direct": 1,
    "zonemode": "zbd",
    "rw": "write",
    "bs": "4k",
    "size": "1z",
}


def test_bench_gives_fio_json_and_percentiles():
    r = znskit.bench(JOB, seed=3)
    (job,) = r.jobs
    assert job["jobname"] == "job"
    assert job["write"]["total_ios"] > 0
    assert job["write"]["iops"] > 0
    df = r.percentiles
    assert list(df.columns) == ["job", "direction", "percentile", "clat_ns"]
    w = df[df.direction == "write"].set_index("percentile")["clat_ns"]
    assert w.loc[99.0] >= w.loc[50.0] > 0
    # deterministic: the same seed gives the same numbers
    assert znskit.bench(JOB, seed=3).json == r.json


def test_bench_takes_job_file_text_and_sections():
    text = znskit.job_text({"global": {k: v for k, v in JOB.items()}, "a": {"bs": "16k"}})
    assert text.startswith("[global]\nfilename=tiny\n")
    r = znskit.bench(text)
    assert r.jobs[0]["write"]["bw"] > 0


def test_bench_runs_several_job_files_in_turn_on_the_same_devices(tmp_path):
    # as the README's write-prepare.fio then seqread.fio: one job writes the
    # data, the next one (a file, a dict or job text) reads it
    zbd = {"filename": "tiny", "zonemode": "zbd", "direct": 1, "size": "2z", "bs": "64k"}
    write, read = dict(zbd, rw="write"), dict(zbd, rw="read")
    read_file = tmp_path / "read.fio"
    read_file.write_text(znskit.job_text({"r": read}))
    r = znskit.bench([write, read_file])
    assert [j["groupid"] for j in r.jobs] == [0, 1]
    assert r.jobs[1]["read"]["io_bytes"] == r.jobs[0]["write"]["io_bytes"] > 0
    # the read alone finds nothing written
    with pytest.raises(znskit.ZnsError, match="write it first"):
        znskit.bench(read)
    with pytest.raises(znskit.ZnsError, match="no jobs"):
        znskit.bench([])


def test_bad_jobs_raise_zns_errors():
    with pytest.raises(znskit.ZnsError, match="bad value `nope` for option `rw`"):
        znskit.bench(dict(JOB, rw="nope"))
    with pytest.raises(znskit.ZnsError, match="no_such_file.fio"):
        znskit.bench("no_such_file.fio")


def test_zone_commands_in_virtual_time_and_nvme_errors():
    d = znskit.Device("tiny", seed=1)
    g = d.geometry()
    assert g["zone_count"] > 1 and g["lba_bytes"] in (512, 4096)
    z1 = g["zone_size_lbas"]
    t0 = d.now_ns
    lat = d.write(z1, nlb=4)
    assert lat > 0 and d.now_ns == t0 + lat
    zones = d.report_zones(1, 1)
    assert zones[0]["wp"] == z1 + 4 and zones[0]["slba"] == z1 and zones[0]["zone"] == 1
    assert zones[0]["state"] == "IMP_OPENED"
    assert d.append(1, nlb=2) == z1 + 4
    assert len(d.read(z1, 2)) == 2 * g["lba_bytes"]
    # a write off the write pointer: Zone Invalid Write, as an exception with the status
    with pytest.raises(znskit.NvmeError) as e:
        d.write(z1 + 100, nlb=1)
    assert e.value.status == "Zone Invalid Write"
    assert (e.value.sct, e.value.sc) == (1, 0xBC)
    assert e.value.injected is False
    assert isinstance(e.value, znskit.ZnsError)
    d.finish(1)
    assert d.report_zones(1, 1)[0]["state"] == "FULL"
    with pytest.raises(znskit.NvmeError) as e:
        d.write(z1, nlb=1)
    assert e.value.status == "Zone is Full"
    with pytest.raises(znskit.ZnsError, match="which zone"):
        d.reset()
    d.reset(all=True)
    assert d.report_zones(1, 1)[0]["state"] == "EMPTY"
    with pytest.raises(znskit.ZnsError, match="zone 100000"):
        d.open(100000)
    with pytest.raises(znskit.ZnsError):
        znskit.Device("no-such-profile")


def test_the_package_says_its_version_and_names_its_errors():
    assert znskit.__version__ == "0.1.0"
    assert znskit.ZnsError.__module__ == "znskit" and znskit.NvmeError.__module__ == "znskit"
    assert "os" not in znskit.__all__ and "Device" in znskit.__all__


def test_an_option_set_to_none_is_an_error_not_left_out():
    with pytest.raises(znskit.ZnsError, match="rw=None"):
        znskit.bench({"filename": "zn540", "rw": None, "size": "1z"})


def test_a_bench_job_the_device_rejects_raises_nvme_error():
    # zonemode=none sequential writes run into the end of the zone range
    with pytest.raises(znskit.NvmeError) as e:
        znskit.bench({"filename": "tiny", "rw": "write", "size": "2z"})
    assert e.value.status == "Zone is Full" and (e.value.sct, e.value.sc) == (1, 0xB9), e.value
    assert "(SCT 1h SC B9h)" in str(e.value)


def test_crashtest_and_cache_run_give_reports():
    r = znskit.crashtest(policy="wplog", trials=3, seed=5)
    assert r["policy"] == "wplog"
    assert r["trials"] + r["not_counted"] == 3
    assert r["failures"] == 0
    with pytest.raises(znskit.ZnsError, match="members = 2"):
        znskit.crashtest(members=2)
    with pytest.raises(znskit.ZnsError, match="parameter `qdepth`"):
        znskit.crashtest(qdepth=2)
    # a chunk the array refuses is an error, never a failure rate
    with pytest.raises(znskit.ZnsError, match=r"chunk_kib = 16: .*2 × ZRWAFG = 32 KiB"):
        znskit.crashtest(policy="wplog", trials=2, chunk_kib=16)
    c = znskit.cache_run(device="zn540", zones=8, requests=3000, remote_latency="0", workers=8)
    assert 0.0 <= c["hit_ratio"] <= 1.0
    assert c["requests"] == 3000


def test_the_gil_is_released_while_a_simulation_runs():
    done = threading.Event()
    result = {}

    def work():
        result["r"] = znskit.crashtest(policy="wplog", trials=40, seed=1)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    spins = 0
    while not done.is_set():
        spins += 1
    t.join()
    assert result["r"]["failures"] == 0
    # with the GIL held for the whole campaign this loop would barely run
    assert spins > 100_000, spins
