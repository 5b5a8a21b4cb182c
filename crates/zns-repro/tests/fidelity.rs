//! The fidelity suite: metric language, definition files, one cheap
//! end-to-end id. The whole suite is run by `zns fidelity` (or
//! `cargo test --release -p zns-repro --test fidelity -- --ignored`).

use std::path::PathBuf;

use serde_json::json;
use zns_bench::job::parse_job_file;
use zns_repro::experiments::{Experiments, BUILT_IN};
use zns_repro::fidelity::{
    json_path, judge, run_fidelity, FidelityOptions, Metric, MetricError, Status, Suite, Target,
    TargetKind,
};

fn metric(s: &str) -> Metric {
    let v: toml::Value = toml::from_str(&format!("m = {s}")).unwrap();
    Metric::from_toml(&v["m"]).unwrap()
}

fn doc() -> serde_json::Value {
    json!({"jobs": [
        {"jobname": "base", "groupid": 0,
         "write": {"iops": 1000.0, "lat_ns": {"mean": 11000.0,
                   "percentile": {"50.000000": 10000, "99.900000": 30000}}}},
        {"jobname": "first", "groupid": 1,
         "write": {"iops": 500.0, "lat_ns": {"mean": 13000.0,
                   "percentile": {"50.000000": 12000, "99.900000": 40000}}}},
        {"jobname": "qd2", "groupid": 2, "read": {"iops": 2000.0}},
        {"jobname": "qd4", "groupid": 3, "read": {"iops": 3000.0}},
    ]})
}

#[test]
fn leaf_paths_and_percentiles() {
    let d = doc();
    let m = metric(r#"{ job = "base", path = "write.lat_ns.mean", scale = 0.001 }"#);
    assert_eq!(m.eval(&d).unwrap(), 11.0);
    let p = metric(r#"{ job = "first", path = "write.lat_ns.percentile.99.9" }"#);
    assert_eq!(p.eval(&d).unwrap(), 40000.0);
    let p50 = metric(r#"{ job = "first", path = "write.lat_ns.percentile.50" }"#);
    assert_eq!(p50.eval(&d).unwrap(), 12000.0);
    assert_eq!(json_path(&d, "jobs.1.write.iops"), Some(500.0));
    let idx = metric(r##"{ job = "#2", path = "read.iops" }"##);
    assert_eq!(idx.eval(&d).unwrap(), 2000.0);
}

#[test]
fn difference_ratio_rel_change_and_reductions() {
    let d = doc();
    let diff = metric(
        r#"{ op = "diff", a = { job = "first", path = "write.lat_ns.mean" }, b = { job = "base", path = "write.lat_ns.mean" }, scale = 0.001 }"#,
    );
    assert!((diff.eval(&d).unwrap() - 2.0).abs() < 1e-12);
    let ratio = metric(
        r#"{ op = "ratio", a = { job = "first", path = "write.iops" }, b = { job = "base", path = "write.iops" } }"#,
    );
    assert_eq!(ratio.eval(&d).unwrap(), 0.5);
    let rc = metric(
        r#"{ op = "abs", of = { op = "rel_change", a = { job = "first", path = "write.iops" }, b = { job = "base", path = "write.iops" } } }"#,
    );
    assert_eq!(rc.eval(&d).unwrap(), 0.5);
    let max = metric(r#"{ job = "qd*", path = "read.iops", reduce = "max", scale = 0.001 }"#);
    assert_eq!(max.eval(&d).unwrap(), 3.0);
    let sum = metric(r#"{ job = "qd*", path = "read.iops", reduce = "sum" }"#);
    assert_eq!(sum.eval(&d).unwrap(), 5000.0);
    let of = metric(
        r#"{ op = "min", of = [{ job = "qd2", path = "read.iops" }, { job = "qd4", path = "read.iops" }] }"#,
    );
    assert_eq!(of.eval(&d).unwrap(), 2000.0);
    let grp = metric(r#"{ job = "*", group = 3, path = "read.iops" }"#);
    assert_eq!(grp.eval(&d).unwrap(), 3000.0);
    let tmpl = metric(r#"{ job = "{job}", path = "read.iops" }"#).with_job("qd2");
    assert_eq!(tmpl.eval(&d).unwrap(), 2000.0);
}

#[test]
fn evaluation_errors_are_clear() {
    let d = doc();
    let e = metric(r#"{ job = "nosuch", path = "write.iops" }"#)
        .eval(&d)
        .unwrap_err();
    assert!(matches!(e, MetricError::NoJob { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("nosuch") && msg.contains("base"), "{msg}");
    let e = metric(r#"{ job = "qd*", path = "read.iops" }"#)
        .eval(&d)
        .unwrap_err();
    assert!(matches!(e, MetricError::Ambiguous { n: 2, .. }), "{e}");
    let e = metric(r#"{ job = "base", path = "write.clat_ns.mean" }"#)
        .eval(&d)
        .unwrap_err();
    assert!(e.to_string().contains("stopped at `write`"), "{e}");
    let e = metric(
        r#"{ op = "ratio", a = { job = "base", path = "write.iops" }, b = { job = "qd2", path = "read.iops", scale = 0 } }"#,
    )
    .eval(&d)
    .unwrap_err();
    assert!(matches!(e, MetricError::Math(_)));
    assert!(metric(r#"{ job = "x", path = "y" }"#)
        .eval(&json!({"no": "jobs"}))
        .is_err());
    // malformed metric definitions
    for bad in [
        r#"{ path = "write.iops" }"#,
        r#"{ job = "a" }"#,
        r#"{ op = "plus", a = { job = "a", path = "b" } }"#,
        r#"{ op = "diff", a = { job = "a", path = "b" } }"#,
        r#"{ job = "a", path = "b", reduce = "median" }"#,
        r#"{ job = "a", path = "b", typo = 1 }"#,
    ] {
        let v: toml::Value = toml::from_str(&format!("m = {bad}")).unwrap();
        assert!(Metric::from_toml(&v["m"]).is_err(), "{bad}");
    }
}

#[test]
fn judging_kinds() {
    let t = |kind, paper, tolerance| Target {
        id: "x".into(),
        source: String::new(),
        desc: None,
        paper,
        kind,
        tolerance,
    };
    assert!(judge(&t(TargetKind::Value, 10.0, 0.1), 10.9).1);
    assert!(!judge(&t(TargetKind::Value, 10.0, 0.1), 11.2).1);
    assert!(judge(&t(TargetKind::Value, 904.0, 0.0), 904.0).1);
    assert!(!judge(&t(TargetKind::Value, 904.0, 0.0), 903.0).1);
    assert!(judge(&t(TargetKind::AtMost, 0.05, 0.0), 0.01).1);
    assert!(!judge(&t(TargetKind::AtMost, 0.05, 0.0), 0.06).1);
    assert!(judge(&t(TargetKind::AtLeast, 5.0, 0.0), 6.0).1);
    assert!(judge(&t(TargetKind::Ratio, 0.27, 0.2), 0.3).1);
    assert!((judge(&t(TargetKind::Value, 10.0, 0.1), 11.0).0 - 0.1).abs() < 1e-12);
}

/// The checkout's experiments directory.
fn dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments"))
}

/// The built-in copy is the checkout's experiments directory, file for file.
#[test]
fn the_built_in_experiments_are_the_checkouts() {
    let mut on_disk = Vec::new();
    let mut stack = vec![dir()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                on_disk.push(p);
            }
        }
    }
    assert_eq!(on_disk.len(), BUILT_IN.len());
    for (rel, text) in BUILT_IN {
        assert_eq!(
            std::fs::read_to_string(dir().join(rel)).unwrap(),
            *text,
            "{rel}"
        );
    }
}

#[test]
fn definitions_are_consistent() {
    let suite = Suite::load(&Experiments::Dir(dir())).unwrap();
    for t in &suite.targets {
        assert!(
            suite.experiments.contains_key(&t.id),
            "{} has no experiment in fidelity.toml",
            t.id
        );
    }
    // the repo copy of the targets is what the suite reads
    assert!(suite.targets.len() >= 40);
    for job in suite.job_files() {
        let text = std::fs::read_to_string(dir().join(&job)).unwrap();
        let specs = parse_job_file(&text, &job).unwrap_or_else(|e| panic!("{job}: {e}"));
        assert!(!specs.is_empty(), "{job}");
    }
    // every curve's measured data exists and has points
    for c in &suite.curves {
        for s in &c.series {
            if let Some(d) = &s.data {
                let pts = zns_repro::fidelity::load_data(&Experiments::BuiltIn, d)
                    .unwrap_or_else(|e| panic!("{} / {}: {e}", c.id, s.label));
                assert!(!pts.is_empty(), "{} / {}", c.id, s.label);
            }
        }
    }
}

#[test]
fn bad_definition_files_are_errors() {
    let tmp = std::env::temp_dir().join(format!("zns-fidelity-bad-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let opts = FidelityOptions {
        experiments: Experiments::Dir(tmp.clone()),
        ..FidelityOptions::default()
    };
    // missing files
    assert!(run_fidelity(&opts, &mut |_, _, _| {}).is_err());
    std::fs::write(
        tmp.join("fidelity-targets.toml"),
        "[[target]]\nid = \"t.a\"\npaper = 1.0\nkind = \"value\"\ntolerance = 0.1\n",
    )
    .unwrap();
    // experiment for an unknown id
    std::fs::write(
        tmp.join("fidelity.toml"),
        "[[experiment]]\nid = \"t.b\"\njob = \"x.fio\"\nmetric = { job = \"a\", path = \"write.iops\" }\n",
    )
    .unwrap();
    let e = run_fidelity(&opts, &mut |_, _, _| {}).unwrap_err();
    assert!(e.to_string().contains("t.b"), "{e}");
    // a missing job file is an error row, not a failure of the whole run
    std::fs::write(
        tmp.join("fidelity.toml"),
        "[[experiment]]\nid = \"t.a\"\njob = \"missing.fio\"\nmetric = { job = \"a\", path = \"write.iops\" }\n",
    )
    .unwrap();
    let r = run_fidelity(&opts, &mut |_, _, _| {}).unwrap();
    assert_eq!(r.targets[0].status, Status::Error);
    assert!(r.targets[0]
        .note
        .as_deref()
        .unwrap()
        .contains("missing.fio"));
    // a job file that does not parse
    std::fs::write(tmp.join("missing.fio"), "[a]\nrw=sideways\n").unwrap();
    let r = run_fidelity(&opts, &mut |_, _, _| {}).unwrap();
    assert_eq!(r.targets[0].status, Status::Error);
    assert!(r.targets[0].note.as_deref().unwrap().contains("sideways"));
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn end_to_end_qd1_write_and_pending_sn540() {
    let mut calls = Vec::new();
    let opts = FidelityOptions {
        filter: Some("qd1.write_4k_spdk_us".into()),
        curves: false,
        ..FidelityOptions::default()
    };
    let r = run_fidelity(&opts, &mut |d, t, id| calls.push((d, t, id.to_string()))).unwrap();
    assert_eq!(r.targets.len(), 1);
    let t = &r.targets[0];
    assert_eq!(t.status, Status::Pass, "{}", r.to_text());
    assert!((t.emulated.unwrap() - 11.36).abs() / 11.36 < 0.10);
    assert_eq!(calls.last().unwrap().0, calls.last().unwrap().1);
    assert!(r.to_text().contains("zn540.qd1.write_4k_spdk_us"));
    assert_eq!(r.to_json()["targets"][0]["status"], "pass");

    // The sn540 (FTL) target has its experiment: it is run, not pending
    // (running it takes seconds in a debug build; whole_suite does).
    let suite = Suite::load(&Experiments::BuiltIn).unwrap();
    let e = &suite.experiments["sn540.vs_zn540.read_p95_under_full_write_ms"];
    assert!(e.pending.is_none());
    assert_eq!(e.job.as_deref(), Some("sn540-write-bw-timeseries.fio"));
}

/// The whole suite (slow in debug builds): prints the table, writes plots
/// to $ZNS_FIDELITY_PLOTS when set. `ZNS_FIDELITY_FILTER` selects ids.
/// Virtual time only: host time is measured by `zns fidelity` (the CLI).
#[test]
#[ignore]
fn whole_suite() {
    let opts = FidelityOptions {
        filter: std::env::var("ZNS_FIDELITY_FILTER").ok(),
        plots_dir: std::env::var("ZNS_FIDELITY_PLOTS").ok().map(PathBuf::from),
        ..FidelityOptions::default()
    };
    let r = run_fidelity(&opts, &mut |d, t, id| eprintln!("[{d}/{t}] {id}")).unwrap();
    println!("{}", r.to_text());
    for j in &r.job_files {
        println!(
            "{:<28} {:>8.2} s virtual {}",
            j.job,
            j.virtual_seconds.unwrap_or(0.0),
            j.error.as_deref().unwrap_or("")
        );
    }
    // the suite is a measurement: a failed or unevaluated target fails it
    let bad: Vec<&str> = r
        .targets
        .iter()
        .filter(|t| matches!(t.status, Status::Fail | Status::Error))
        .map(|t| t.id.as_str())
        .collect();
    assert!(bad.is_empty(), "targets failed or in error: {bad:?}");
    assert_eq!((r.failed, r.errors), (0, 0));
    assert!(r.passed > 0, "no target was measured");
    // so is a curve beyond its tolerance
    assert_eq!(
        (r.curves_failed, r.curves_errors),
        (0, 0),
        "curve series beyond their tolerance"
    );
}

/// A curve is judged like a target: within its tolerance it passes, beyond
/// it fails (and fails the report); measured data without a tolerance is a
/// definition error.
#[test]
fn curves_are_judged_against_their_tolerance() {
    let tmp = std::env::temp_dir().join(format!("zns-fidelity-curve-{}", std::process::id()));
    let data = tmp.join("data").join("zn540");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(dir().join("qd1-reqsize.fio"), tmp.join("qd1-reqsize.fio")).unwrap();
    let csv = "nvmeb_qd1_latency_vs_reqsize_lbaf_4k.csv";
    std::fs::copy(dir().join("data").join("zn540").join(csv), data.join(csv)).unwrap();
    std::fs::write(
        tmp.join("fidelity-targets.toml"),
        "[[target]]\nid = \"t.qd1\"\npaper = 11.36\nkind = \"value\"\ntolerance = 0.1\n",
    )
    .unwrap();
    let suite = |tolerance: &str| {
        format!(
            "[[experiment]]\nid = \"t.qd1\"\njob = \"qd1-reqsize.fio\"\n\
             metric = {{ job = \"w_spdk_4k\", path = \"write.lat_ns.mean\", scale = 0.001 }}\n\
             [[curve]]\nid = \"c\"\njob = \"qd1-reqsize.fio\"\n{tolerance}\n\
             [[curve.series]]\nlabel = \"write\"\nx = [4, 8]\njob_pattern = \"w_spdk_{{x}}k\"\n\
             metric = {{ job = \"{{job}}\", path = \"write.lat_ns.mean\", scale = 0.001 }}\n\
             data = {{ csv = \"{csv}\", x = \"request_kib\", y = \"spdk_write_lat_mean_us\" }}\n"
        )
    };
    let opts = FidelityOptions {
        experiments: Experiments::Dir(tmp.clone()),
        ..FidelityOptions::default()
    };
    let run = |tolerance: &str| {
        std::fs::write(tmp.join("fidelity.toml"), suite(tolerance)).unwrap();
        run_fidelity(&opts, &mut |_, _, _| {})
    };
    let e = run("").unwrap_err();
    assert!(e.to_string().contains("no tolerance"), "{e}");
    let e = run("tolerance = { mean = -1 }").unwrap_err();
    assert!(e.to_string().contains("positive fraction"), "{e}");

    let loose = run("tolerance = { mean = 0.5, max = 0.9 }").unwrap();
    let se = &loose.curves[0].series[0];
    assert_eq!(se.compared, 2);
    assert_eq!(se.status, Status::Pass, "{}", loose.to_text());
    assert_eq!((loose.curves_passed, loose.curves_failed), (1, 0));
    assert!(loose.all_passed());

    // The emulated QD1 write latency is within 10 % of the drive's but not
    // within 0.001 %: the same measurement fails a tighter tolerance.
    let tight = run("tolerance = { mean = 0.00001 }").unwrap();
    assert_eq!(tight.curves[0].series[0].status, Status::Fail);
    assert_eq!((tight.curves_passed, tight.curves_failed), (0, 1));
    assert!(!tight.all_passed());
    assert!(
        tight.to_text().contains("0 passed, 1 failed"),
        "{}",
        tight.to_text()
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
