//! `zns cache run`, `zns cache gen-workload` and `zns repro zncache` end to
//! end on small devices: outputs, files, JSON, and the exit codes of bad
//! parameters and bad workload files.

use std::process::{Command, Output};

fn zns(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zns"))
        .args(args)
        .output()
        .expect("run zns")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const TINY: [&str; 10] = [
    "--device",
    "tiny",
    "--zones",
    "16",
    "--requests",
    "600",
    "--workers",
    "8",
    "--remote-latency",
    "1ms",
];

#[test]
fn run_prints_a_summary_and_writes_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut args = vec![
        "cache",
        "run",
        "--policy",
        "clru",
        "--ratio",
        "4",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(TINY);
    let o = zns(&args);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let s = text(&o.stdout);
    assert!(
        s.contains("policy clru") && s.contains("hit ratio") && s.contains("p99.9"),
        "{s}"
    );
    assert!(s.contains("chunks relocated"), "{s}");
    for f in [
        "zncache.csv",
        "zncache.json",
        "zncache-summary.txt",
        "zncache-hit-ratio.png",
        "zncache-free-zones.png",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let csv = std::fs::read_to_string(out.join("zncache.csv")).unwrap();
    assert!(csv.starts_with("t_s,hit_ratio,"));
}

#[test]
fn json_and_the_block_backend() {
    let mut args = vec![
        "cache", "run", "--json", "--nsid", "1", "--region", "768k", "--policy", "zplru",
    ];
    let mut tiny = TINY.to_vec();
    tiny[1] = "zn540-cns";
    args.extend(tiny);
    let o = zns(&args);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backend"], "block");
    assert_eq!(v["counters"]["gets"], 600);
    assert!(v["samples"].as_array().is_some());
}

#[test]
fn a_raid_array_is_a_cache_device() {
    let mut args = vec![
        "cache",
        "run",
        "--json",
        "--set",
        "namespace.0.zone_count=24",
        "--set",
        "namespace.0.zone_size_lbas=512",
        "--set",
        "namespace.0.zone_capacity_lbas=448",
    ];
    let mut tiny = TINY.to_vec();
    tiny[1] = "raid:3xzn540,variant=raizn+";
    args.extend(tiny);
    let o = zns(&args);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backend"], "zns");
    assert_eq!(v["counters"]["gets"], 600);
    assert_eq!(v["device"], "raid:3xzn540,variant=raizn+,chunk=65536");
    // the cache's arrays are of identical members; a bad spec is a usage error
    for (device, says) in [
        ("raid:zn540,tiny,zn540", "identical members"),
        ("raid:3xzn540,variant=raid6", "unknown RAID variant"),
    ] {
        let o = zns(&["cache", "run", "--device", device]);
        assert_eq!(code(&o), 2, "{device}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(says),
            "{device}: {}",
            text(&o.stderr)
        );
    }
}

#[test]
fn generated_workload_files_replay() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.bin");
    let w = w.to_str().unwrap();
    let o = zns(&[
        "cache",
        "gen-workload",
        w,
        "--device",
        "tiny",
        "--zones",
        "16",
        "--ratio",
        "10",
        "--requests",
        "500",
        "--distribution",
        "uniform",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(std::fs::metadata(w).unwrap().len(), 2000);
    // a file of ids for a cache of 2 zones: the watermarks (which need more
    // zones to run a cache) do not apply to making the file
    let small = dir.path().join("small.bin");
    let o = zns(&[
        "cache",
        "gen-workload",
        small.to_str().unwrap(),
        "--device",
        "tiny",
        "--zones",
        "2",
        "--ratio",
        "2",
        "--requests",
        "100",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["ids"].as_u64().unwrap() > 0, "{v}");
    let mut args = vec!["cache", "run", "--workload", w, "--json"];
    args.extend(TINY);
    let o = zns(&args);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["counters"]["gets"], 500);
    // a text trace of real keys
    let t = dir.path().join("t.csv");
    std::fs::write(&t, "alpha,1\nbeta,2\nalpha,3\n").unwrap();
    let mut args = vec!["cache", "run", "--trace", t.to_str().unwrap(), "--json"];
    args.extend(TINY);
    let o = zns(&args);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["counters"]["hits"], 1);
}

#[test]
fn bad_parameters_and_files_exit_with_the_documented_codes() {
    let mut args = vec!["cache", "run", "--chunk", "1m"];
    args.extend(TINY);
    let o = zns(&args);
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("larger than a zone"),
        "{}",
        text(&o.stderr)
    );
    let mut args = vec!["cache", "run", "--ratio", "0"];
    args.extend(TINY);
    let o = zns(&args);
    assert_eq!(code(&o), 2);
    assert!(text(&o.stderr).contains("ratio"));
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    let mut args = vec!["cache", "run", "--workload", empty.to_str().unwrap()];
    args.extend(TINY);
    let o = zns(&args);
    assert_eq!(code(&o), 3, "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("empty"));
    let mut args = vec!["cache", "run", "--workload", "/nonexistent/w.bin"];
    args.extend(TINY);
    assert_eq!(code(&zns(&args)), 4);
    let o = zns(&["cache", "run", "--device", "no-such-profile"]);
    assert_eq!(code(&o), 3);
    let mut args = vec!["cache", "run", "--fetch-order", "sideways"];
    args.extend(TINY);
    let o = zns(&args);
    assert_eq!(code(&o), 2);
    assert!(text(&o.stderr).contains("fetch order"));
    let o = zns(&["repro", "zncache", "--exp", "x"]);
    assert_eq!(code(&o), 2);
    let o = zns(&["cache", "run", "--help"]);
    assert!(text(&o.stdout).contains("Examples:"));
}

#[test]
fn repro_runs_quick() {
    let o = zns(&[
        "repro",
        "zncache",
        "--quick",
        "--exp",
        "d",
        "--zns-device",
        "tiny",
        "--workers",
        "8",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let s = text(&o.stdout);
    assert!(
        s.contains("ZPLRU vs CLRU") && s.contains("block device: sn540-960g-mini nsid 1"),
        "{s}"
    );
    assert!(s.contains("relocated"), "{s}");
    // the paper's statements checked by direction, one line each
    assert!(
        s.contains("check [holds] ZIPF-10: CLRU hit ratio above ZPLRU's")
            || s.contains("check [DOES NOT HOLD] ZIPF-10: CLRU hit ratio above ZPLRU's"),
        "{s}"
    );
}

/// (c) runs the paper's 256 MiB and 512 MiB GC rows, and every run with a
/// cell in the paper's appendix B is compared with it figure by figure, as
/// validation (only the block drive's 64 KiB disk latencies calibrate), or
/// as diagnostic for the runs whose workers started out of step.
#[test]
fn repro_compares_with_the_papers_cells() {
    let o = zns(&[
        "repro",
        "zncache",
        "--quick",
        "--exp",
        "c",
        "--block-device",
        "zn540-cns",
        "--workers",
        "8",
        "--json",
        "--eta",
        "never",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &v.as_array().unwrap()[0];
    let labels: Vec<&str> = c["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert!(labels.contains(&"Block-512M-UNIF-10-5.3s"), "{labels:?}");
    let rows = c["vs_paper"].as_array().unwrap();
    // 8 runs with a paper cell (the spread rows have none) and the 4
    // out-of-step runs of the constant-sleep rows, × 6 latencies
    assert_eq!(rows.len(), 72, "{rows:?}");
    let diagnostic = |r: &&serde_json::Value| r["role"] == "diagnostic";
    assert_eq!(rows.iter().filter(diagnostic).count(), 24);
    assert!(rows
        .iter()
        .filter(diagnostic)
        .all(|r| r["run"].as_str().unwrap().ends_with("-out-of-step")));
    let row = rows
        .iter()
        .find(|r| r["run"] == "Block-256M-UNIF-10-3.2s" && r["metric"] == "get-mean-ms")
        .unwrap();
    assert_eq!(row["table"], 11);
    assert_eq!(row["paper"], 19701.04);
    assert_eq!(row["role"], "validation");
    assert!(row["ours"].as_f64().unwrap() > 0.0);
}

/// One size rule (fio's) for `--chunk` and a `raid:` name's `chunk=`:
/// `64KiB` is 64000 bytes in both, and both refuse it with the same reason
/// and the binary spelling.
#[test]
fn kib_is_1000_bytes_for_the_cache_chunk_and_the_raid_chunk_alike() {
    for args in [
        ["--device", "tiny", "--chunk", "64KiB"],
        ["--device", "raid:3xzn540,chunk=64KiB", "--chunk", "64k"],
    ] {
        let mut all = vec!["cache", "run", "--requests", "10"];
        all.extend(args);
        let o = zns(&all);
        let err = text(&o.stderr);
        assert!(matches!(code(&o), 2 | 3), "{args:?}: {err}");
        assert!(
            err.contains("chunk of 64000 bytes is not a non-zero multiple of the 4096-byte block"),
            "{args:?}: {err}"
        );
        assert!(err.contains("did you mean 64k?"), "{args:?}: {err}");
    }
}

/// An unknown profile is bad input (exit 3) whether it is the device or an
/// array's member; a name that breaks the grammar is a usage error (exit 2).
#[test]
fn an_unknown_profile_is_bad_input_in_an_array_too() {
    for (device, want) in [("zn541", 3), ("raid:5xzn541", 3), ("raid:5x", 2)] {
        let o = zns(&["cache", "run", "--device", device, "--requests", "10"]);
        assert_eq!(code(&o), want, "{device}: {}", text(&o.stderr));
    }
}
