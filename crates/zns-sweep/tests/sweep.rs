//! Sweep files, expansion, the local engine (a failing point, resume, the
//! same table for 1 and 2 workers), the table's CSV/Parquet and the plot.

use std::path::Path;

use zns_sweep::local::{self, Options};
use zns_sweep::point::{override_job_text, Status};
use zns_sweep::{store, Sweep, SweepError};

fn parse(text: &str) -> Result<Sweep, SweepError> {
    Sweep::parse(text, "test.toml", Path::new("."))
}

fn spec_error(text: &str) -> String {
    match parse(text) {
        Err(SweepError::Spec { msg, .. }) => msg,
        Err(other) => panic!("expected a spec error, got {other}"),
        Ok(_) => panic!("expected a spec error for {text}"),
    }
}

#[test]
fn bad_sweep_files_say_what_is_wrong() {
    assert!(spec_error("").contains("missing `run"));
    assert!(spec_error("run = \"nope\"").contains("expected one of crashtest"));
    assert!(spec_error("run = \"crashtest\"\nfoo = 1").contains("unknown key `foo`"));
    assert!(spec_error("run = \"crashtest\"\n[grid]\nqd = 1").contains("a list of values"));
    assert!(spec_error("run = \"crashtest\"\n[grid]\nqd = []").contains("empty list"));
    assert!(spec_error("run = \"crashtest\"\n[params]\nqdd = 1").contains("parameter `qdd`"));
    assert!(spec_error("run = \"bench\"").contains("needs `job"));
    assert!(
        spec_error("run = \"bench\"\njob_text = \"[j]\"\n[params]\nbsz = 1")
            .contains("not a fio job option")
    );
    assert!(spec_error("run = \"crashtest\"\nseeds = [1]\n[params]\nseed = 3").contains("both"));
    assert!(spec_error("run = \"crashtest\"\nseeds = { first = 1 }").contains("`count` is missing"));
    assert!(spec_error("run = \"crashtest\"\n[params]\nqd = [[1]]").contains("not a value"));
    assert!(spec_error("run = \"crashtest\"\n[resources]\nmemory = \"lots\"").contains("memory"));
    let dup = parse("run = \"crashtest\"\n[[points]]\nqd = 1\n[[points]]\nqd = 1").unwrap();
    assert!(dup
        .points()
        .unwrap_err()
        .to_string()
        .contains("same parameters"));
    assert!(
        spec_error("run = [").len() > 3,
        "TOML syntax errors are spec errors"
    );
    // and say where
    let e = spec_error("run = \"crashtest\"\n[grid\nqd = [1]\n");
    assert!(e.starts_with("line 2, column "), "{e}");
}

#[test]
fn expansion_order_columns_and_stable_ids() {
    let s = parse(
        "run = \"crashtest\"\nseeds = [7, 8]\n[params]\ntrials = 2\n[grid]\nqd = [1, 4]\nchunk_kib = [16, 64, 128]\n[[points]]\nmembers = 4\n[[points]]\nmembers = 5\n",
    )
    .unwrap();
    assert_eq!(s.len(), 2 * 3 * 2 * 2);
    let pts = s.points().unwrap();
    assert_eq!(pts.len(), 24);
    assert_eq!(
        s.param_names(),
        ["trials", "members", "chunk_kib", "qd", "seed"]
    );
    // listed point outermost, grid keys in name order (the last fastest), seeds innermost
    let p = |i: usize, k: &str| pts[i].params[k].clone();
    assert_eq!(
        (p(0, "members"), p(0, "chunk_kib"), p(0, "qd"), p(0, "seed")),
        (4.into(), 16.into(), 1.into(), 7.into())
    );
    assert_eq!(p(1, "seed"), 8);
    assert_eq!(p(2, "qd"), 4);
    assert_eq!(p(4, "chunk_kib"), 64);
    assert_eq!(p(12, "members"), 5);
    // ids: distinct, and a point's id does not depend on its position or the spec's other points
    let ids: std::collections::HashSet<_> = pts.iter().map(|p| p.id.clone()).collect();
    assert_eq!(ids.len(), 24);
    let one = parse("run = \"crashtest\"\n[params]\ntrials = 2\nmembers = 4\nchunk_kib = 16\nqd = 1\nseed = 7\n")
        .unwrap()
        .points()
        .unwrap();
    assert_eq!(one[0].id, pts[0].id);
}

#[test]
fn job_overrides_win_in_every_section() {
    let text = "[global]\nbs=4k\n[a]\nbs=8k\n[b]\nrw=read\n";
    let o = override_job_text(text, &[("bs".into(), "64k".into())]);
    assert_eq!(
        o,
        "[global]\nbs=4k\nbs=64k\n[a]\nbs=8k\nbs=64k\n[b]\nrw=read\nbs=64k\n"
    );
}

const SMALL: &str = "run = \"crashtest\"\nseeds = [1, 2]\n[params]\ntrials = 2\n[grid]\npolicy = [\"wplog\", \"stripe\"]\n[[points]]\nmembers = 3\n[[points]]\nmembers = 2\n";

/// Host time is not what these tests check: a clock that stands still.
static NO_CLOCK: fn() -> f64 = || 0.0;

fn opts(workers: usize, resume: bool) -> Options {
    Options {
        workers,
        resume,
        retry_failed: false,
        stop: None,
    }
}

#[test]
fn failing_points_are_records_and_resume_skips_done_points() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let s = parse(SMALL).unwrap();
    let mut seen = 0;
    let (sum, table) = local::run(&s, &out, &opts(2, false), &NO_CLOCK, &mut |_, _, _| {
        seen += 1
    })
    .unwrap();
    assert_eq!(seen, 8);
    // members = 2 cannot make a RAID-5: those 4 points fail, the others ran
    assert_eq!((sum.points, sum.ran, sum.ok, sum.failed), (8, 8, 4, 4));
    let status = table.column("status").unwrap();
    let error = table.column("error").unwrap();
    for row in &table.rows {
        let members = row[table.column("members").unwrap()].as_u64().unwrap();
        if members == 2 {
            assert_eq!(row[status], "error");
            assert!(
                row[error].as_str().unwrap().contains("at least 3"),
                "{row:?}"
            );
        } else {
            assert_eq!(row[status], "ok");
            assert!(row[table.column("counted_trials").unwrap()]
                .as_u64()
                .is_some());
        }
    }
    // without --resume a directory with records is refused
    let e = local::run(&s, &out, &opts(1, false), &NO_CLOCK, &mut |_, _, _| {}).unwrap_err();
    assert!(e.to_string().contains("--resume"), "{e}");
    // an interrupted sweep: two records gone; the resume runs exactly those
    let pts = s.points().unwrap();
    std::fs::remove_file(store::record_path(&out, &pts[0].id)).unwrap();
    std::fs::remove_file(store::record_path(&out, &pts[5].id)).unwrap();
    let mut ran = Vec::new();
    let (sum2, table2) = local::run(&s, &out, &opts(2, true), &NO_CLOCK, &mut |r, _, _| {
        ran.push(r.index)
    })
    .unwrap();
    ran.sort();
    assert_eq!(ran, [0, 5]);
    assert_eq!((sum2.ran, sum2.skipped, sum2.ok, sum2.failed), (2, 6, 4, 4));
    assert_eq!(table2, table);
    // --retry-failed runs the failures again (and they fail again)
    let mut again = 0;
    let o = Options {
        retry_failed: true,
        ..opts(1, true)
    };
    let (sum3, _) = local::run(&s, &out, &o, &NO_CLOCK, &mut |r, _, _| {
        assert_eq!(r.status, Status::Error);
        again += 1
    })
    .unwrap();
    assert_eq!((again, sum3.failed), (4, 4));
}

#[test]
fn a_stopped_sweep_keeps_its_records_and_resume_runs_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let s = parse(SMALL).unwrap();
    let stop = Options {
        stop: Some(|| true),
        ..opts(1, false)
    };
    let mut seen = 0;
    let e = local::run(&s, &out, &stop, &NO_CLOCK, &mut |_, _, _| seen += 1).unwrap_err();
    // the worker may have taken one more point before the stop was seen:
    // it finishes and is recorded
    let ran = match &e {
        SweepError::Interrupted { ran, to_run, .. } => {
            assert_eq!(*to_run, 8);
            *ran
        }
        other => panic!("{other}"),
    };
    assert!(
        (1..=2).contains(&ran) && ran == seen,
        "ran {ran}, seen {seen}"
    );
    assert!(e.to_string().contains("--resume"), "{e}");
    let (sum, _) = local::run(&s, &out, &opts(2, true), &NO_CLOCK, &mut |_, _, _| {}).unwrap();
    assert_eq!((sum.ran, sum.skipped, sum.points), (8 - ran, ran, 8));
    // a resume of a finished sweep keeps the totals of the runs before it
    let (again, _) = local::run(&s, &out, &opts(2, true), &NO_CLOCK, &mut |_, _, _| {}).unwrap();
    assert_eq!((again.ran, again.ran_total), (0, sum.ran_total));
}

#[test]
fn the_table_is_the_same_for_one_and_two_workers() {
    let dir = tempfile::tempdir().unwrap();
    let s = parse(SMALL).unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let (_, ta) = local::run(&s, &a, &opts(1, false), &NO_CLOCK, &mut |_, _, _| {}).unwrap();
    let (_, tb) = local::run(&s, &b, &opts(2, false), &NO_CLOCK, &mut |_, _, _| {}).unwrap();
    assert_eq!(ta, tb);
    let read = |d: &Path, f: &str| std::fs::read(d.join(f)).unwrap();
    assert_eq!(read(&a, "results.csv"), read(&b, "results.csv"));
    assert_eq!(read(&a, "results.parquet"), read(&b, "results.parquet"));
    assert_eq!(&read(&a, "results.parquet")[..4], b"PAR1");
    let csv = String::from_utf8(read(&a, "results.csv")).unwrap();
    assert!(
        csv.starts_with("point,id,trials,members,policy,seed,status,error,not_counted,failures,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 9);
}

#[test]
fn bench_points_give_fio_metrics_and_the_plot_draws_them() {
    let dir = tempfile::tempdir().unwrap();
    let job = "[global]\nfilename=tiny\nioengine=psync\ndirect=1\nzonemode=zbd\nrw=write\nbs=4k\nsize=1z\n[w]\n";
    let text = format!(
        "run = \"bench\"\njob_text = \"\"\"\n{job}\"\"\"\n[grid]\nbs = [\"4k\", \"16k\"]\nrw = [\"write\", \"nope\"]\n"
    );
    let s = parse(&text).unwrap();
    let out = dir.path().join("out");
    let (sum, table) = local::run(&s, &out, &opts(2, false), &NO_CLOCK, &mut |_, _, _| {}).unwrap();
    let errors: Vec<_> = table
        .rows
        .iter()
        .map(|r| r[table.column("error").unwrap()].clone())
        .collect();
    assert_eq!(
        (sum.ok, sum.failed),
        (2, 2),
        "rw=nope fails, write runs: {errors:?}"
    );
    let bw = table.column("write_bw_kib_s").unwrap();
    let bs = table.column("bs").unwrap();
    let rows: Vec<_> = table.rows.iter().filter(|r| r[bw].is_number()).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][bs], "4k");
    assert!(
        rows[1][bw].as_f64().unwrap() > rows[0][bw].as_f64().unwrap(),
        "16 KiB writes move more bytes than 4 KiB"
    );
    // the plot needs numbers in x: a column of sizes as text has none
    let spec = |x: &str| zns_sweep::plot::PlotSpec {
        x: x.into(),
        y: "write_bw_kib_s".into(),
        by: Some("rw".into()),
        title: None,
    };
    assert!(zns_sweep::plot::plot(&table, &spec("bs"), &out.join("p.png")).is_err());
    assert!(
        zns_sweep::plot::plot(&table, &spec("nope"), &out.join("p.png"))
            .unwrap_err()
            .to_string()
            .contains("no column `nope`")
    );
    zns_sweep::plot::plot(&table, &spec("write_ios"), &out.join("p.png")).unwrap();
    assert!(std::fs::metadata(out.join("p.png")).unwrap().len() > 1000);
    let csv = std::fs::read_to_string(out.join("p.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}
