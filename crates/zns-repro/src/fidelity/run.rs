//! Running the suite: each job file once through the ordinary bench path,
//! each target judged against its tolerance, each curve series against
//! the measured data.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value as Json;

use super::metric::{glob_match, json_path};
use super::report::*;
use super::suite::*;
use super::FidelityError;
use crate::experiments::Experiments;
use zns_bench::job::parse_job_file;
use zns_bench::run::run_jobs;

/// Reason an `sn540.*` target without an experiment in fidelity.toml is
/// pending (rather than an error): it needs an experiment on the FTL device.
pub const SN540_PENDING: &str = "no experiment on the FTL device (sn540) yet";

/// What to run.
#[derive(Debug, Clone)]
pub struct FidelityOptions {
    /// Where fidelity-targets.toml, fidelity.toml, the job files and
    /// `data/zn540/` are read from.
    pub experiments: Experiments,
    /// Only ids (targets and curves) matching this: a glob if it contains
    /// `*`, else a substring.
    pub filter: Option<String>,
    /// Write one PNG and one CSV per curve here.
    pub plots_dir: Option<PathBuf>,
    /// Run the curves (sweeps) too.
    pub curves: bool,
    pub seed: u64,
}

impl Default for FidelityOptions {
    fn default() -> Self {
        FidelityOptions {
            experiments: Experiments::BuiltIn,
            filter: None,
            plots_dir: None,
            curves: true,
            seed: 1,
        }
    }
}

fn id_matches(filter: &Option<String>, id: &str) -> bool {
    match filter {
        None => true,
        Some(f) if f.contains('*') || f.contains('?') => glob_match(f, id),
        Some(f) => id.contains(f.as_str()),
    }
}

/// Runs one job file through the ordinary bench path and returns its fio
/// JSON document.
pub fn run_job_file(files: &Experiments, job: &str, seed: u64) -> Result<Json, FidelityError> {
    let text = files.read(job).map_err(|err| FidelityError::Read {
        path: files.path(job),
        err,
    })?;
    let specs = parse_job_file(&text, job).map_err(|e| FidelityError::Job {
        job: job.to_string(),
        source: Box::new(e),
    })?;
    let rep = run_jobs(&specs, seed).map_err(|e| FidelityError::Run {
        job: job.to_string(),
        source: Box::new(e),
    })?;
    Ok(rep.to_fio_json())
}

/// Judges an emulated value against a target: (relative error, pass).
pub fn judge(t: &Target, emulated: f64) -> (f64, bool) {
    let rel = if t.paper != 0.0 {
        (emulated - t.paper) / t.paper
    } else {
        emulated - t.paper
    };
    let ok = match t.kind {
        TargetKind::Value | TargetKind::Ratio => {
            if t.tolerance == 0.0 {
                (emulated - t.paper).abs() <= 1e-9 * t.paper.abs().max(1.0)
            } else {
                rel.abs() <= t.tolerance + 1e-12
            }
        }
        TargetKind::AtMost => emulated <= t.paper * (1.0 + t.tolerance),
        TargetKind::AtLeast => emulated >= t.paper * (1.0 - t.tolerance),
    };
    (rel, ok)
}

/// Reads one CSV column pair: (x, y) rows with both cells present.
pub fn load_data(files: &Experiments, d: &DataRef) -> Result<Vec<(f64, f64)>, String> {
    let rel = format!("data/zn540/{}", d.csv);
    let text = files
        .read(&rel)
        .map_err(|e| format!("cannot read {}: {e}", files.path(&rel).display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines
        .next()
        .ok_or_else(|| format!("{}: empty", d.csv))?
        .split(',')
        .map(str::trim)
        .collect();
    let col = |name: &str| {
        header.iter().position(|h| *h == name).ok_or_else(|| {
            format!(
                "{}: no column `{name}` (columns: {})",
                d.csv,
                header.join(", ")
            )
        })
    };
    let (xi, yi) = (col(&d.x)?, col(&d.y)?);
    let filters: Vec<(usize, &str)> = d
        .filter
        .iter()
        .map(|(c, v)| col(c).map(|i| (i, v.as_str())))
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if filters.iter().any(|(i, v)| row_excluded(cells.get(*i), v)) {
            continue;
        }
        let x = cells.get(xi).and_then(|c| c.parse::<f64>().ok());
        let y = cells.get(yi).and_then(|c| c.parse::<f64>().ok());
        if let (Some(x), Some(y)) = (x, y) {
            out.push((x * d.x_scale, y * d.y_scale));
        }
    }
    Ok(out)
}

/// True when a CSV row must be skipped by a `where` filter: the cell is
/// missing or holds another value (numbers compare numerically).
fn row_excluded(cell: Option<&&str>, want: &str) -> bool {
    match cell {
        None => true,
        Some(c) if *c == want => false,
        Some(c) => match (c.parse::<f64>(), want.parse::<f64>()) {
            (Ok(a), Ok(b)) => (a - b).abs() > 1e-9 * a.abs().max(1.0),
            _ => true,
        },
    }
}

fn same_x(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn series_result(
    label: &str,
    emu: Vec<(f64, Option<f64>)>,
    data: &[(f64, f64)],
    tolerance: Option<CurveTolerance>,
    errors: Vec<String>,
) -> SeriesResult {
    let mut points: Vec<CurvePoint> = emu
        .iter()
        .map(|(x, e)| CurvePoint {
            x: *x,
            emulated: *e,
            measured: data.iter().find(|(dx, _)| same_x(*dx, *x)).map(|(_, y)| *y),
        })
        .collect();
    for (dx, dy) in data {
        if !points.iter().any(|p| same_x(p.x, *dx)) {
            points.push(CurvePoint {
                x: *dx,
                emulated: None,
                measured: Some(*dy),
            });
        }
    }
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    let mut errs = Vec::new();
    for p in &points {
        if let (Some(e), Some(m)) = (p.emulated, p.measured) {
            if m != 0.0 {
                errs.push((p.x, ((e - m) / m).abs()));
            }
        }
    }
    let max = errs.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
    let mean = if errs.is_empty() {
        None
    } else {
        Some(errs.iter().map(|e| e.1).sum::<f64>() / errs.len() as f64)
    };
    let status = match (tolerance, mean, max) {
        _ if !errors.is_empty() => Status::Error,
        (Some(t), Some(mean), Some((_, max))) => {
            if mean <= t.mean && !matches!(t.max, Some(limit) if max > limit) {
                Status::Pass
            } else {
                Status::Fail
            }
        }
        // Measured data promised but no point compared: an error, not a pass.
        (Some(_), _, _) => Status::Error,
        (None, _, _) => Status::Pending,
    };
    SeriesResult {
        label: label.to_string(),
        compared: errs.len(),
        mean_abs_rel_error: mean,
        max_abs_rel_error: max.map(|m| m.1),
        max_error_at_x: max.map(|m| m.0),
        tolerance,
        status,
        points,
        errors,
    }
}

/// Runs the suite: every selected target's job file (each file once),
/// the curves, and the plots. `progress(done, total, current)` is called
/// before each job file runs and once at the end.
pub fn run_fidelity(
    opts: &FidelityOptions,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<FidelityReport, FidelityError> {
    let suite = Suite::load(&opts.experiments)?;
    let dir = &suite.files;
    let targets: Vec<&Target> = suite
        .targets
        .iter()
        .filter(|t| id_matches(&opts.filter, &t.id))
        .collect();
    let curves: Vec<&CurveDef> = if opts.curves {
        suite
            .curves
            .iter()
            .filter(|c| id_matches(&opts.filter, &c.id))
            .collect()
    } else {
        Vec::new()
    };
    if targets.is_empty() && curves.is_empty() {
        return Err(FidelityError::NoMatch(
            opts.filter.clone().unwrap_or_default(),
        ));
    }
    // Which job files are needed, in a stable order.
    let mut needed: Vec<String> = Vec::new();
    let mut want = |j: &str| {
        if !needed.iter().any(|n| n == j) {
            needed.push(j.to_string());
        }
    };
    for t in &targets {
        if let Some(Experiment {
            job: Some(j),
            pending: None,
            ..
        }) = suite.experiments.get(&t.id)
        {
            want(j);
        }
    }
    for c in &curves {
        for s in &c.series {
            want(&s.job);
        }
    }
    let total = needed.len();
    let mut docs: BTreeMap<String, Result<Json, String>> = BTreeMap::new();
    let mut runs = Vec::new();
    for (i, j) in needed.iter().enumerate() {
        progress(i, total, j);
        let r = run_job_file(dir, j, opts.seed).map_err(|e| e.to_string());
        runs.push(JobFileRun {
            job: j.clone(),
            virtual_seconds: r
                .as_ref()
                .ok()
                .and_then(|d| json_path(d, "znskit.virtual_ns"))
                .map(|ns| ns / 1e9),
            error: r.as_ref().err().cloned(),
        });
        docs.insert(j.clone(), r);
    }
    progress(total, total, "");

    let mut results = Vec::new();
    for t in targets {
        let exp = suite.experiments.get(&t.id);
        let mut r = TargetResult {
            id: t.id.clone(),
            source: t.source.clone(),
            kind: t.kind,
            paper: t.paper,
            tolerance: t.tolerance,
            emulated: None,
            rel_error: None,
            status: Status::Pending,
            job_file: exp.and_then(|e| e.job.clone()),
            note: exp.and_then(|e| e.note.clone()),
        };
        if t.id.starts_with("sn540.") && exp.is_none() {
            // A conventional-SSD (FTL) target nobody has written an
            // experiment for yet.
            r.note = Some(SN540_PENDING.into());
        } else {
            match exp {
                None => {
                    r.status = Status::Error;
                    r.note = Some("no experiment in fidelity.toml".into());
                }
                Some(Experiment {
                    pending: Some(p), ..
                }) => r.note = Some(p.clone()),
                Some(Experiment {
                    job: Some(j),
                    metric: Some(m),
                    ..
                }) => match &docs[j] {
                    Err(e) => {
                        r.status = Status::Error;
                        r.note = Some(e.clone());
                    }
                    Ok(doc) => match m.eval(doc) {
                        Err(e) => {
                            r.status = Status::Error;
                            r.note = Some(format!("{j}: {e}"));
                        }
                        Ok(v) => {
                            let (rel, ok) = judge(t, v);
                            r.emulated = Some(v);
                            r.rel_error = Some(rel);
                            r.status = if ok { Status::Pass } else { Status::Fail };
                        }
                    },
                },
                Some(_) => {
                    r.status = Status::Error;
                    r.note = Some("experiment without job or metric".into());
                }
            }
        }
        results.push(r);
    }

    let mut curve_results = Vec::new();
    for c in curves {
        let mut series = Vec::new();
        for s in &c.series {
            let mut errors = Vec::new();
            let emu: Vec<(f64, Option<f64>)> = s
                .points
                .iter()
                .map(|(x, name)| {
                    let v = match &docs[&s.job] {
                        Err(e) => Err(e.clone()),
                        Ok(doc) => s.metric.with_job(name).eval(doc).map_err(|e| e.to_string()),
                    };
                    match v {
                        Ok(v) => (*x, Some(v)),
                        Err(e) => {
                            if !errors.contains(&e) {
                                errors.push(e);
                            }
                            (*x, None)
                        }
                    }
                })
                .collect();
            let data = match &s.data {
                None => Vec::new(),
                Some(d) => match load_data(dir, d) {
                    Ok(v) => v,
                    Err(e) => {
                        errors.push(e);
                        Vec::new()
                    }
                },
            };
            series.push(series_result(&s.label, emu, &data, s.tolerance, errors));
        }
        curve_results.push(CurveResult {
            id: c.id.clone(),
            title: c.title.clone(),
            x_label: c.x_label.clone(),
            y_label: c.y_label.clone(),
            log_x: c.log_x,
            log_y: c.log_y,
            data_label: c.data_label.clone(),
            series,
            png: None,
            csv: None,
            plot_error: None,
        });
    }
    if let Some(pd) = &opts.plots_dir {
        if let Err(e) = std::fs::create_dir_all(pd) {
            for c in &mut curve_results {
                c.plot_error = Some(format!("cannot create {}: {e}", pd.display()));
            }
        } else {
            for c in &mut curve_results {
                let csv = pd.join(format!("{}.csv", c.id));
                match std::fs::write(&csv, super::plot::curve_csv(c)) {
                    Ok(()) => c.csv = Some(csv),
                    Err(e) => c.plot_error = Some(format!("{}: {e}", csv.display())),
                }
                let png = pd.join(format!("{}.png", c.id));
                match super::plot::draw_png(c, &png) {
                    Ok(()) => c.png = Some(png),
                    Err(e) => {
                        let msg = format!("{}: {e}", png.display());
                        c.plot_error = Some(match c.plot_error.take() {
                            Some(p) => format!("{p}; {msg}"),
                            None => msg,
                        });
                    }
                }
            }
        }
    }
    let count = |s: Status| results.iter().filter(|r| r.status == s).count();
    let count_series = |s: Status| {
        curve_results
            .iter()
            .flat_map(|c| &c.series)
            .filter(|se| se.status == s)
            .count()
    };
    let (curves_passed, curves_failed, curves_errors) = (
        count_series(Status::Pass),
        count_series(Status::Fail),
        count_series(Status::Error),
    );
    Ok(FidelityReport {
        curves_passed,
        curves_failed,
        curves_errors,
        seed: opts.seed,
        passed: count(Status::Pass),
        failed: count(Status::Fail),
        pending: count(Status::Pending),
        errors: count(Status::Error),
        targets: results,
        curves: curve_results,
        job_files: runs,
    })
}
