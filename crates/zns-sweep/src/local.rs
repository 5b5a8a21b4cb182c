//! The local engine: a sweep's pending points on worker threads of this
//! process, each point its own deterministic simulation on its own
//! runtime (nothing is shared between points), the records written by the
//! calling thread as they arrive. The worker threads are the one OS
//! service used here, on purpose: the orchestration of independent
//! simulations, outside them. Host time comes from the caller's clock
//! ([`HostClock`]: zns-cli, zns-py), never read here. Which worker ran a
//! point, and when, reaches no record's table columns: the merged table is
//! the same for 1 or N workers.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use serde::{Deserialize, Serialize};

use crate::point::{run_point, HostClock, Point, Record, Status};
use crate::store;
use crate::table::Table;
use crate::{Sweep, SweepError};

/// How a local sweep runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// Keep the records already in the output directory and run only the
    /// points without one (without it, a directory holding records is an
    /// error, so that two sweeps do not mix by accident).
    pub resume: bool,
    /// With `resume`: run the points whose record is a failure again.
    pub retry_failed: bool,
    /// Asked after every point: `true` stops handing out points (the
    /// running ones finish and are recorded), and the run ends with
    /// [`SweepError::Interrupted`]; `--resume` runs the rest. The CLI's is
    /// its stop-signal flag; None never stops.
    pub stop: Option<fn() -> bool>,
}

/// What a sweep did (host times are the machine's, not the table's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    pub points: usize,
    /// Points run by this invocation.
    pub ran: usize,
    /// Points skipped because their record was there (resume).
    pub skipped: usize,
    /// Over all points with a record: how many ran to the end, how many failed.
    pub ok: usize,
    pub failed: usize,
    pub workers: usize,
    /// Host seconds of this invocation, start to end.
    pub wall_s: f64,
    /// Host seconds of the points run now, summed, and per point.
    pub point_host_s: f64,
    pub host_s_per_point: f64,
    /// Over every invocation on this directory (a run and its resumes):
    /// points run, host seconds start to end, host seconds of the points.
    pub ran_total: usize,
    pub wall_s_total: f64,
    pub point_host_s_total: f64,
}

/// The number of CPUs this process may use (1 when unknown).
pub fn available_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Points of `points` that need running in `out`, after checking that a
/// directory with records is resumed on purpose.
pub fn plan<'a>(
    points: &'a [Point],
    out: &Path,
    resume: bool,
    retry_failed: bool,
) -> Result<Vec<&'a Point>, SweepError> {
    store::prepare(out)?;
    let done = store::records(out)?;
    if !resume && !done.is_empty() {
        return Err(SweepError::Param(format!(
            "{} already holds {} point record{} of a sweep: --resume runs only the points without one; or choose another --out",
            out.display(),
            done.len(),
            if done.len() == 1 { "" } else { "s" }
        )));
    }
    let pending = store::pending(points.iter().map(|p| p.id.as_str()), &done, retry_failed);
    let pending: std::collections::HashSet<&str> = pending.into_iter().collect();
    Ok(points
        .iter()
        .filter(|p| pending.contains(p.id.as_str()))
        .collect())
}

/// Runs `sweep` into `out`; `each` sees every record written (and the
/// count done so far of those to run). Then merges the table. `clock` (the
/// caller's) times the points and the whole run for the summary.
pub fn run(
    sweep: &Sweep,
    out: &Path,
    opts: &Options,
    clock: &HostClock,
    each: &mut dyn FnMut(&Record, usize, usize),
) -> Result<(Summary, Table), SweepError> {
    let start = clock();
    let points = sweep.points()?;
    let todo = plan(&points, out, opts.resume, opts.retry_failed)?;
    let workers = opts.workers.clamp(1, todo.len().max(1));
    let files = out.join("files");
    let files_dir = |p: &Point| files.join(&p.id);
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<Record>();
    let mut host_s = 0.0;
    let total = todo.len();
    let mut write_err = None;
    let (mut ran, mut stopped) = (0, false);
    // The one place above the runtime with OS threads: each point builds
    // its own deterministic runtime and shares nothing with the others, so
    // running points on threads changes no result, only the wall time
    // (tested: the table is the same for one and two workers).
    #[allow(clippy::disallowed_methods)]
    std::thread::scope(|s| {
        for w in 0..workers {
            let tx = tx.clone();
            let (next, todo, files_dir) = (&next, &todo, &files_dir);
            let spawned = std::thread::Builder::new()
                .name(format!("sweep-{w}"))
                .spawn_scoped(s, move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(p) = todo.get(i) else { break };
                    if tx.send(run_point(p, Some(&files_dir(p)), clock)).is_err() {
                        break;
                    }
                });
            if let Err(e) = spawned {
                write_err.get_or_insert(SweepError::Param(format!(
                    "could not start worker thread {w}: {e}"
                )));
            }
        }
        drop(tx);
        for (done, rec) in rx.iter().enumerate() {
            host_s += rec.host_s;
            if write_err.is_none() {
                if let Err(e) = store::write_record(out, &rec, "local") {
                    write_err = Some(e);
                    // stop handing out points; the running ones finish
                    next.store(usize::MAX / 2, Ordering::Relaxed);
                }
            }
            each(&rec, done + 1, total);
            ran = done + 1;
            if !stopped && opts.stop.is_some_and(|stop| stop()) {
                stopped = true;
                next.store(usize::MAX / 2, Ordering::Relaxed);
            }
        }
    });
    if let Some(e) = write_err {
        return Err(e);
    }
    if stopped {
        return Err(SweepError::Interrupted {
            ran,
            to_run: total,
            out: out.display().to_string(),
        });
    }
    let (summary_base, table) = finish(sweep, &points, out)?;
    // a resume adds to the earlier invocations' totals
    let before: Summary = if opts.resume {
        std::fs::read_to_string(out.join("summary.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .map(|b: Summary| Summary {
                // a summary from before the totals existed: its own run
                ran_total: if b.ran_total == 0 { b.ran } else { b.ran_total },
                wall_s_total: if b.wall_s_total == 0.0 {
                    b.wall_s
                } else {
                    b.wall_s_total
                },
                point_host_s_total: if b.point_host_s_total == 0.0 {
                    b.point_host_s
                } else {
                    b.point_host_s_total
                },
                ..b
            })
            .unwrap_or_default()
    } else {
        Summary::default()
    };
    let wall_s = clock() - start;
    let summary = Summary {
        ran: total,
        skipped: points.len() - total,
        workers,
        wall_s,
        point_host_s: host_s,
        host_s_per_point: if total == 0 {
            0.0
        } else {
            host_s / total as f64
        },
        ran_total: before.ran_total + total,
        wall_s_total: before.wall_s_total + wall_s,
        point_host_s_total: before.point_host_s_total + host_s,
        ..summary_base
    };
    write_summary(out, &summary)?;
    Ok((summary, table))
}

/// Merges the records of `points` in `out` into `results.csv` and
/// `results.parquet`; the counts of the summary (points, ok, failed).
pub fn finish(sweep: &Sweep, points: &[Point], out: &Path) -> Result<(Summary, Table), SweepError> {
    let records = store::records(out)?;
    let table = Table::merge(points, &sweep.param_names(), &records);
    table.write_csv(&out.join("results.csv"))?;
    table.write_parquet(&out.join("results.parquet"))?;
    let mut s = Summary {
        points: points.len(),
        ..Summary::default()
    };
    for p in points {
        match records.get(&p.id).map(|r| r.status) {
            Some(Status::Ok) => s.ok += 1,
            Some(Status::Error) => s.failed += 1,
            None => {}
        }
    }
    Ok((s, table))
}

pub fn write_summary(out: &Path, s: &Summary) -> Result<(), SweepError> {
    let path = out.join("summary.json");
    let text = serde_json::to_string_pretty(s).map_err(|e| SweepError::file(&path, e))?;
    std::fs::write(&path, text + "\n").map_err(|e| SweepError::file(&path, e))
}
