//! `zns sweep`: exit codes, the summary, resume, a plot, and errors that
//! say what is wrong (docs/sweep.md).

use std::process::{Command, Output};

fn zns(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zns"))
        .args(args)
        .output()
        .expect("run zns")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_sweep_with_a_failing_point_finishes_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("s.toml");
    std::fs::write(
        &spec,
        "run = \"crashtest\"\nseeds = [1, 2]\n[params]\ntrials = 2\n[grid]\nmembers = [2, 3]\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let (s, o) = (spec.to_str().unwrap(), out.to_str().unwrap());
    let r = zns(&["sweep", s, "--out", o, "--json", "--workers", "2"]);
    assert_eq!(code(&r), 1, "{}", text(&r.stderr));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(
        (v["points"].as_u64(), v["ok"].as_u64(), v["failed"].as_u64()),
        (Some(4), Some(2), Some(2))
    );
    assert!(v["host_s_per_point"].as_f64().unwrap() > 0.0);
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5);
    assert!(csv.contains("RAID-5 needs at least 3"));
    // again without --resume: refused (usage); with it: nothing left to run
    let r = zns(&["sweep", s, "--out", o]);
    assert_eq!(code(&r), 2);
    assert!(text(&r.stderr).contains("--resume"), "{}", text(&r.stderr));
    let r = zns(&[
        "sweep",
        s,
        "--out",
        o,
        "--resume",
        "--plot",
        "x=seed,y=failure_rate,by=members",
    ]);
    assert_eq!(code(&r), 1, "{}", text(&r.stderr));
    let t = text(&r.stdout);
    assert!(t.contains("(0 run now, 4 already done)"), "{t}");
    assert!(t.contains("first failure: point 0: members = 2"), "{t}");
    assert!(out.join("plot-failure_rate-vs-seed.png").exists());
}

#[test]
fn bad_sweep_files_and_arguments_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("s.toml");
    std::fs::write(&spec, "run = \"crashtest\"\n[grid]\nqdepth = [1, 2]\n").unwrap();
    let s = spec.to_str().unwrap();
    let out = dir.path().join("o");
    let r = zns(&["sweep", s, "--out", out.to_str().unwrap()]);
    assert_eq!(code(&r), 3);
    assert!(
        text(&r.stderr).contains("parameter `qdepth`"),
        "{}",
        text(&r.stderr)
    );
    let r = zns(&["sweep", "/nonexistent/s.toml"]);
    assert_eq!(code(&r), 4, "{}", text(&r.stderr));
    let r = zns(&["sweep", s, "--plot", "x=a"]);
    assert_eq!(code(&r), 2);
    assert!(text(&r.stderr).contains("needs x=COLUMN and y=COLUMN"));
    let r = zns(&["sweep", s, "--address", "x:1"]);
    assert_eq!(code(&r), 2);
    let r = zns(&["sweep", "--help"]);
    assert_eq!(code(&r), 0);
    assert!(text(&r.stdout).contains("results.parquet"));
}
