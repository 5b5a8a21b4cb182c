//! `zns bench` as a fio stand-in: the example job files of `examples/fio/`
//! (the fio ZNS examples page's jobs) run, and their JSON reads like fio's,
//! both for the fields fio-parsing scripts use and for fio's own json+
//! consumer `fio_jsonplus_clat2csv` (Debian's `fio` package, installed by
//! `scripts/setup`).
//!
//! Host time in the test profile (measured on the 2-core dev machine):
//! seqwrite.fio 0.9 s, write-prepare.fio 0.7 s, write-prepare + seqread
//! 2.9 s — these run as shipped. randread.fio (256 GiB of reads, 4.5 s) and
//! zbd-read-while-write.fio (30 s of virtual time, 7 s) run here with their
//! size / runtime shrunk in a copy of the file; everything else in them is
//! as shipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fio")
}

fn zns(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zns"))
        .args(args)
        .output()
        .expect("run zns")
}

fn ok_json(args: &[&str]) -> Value {
    let o = zns(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "zns {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stderr.is_empty(), "no progress bar off a terminal");
    serde_json::from_slice(&o.stdout).expect("stdout is one JSON document")
}

fn example(name: &str) -> String {
    examples().join(name).to_str().unwrap().to_string()
}

/// A copy of an example with some `key=value` lines replaced.
fn shrunk(dir: &Path, name: &str, replace: &[(&str, &str)]) -> String {
    let mut text = std::fs::read_to_string(examples().join(name)).unwrap();
    for (from, to) in replace {
        assert!(text.contains(from), "{name} has `{from}`");
        text = text.replace(from, to);
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn num(v: &Value, path: &str) -> f64 {
    let mut cur = v;
    for seg in path.split('.') {
        cur = &cur[seg];
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("no number at {path}: {cur}"))
}

fn job<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

/// What fio-parsing scripts read, with fio's units and the relations fio's
/// numbers keep between them.
fn check_fio_fields(doc: &Value, name: &str, ddir: &str, idle: &str) {
    for key in ["fio version", "timestamp", "timestamp_ms", "time", "jobs"] {
        assert!(doc.get(key).is_some(), "top-level `{key}`");
    }
    let j = job(doc, name);
    assert_eq!(j["error"], 0);
    assert!(j["groupid"].is_u64());
    assert!(j["job options"].is_object());
    let d = &j[ddir];
    let io_bytes = num(d, "io_bytes");
    let runtime_ms = num(d, "runtime");
    let total_ios = num(d, "total_ios");
    assert!(io_bytes > 0.0 && runtime_ms > 0.0 && total_ios > 0.0, "{d}");
    assert_eq!(num(d, "io_kbytes"), (io_bytes / 1024.0).floor());
    let bw_bytes = num(d, "bw_bytes");
    // fio: bw_bytes = io_bytes / runtime (ms), to within the ms rounding
    let fio_bw = io_bytes * 1000.0 / runtime_ms;
    assert!(
        (bw_bytes - fio_bw).abs() <= 1e-3 * fio_bw,
        "bw_bytes {bw_bytes} vs {fio_bw}"
    );
    assert_eq!(num(d, "bw"), (bw_bytes / 1024.0).floor(), "bw is KiB/s");
    let iops = num(d, "iops");
    assert!(
        (iops - total_ios * 1000.0 / runtime_ms).abs() < 1e-3 * iops,
        "iops"
    );
    for lat in ["clat_ns", "lat_ns"] {
        let l = &d[lat];
        assert_eq!(num(l, "N"), total_ios, "{lat}.N");
        let (min, mean, max) = (num(l, "min"), num(l, "mean"), num(l, "max"));
        assert!(0.0 < min && min <= mean && mean <= max, "{lat}: {l}");
        assert!(num(l, "stddev") >= 0.0);
    }
    // percentiles keyed like fio, in ns, ascending
    let p = d["clat_ns"]["percentile"]
        .as_object()
        .expect("clat percentiles");
    for key in [
        "1.000000",
        "50.000000",
        "99.000000",
        "99.900000",
        "99.990000",
    ] {
        assert!(p.contains_key(key), "percentile key {key}: {p:?}");
    }
    let p50 = p["50.000000"].as_f64().unwrap();
    let p99 = p["99.000000"].as_f64().unwrap();
    assert!(p50 <= p99 && p99 <= num(d, "clat_ns.max") * 1.1);
    for key in [
        "bw_min",
        "bw_max",
        "bw_mean",
        "bw_samples",
        "iops_min",
        "iops_max",
        "iops_mean",
    ] {
        assert!(d[key].is_number(), "{ddir}.{key}");
    }
    // the idle direction is there, empty, as in fio
    assert_eq!(num(&j[idle], "io_bytes"), 0.0);
    assert_eq!(num(&j["trim"], "io_bytes"), 0.0);
    let lat_share: f64 = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| j[*k].as_object().unwrap().values())
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!(
        (lat_share - 100.0).abs() < 0.5,
        "latency buckets add up to 100%: {lat_share}"
    );
}

#[test]
fn seqwrite_example_as_shipped_reads_like_fio_json() {
    let doc = ok_json(&["bench", "--output-format=json", &example("seqwrite.fio")]);
    check_fio_fields(&doc, "seqwrite", "write", "read");
    let j = job(&doc, "seqwrite");
    // 14 jobs × 8 zones of the ZN540 (1077 MiB each), group_reporting
    assert_eq!(doc["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(num(j, "write.io_bytes"), 14.0 * 8.0 * 1077.0 * 1048576.0);
    assert_eq!(
        num(j, "write.total_ios") * 65536.0,
        num(j, "write.io_bytes")
    );
    assert_eq!(j["zone_resets"], 0);
    assert!(
        j["write"]["clat_ns"].get("bins").is_none(),
        "bins only with json+"
    );
}

/// The page's sequence: prepare the zones, then read them back, in one run
/// (job files run one after another, like fio runs them), as json+.
#[test]
fn prepare_then_seqread_as_shipped_feeds_fio_jsonplus_clat2csv() {
    let out = tempfile::tempdir().unwrap();
    let json_path = out.path().join("seqread.json");
    let o = zns(&[
        "bench",
        "--output-format=json+",
        "--output",
        json_path.to_str().unwrap(),
        &example("write-prepare.fio"),
        &example("seqread.fio"),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stdout.is_empty(), "--output takes the report");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    check_fio_fields(&doc, "writeprepare", "write", "read");
    check_fio_fields(&doc, "seqread", "read", "write");
    assert_eq!(job(&doc, "writeprepare")["groupid"], 0);
    assert_eq!(job(&doc, "seqread")["groupid"], 1);
    // json+ bins: fio's histogram bucket values (ns) → counts, adding up to N
    for (name, ddir) in [("writeprepare", "write"), ("seqread", "read")] {
        let lat = &job(&doc, name)[ddir]["clat_ns"];
        let bins = lat["bins"].as_object().expect("json+ has bins");
        let total: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(total as f64, num(lat, "N"), "{name} bins");
        assert!(bins.keys().all(|k| k.parse::<u64>().is_ok()));
    }
    jsonplus_clat2csv(&json_path, &doc);
}

/// Runs fio's own json+ consumer on the document, when it is installed
/// (`scripts/setup` installs it; `scripts/test` sets ZNSKIT_REQUIRE_FIO=1 so
/// a missing install fails instead of skipping).
fn jsonplus_clat2csv(json_path: &Path, doc: &Value) {
    let tool = "fio_jsonplus_clat2csv";
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        assert!(
            std::env::var_os("ZNSKIT_REQUIRE_FIO").is_none(),
            "{tool} not installed (run scripts/setup)"
        );
        eprintln!("skipping {tool} check: not installed (scripts/setup installs fio)");
        return;
    }
    let dir = json_path.parent().unwrap();
    let csv_stub = dir.join("clat.csv");
    for extra in [&[][..], &["--validate"][..]] {
        let o = Command::new(tool)
            .arg(json_path)
            .arg(&csv_stub)
            .args(extra)
            .output()
            .expect("run fio_jsonplus_clat2csv");
        assert!(
            o.status.success(),
            "{tool} {extra:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let jobs = doc["jobs"].as_array().unwrap();
    for (i, j) in jobs.iter().enumerate() {
        let csv = std::fs::read_to_string(dir.join(format!("clat_job{i}.csv"))).unwrap();
        let mut lines = csv.lines();
        let header: Vec<String> = lines
            .next()
            .unwrap()
            .split(',')
            .map(|s| s.trim().to_string())
            .collect();
        assert_eq!(header[0], "nsec");
        for ddir in ["read", "write"] {
            let n = num(&j[ddir]["clat_ns"], "N") as u64;
            let col = |what: &str| {
                header
                    .iter()
                    .position(|h| *h == format!("{ddir}_clat_ns_{what}"))
                    .unwrap()
            };
            let (count_col, cum_col, pct_col) =
                (col("count"), col("cumulative"), col("percentile"));
            let rows: Vec<Vec<String>> = csv
                .lines()
                .skip(1)
                .map(|l| l.split(',').map(|s| s.trim().to_string()).collect())
                .filter(|r: &Vec<String>| !r[count_col].is_empty())
                .collect();
            if n == 0 {
                assert!(rows.is_empty(), "job {i} {ddir}: no latency rows");
                continue;
            }
            let counts: u64 = rows
                .iter()
                .map(|r| r[count_col].parse::<u64>().unwrap())
                .sum();
            assert_eq!(counts, n, "job {i} {ddir}: counts add up to clat_ns.N");
            let last = rows.last().unwrap();
            assert_eq!(last[cum_col].parse::<u64>().unwrap(), n);
            assert_eq!(last[pct_col].parse::<f64>().unwrap(), 1.0);
            // the rows are in latency order and inside [min, max] (bucket values)
            let lats: Vec<u64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
            assert!(lats.windows(2).all(|w| w[0] < w[1]));
            let max = num(&j[ddir]["clat_ns"], "max");
            assert!(
                *lats.last().unwrap() as f64 <= max * 1.05,
                "{lats:?} vs max {max}"
            );
        }
    }
}

/// randread.fio and zbd-read-while-write.fio with the size and run time cut
/// down (the rest as shipped), after the page's write-prepare.
#[test]
fn randread_and_read_while_write_examples() {
    let dir = tempfile::tempdir().unwrap();
    let prepare = shrunk(
        dir.path(),
        "write-prepare.fio",
        &[
            ("size=10z", "size=3z"),
            ("offset_increment=10z", "offset_increment=3z"),
        ],
    );
    let randread = shrunk(dir.path(), "randread.fio", &[("size=128z", "size=8z")]);
    let doc = ok_json(&["bench", "--output-format=json", &prepare, &randread]);
    check_fio_fields(&doc, "randread", "read", "write");
    let rr = job(&doc, "randread");
    // random reads do `size` bytes of I/O: 8 zones of 2 GiB (zone size, not capacity)
    assert_eq!(num(rr, "read.io_bytes"), 8.0 * 2.0 * 1073741824.0);
    assert_eq!(rr["job options"]["iodepth"], "32");

    let rww = shrunk(
        dir.path(),
        "zbd-read-while-write.fio",
        &[("runtime=30", "runtime=1")],
    );
    let doc = ok_json(&["bench", "--output-format=json", &prepare, &rww]);
    check_fio_fields(&doc, "write", "write", "read");
    check_fio_fields(&doc, "randread", "read", "write");
    let (w, r) = (job(&doc, "write"), job(&doc, "randread"));
    // time_based: both ran the whole second of virtual time
    for j in [w, r] {
        let ms = j["read"]["runtime"]
            .as_u64()
            .unwrap()
            .max(j["write"]["runtime"].as_u64().unwrap());
        assert!((990..=1010).contains(&ms), "runtime {ms} ms");
    }
    // flow=-3 / flow=7: the I/O counts keep a 3:7 ratio
    let (wn, rn) = (num(w, "write.total_ios"), num(r, "read.total_ios"));
    let share = wn / (wn + rn);
    assert!((share - 0.3).abs() < 0.01, "write share {share}");
    assert!(w.get("zone_resets").is_some());
}

#[test]
fn normal_output_is_fio_text() {
    let args = [
        "bench",
        "--name=w",
        "--filename=tiny",
        "--rw=write",
        "--bs=16k",
        "--direct=1",
        "--zonemode=zbd",
        "--size=2z",
    ];
    let o = zns(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    for needle in [
        "w: (g=0): rw=write, bs=(R) 16.0KiB-16.0KiB, (W) 16.0KiB-16.0KiB, (T) 16.0KiB-16.0KiB, ioengine=psync, iodepth=1\n",
        "Starting 1 process\n",
        "w: (groupid=0, jobs=1): err= 0: ",
        "  write: IOPS=",
        " zone resets\n",
        "    clat percentiles (",
        "     |  1.00th=[",
        "  cpu          : usr=",
        "     issued rwts: total=0,",
        "\nRun status group 0 (all jobs):\n  WRITE: bw=",
    ] {
        assert!(text.contains(needle), "`{needle}` in:\n{text}");
    }
    // the same jobs and seed give the same report, byte for byte
    let again = zns(&args);
    assert_eq!(String::from_utf8(again.stdout).unwrap(), text);
}

#[test]
fn bad_jobs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &str); 4] = [
        (
            "unknown.fio",
            "[global]\nfilename=zn540\n[a]\nrw=write\nblocksise=4k\n",
            "unknown.fio:5: unknown option `blocksise` (did you mean `bs`?)",
        ),
        (
            "suffix.fio",
            "[a]\nfilename=zn540\nsize=8q\n",
            "suffix.fio:3: bad value `8q` for option `size`",
        ),
        (
            "buffered.fio",
            "[global]\nfilename=zn540\nzonemode=zbd\n[a]\nrw=write\nsize=1z\n",
            "zonemode=zbd with writes requires direct=1",
        ),
        (
            "open.fio",
            "[global]\nfilename=zn540\nzonemode=zbd\ndirect=1\nmax_open_zones=20\n[a]\nrw=write\nsize=1z\n",
            "max_open_zones=20 is more than the device allows (14 open zones)",
        ),
    ];
    for (name, text, msg) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let o = zns(&["bench", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{name}: {err}");
        assert!(err.contains(msg), "{name}: `{msg}` in `{err}`");
        assert!(o.stdout.is_empty());
    }
    // usage errors are 2, an unreadable job file is 4
    for (args, code) in [
        (&["bench"][..], 2),
        (&["bench", "--output-format=xml", "--name=a"], 2),
        (&["bench", "x.fio", "--name=a"], 2),
        (&["bench", "--cmdhelp=nosuch"], 2),
        (&["bench", "/nonexistent/job.fio"], 4),
    ] {
        assert_eq!(zns(args).status.code(), Some(code), "{args:?}");
    }
}

#[test]
fn help_and_cmdhelp() {
    let o = zns(&["bench", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = String::from_utf8(o.stdout).unwrap();
    assert!(
        help.contains("--output-format=FMT") && help.contains("Examples:"),
        "{help}"
    );
    let o = zns(&["bench", "--cmdhelp=offset_increment"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .starts_with("offset_increment"));
    let o = zns(&["bench", "--cmdhelp"]);
    let all = String::from_utf8(o.stdout).unwrap();
    assert!(
        all.contains("zonemode") && all.contains("[znskit]"),
        "{all}"
    );
}

/// A job that ends on an I/O error: the JSON report is still printed, with
/// fio's `error` set to the errno (EIO for a full zone), and `zns bench`
/// exits 1 after it, as fio does.
#[test]
fn a_failed_job_still_gets_its_json_report() {
    let o = zns(&[
        "bench",
        "--output-format=json",
        "--name=x",
        "--filename=tiny",
        "--rw=write",
        "--size=2z",
        "--direct=1",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: Value = serde_json::from_slice(&o.stdout).expect("a JSON report");
    assert_eq!(job(&doc, "x")["error"], 5);
    assert!(job(&doc, "x")["write"]["io_bytes"].as_u64().unwrap() > 0);
    assert!(String::from_utf8_lossy(&o.stderr).contains("Zone is Full"));
}

/// Keys come in fio's order (a reader iterating a JSON object sees what
/// fio's readers see): the job's keys as real fio 3.33 orders them,
/// percentiles and I/O depths in numeric order, `job options` with the
/// job's name first and its options as given.
#[test]
fn json_keys_come_in_fio_order() {
    let ours = ok_json(&[
        "bench",
        "--output-format=json",
        "--name=x",
        "--filename=tiny",
        "--rw=write",
        "--zonemode=zbd",
        "--direct=1",
        "--size=1z",
    ]);
    let out = Command::new("fio")
        .args([
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--rw=write",
            "--output-format=json",
        ])
        .output()
        .expect("fio (scripts/setup installs it)");
    let start = out
        .stdout
        .iter()
        .position(|&b| b == b'{')
        .expect("fio's JSON");
    let fio: Value = serde_json::from_slice(&out.stdout[start..]).expect("fio's JSON");
    let keys =
        |v: &Value| -> Vec<String> { v.as_object().expect("an object").keys().cloned().collect() };
    let (our_job, fio_job) = (&ours["jobs"][0], &fio["jobs"][0]);
    let fio_keys = keys(fio_job);
    let common: Vec<String> = keys(our_job)
        .into_iter()
        .filter(|k| fio_keys.contains(k))
        .collect();
    let fio_order: Vec<String> = fio_keys
        .into_iter()
        .filter(|k| common.contains(k))
        .collect();
    assert_eq!(common, fio_order, "the job's keys in fio's order");
    let numeric = |v: &Value| -> Vec<f64> {
        keys(v)
            .iter()
            .map(|k| k.trim_start_matches(">=").parse::<f64>().unwrap())
            .collect()
    };
    let pct = numeric(&our_job["write"]["clat_ns"]["percentile"]);
    assert!(pct.windows(2).all(|w| w[0] < w[1]), "{pct:?}");
    let depths = numeric(&our_job["iodepth_level"]);
    assert!(depths.windows(2).all(|w| w[0] <= w[1]), "{depths:?}");
    let opts = keys(&our_job["job options"]);
    assert_eq!(
        opts,
        ["name", "filename", "rw", "zonemode", "direct", "size"]
    );
}

/// Real fio's JSON for the same job options (ioengine=null: no device).
fn real_fio_json(args: &[&str]) -> Value {
    let out = Command::new("fio")
        .args(args)
        .args(["--ioengine=null", "--output-format=json"])
        .output()
        .expect("fio (scripts/setup installs it)");
    let start = out
        .stdout
        .iter()
        .position(|&b| b == b'{')
        .unwrap_or_else(|| panic!("fio's JSON: {}", String::from_utf8_lossy(&out.stderr)));
    serde_json::from_slice(&out.stdout[start..]).expect("fio's JSON")
}

/// `bs` per direction and `bssplit` issue the sizes real fio issues: the
/// same mean size per direction (io_bytes / total_ios) from the same
/// options, ours on an emulated block SSD, fio's on its null engine.
#[test]
fn block_size_forms_match_real_fio() {
    for (opts, dirs) in [
        (
            vec!["--rw=randrw", "--bs=4k,16k", "--number_ios=2000"],
            &["read", "write"][..],
        ),
        (
            // fio's random map makes it fall back to sizes that fit the
            // blocks still free (fewer 64 KiB writes as its 1 GiB fills):
            // without it, the split is the weights alone, as ours
            vec![
                "--rw=randwrite",
                "--bssplit=4k/25:64k/",
                "--number_ios=4000",
                "--norandommap",
            ],
            &["write"][..],
        ),
        (
            vec!["--rw=write", "--bsrange=4k-32k", "--number_ios=4000"],
            &["write"][..],
        ),
    ] {
        let mut ours_args = vec![
            "bench",
            "--output-format=json",
            "--name=j",
            "--filename=tiny-ftl",
        ];
        ours_args.extend(opts.iter().copied());
        let ours = ok_json(&ours_args);
        let mut fio_args = vec!["--name=j", "--size=1g"];
        fio_args.extend(opts.iter().copied());
        let fio = real_fio_json(&fio_args);
        for dir in dirs {
            let mean = |doc: &Value| {
                num(&doc["jobs"][0], &format!("{dir}.io_bytes"))
                    / num(&doc["jobs"][0], &format!("{dir}.total_ios"))
            };
            let (a, b) = (mean(&ours), mean(&fio));
            assert!(
                (a - b).abs() / b < 0.05,
                "{opts:?} {dir}: mean I/O size ours {a:.0} B, fio {b:.0} B"
            );
        }
    }
}

/// `write_lat_log`, `write_bw_log`, `write_iops_log` write the files real
/// fio writes for the same options, with its lines' layout: the same file
/// names in the working directory, one line per I/O, the same direction,
/// size (and offset column with log_offset) on every line.
#[test]
fn log_files_are_laid_out_as_fio_writes_them() {
    let base = std::env::temp_dir().join(format!("zns-fio-logs-{}", std::process::id()));
    let (ours_dir, fio_dir) = (base.join("ours"), base.join("fio"));
    for d in [&ours_dir, &fio_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let opts = [
        "--name=j",
        "--rw=randwrite",
        "--bs=8k",
        "--number_ios=200",
        "--write_lat_log=lg",
        "--write_bw_log=lg",
        "--write_iops_log=lg",
        "--log_offset=1",
    ];
    let o = Command::new(env!("CARGO_BIN_EXE_zns"))
        .current_dir(&ours_dir)
        .args(["bench", "--filename=tiny-ftl"])
        .args(opts)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let f = Command::new("fio")
        .current_dir(&fio_dir)
        .args(["--ioengine=null", "--size=1g"])
        .args(opts)
        .output()
        .expect("fio (scripts/setup installs it)");
    assert!(f.status.success(), "{}", String::from_utf8_lossy(&f.stderr));
    let names = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&ours_dir), names(&fio_dir));
    for name in names(&fio_dir) {
        let read = |d: &Path| std::fs::read_to_string(d.join(&name)).unwrap();
        let (ours, fio) = (read(&ours_dir), read(&fio_dir));
        assert_eq!(ours.lines().count(), fio.lines().count(), "{name}");
        for (a, b) in ours.lines().zip(fio.lines()) {
            let (a, b): (Vec<&str>, Vec<&str>) = (a.split(", ").collect(), b.split(", ").collect());
            assert_eq!(a.len(), b.len(), "{name}: `{a:?}` vs fio's `{b:?}`");
            // direction and size alike; offsets are multiples of the size
            assert_eq!(a[2..4], b[2..4], "{name}");
            assert_eq!(a[4].parse::<u64>().unwrap() % 8192, 0, "{name}");
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// rw=trim / randtrim deallocate a conventional namespace, reported in
/// fio's `trim` section as fio reports them; a zoned namespace refuses them.
#[test]
fn trims_are_reported_as_fio_reports_them() {
    for rw in ["--rw=trim", "--rw=randtrim"] {
        let opts = [rw, "--name=t", "--bs=64k", "--size=8m"];
        let mut ours_args = vec!["bench", "--output-format=json", "--filename=tiny-ftl"];
        ours_args.extend(opts);
        let ours = ok_json(&ours_args);
        let fio = real_fio_json(&opts);
        for key in ["io_bytes", "total_ios"] {
            let path = format!("trim.{key}");
            assert_eq!(
                num(&ours["jobs"][0], &path),
                num(&fio["jobs"][0], &path),
                "{rw} {key}"
            );
        }
        assert_eq!(num(&ours["jobs"][0], "trim.total_ios"), 128.0);
        assert_eq!(num(&ours["jobs"][0], "write.total_ios"), 0.0);
    }
    let o = zns(&["bench", "--name=t", "--filename=tiny", "--rw=trim"]);
    assert_eq!(o.status.code(), Some(3), "bad input");
    assert!(String::from_utf8_lossy(&o.stderr).contains("zone_op=reset"));
}

/// verify=: a write job reads back and checks what it wrote (the reads
/// counted as reads, as real fio counts them on a file), and a block
/// overwritten behind its back fails a verifying read job with fio's error
/// 84 (EILSEQ), ending the run non-zero.
#[test]
fn verify_reads_back_and_catches_a_spoiled_block() {
    let file = std::env::temp_dir().join(format!("zns-verify-{}.dat", std::process::id()));
    let file_arg = format!("--filename={}", file.display());
    for rw in ["--rw=write", "--rw=randwrite"] {
        let opts = ["--name=w", rw, "--bs=4k", "--size=2m", "--verify=crc32c"];
        let mut ours_args = vec!["bench", "--output-format=json", "--filename=tiny-ftl"];
        ours_args.extend(opts);
        let ours = ok_json(&ours_args);
        let out = Command::new("fio")
            .args(opts)
            .args([file_arg.as_str(), "--output-format=json"])
            .output()
            .expect("fio");
        let text = String::from_utf8_lossy(&out.stdout);
        let fio: Value =
            serde_json::from_str(&text[text.find('{').expect("fio's JSON")..]).unwrap();
        for path in ["read.io_bytes", "write.io_bytes", "error"] {
            assert_eq!(
                num(&ours["jobs"][0], path),
                num(&fio["jobs"][0], path),
                "{rw} {path}"
            );
        }
    }
    let _ = std::fs::remove_file(&file);

    let dir = std::env::temp_dir().join(format!("zns-verify-job-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job_file = dir.join("spoil.fio");
    std::fs::write(
        &job_file,
        "[global]\nfilename=tiny-ftl\nbs=4k\nsize=2m\n\
         [w]\nrw=write\nverify=md5\ndo_verify=0\n\
         [spoil]\nstonewall\nrw=write\noffset=1m\nsize=8k\n\
         [check]\nstonewall\nrw=read\nverify=md5\n",
    )
    .unwrap();
    let o = zns(&["bench", "--output-format=json", job_file.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: Value = serde_json::from_slice(&o.stdout).expect("the report is printed first");
    let check = job(&doc, "check");
    assert_eq!(num(check, "error"), 84.0);
    // it read up to and including the first spoiled block, as fio stops
    assert_eq!(num(check, "read.io_bytes"), (1024 * 1024 + 4096) as f64);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("failed verification") && err.contains("offset 1048576"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
