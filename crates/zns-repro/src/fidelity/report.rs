//! What the suite found: per-target and per-curve results, the counts, and
//! the text report `zns fidelity` prints.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value as Json;

use super::suite::{fmt_x, CurveTolerance, TargetKind};

/// Outcome of one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    Pending,
    /// The experiment could not be run or evaluated.
    Error,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Pending => "pending",
            Status::Error => "ERROR",
        }
    }
}

/// One row of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetResult {
    pub id: String,
    pub source: String,
    pub kind: TargetKind,
    pub paper: f64,
    pub tolerance: f64,
    pub emulated: Option<f64>,
    /// (emulated − paper) / paper.
    pub rel_error: Option<f64>,
    pub status: Status,
    pub job_file: Option<String>,
    /// Why pending / what failed / the experiment's note.
    pub note: Option<String>,
}

/// One point of a curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurvePoint {
    pub x: f64,
    pub emulated: Option<f64>,
    pub measured: Option<f64>,
}

/// One series of a curve and its error against the measured points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesResult {
    pub label: String,
    /// Sorted by x; the union of emulated and measured x values.
    pub points: Vec<CurvePoint>,
    /// Points with both an emulated and a measured value.
    pub compared: usize,
    /// Mean of |emulated − measured| / |measured| over those points.
    pub mean_abs_rel_error: Option<f64>,
    /// Largest |emulated − measured| / |measured| and where.
    pub max_abs_rel_error: Option<f64>,
    pub max_error_at_x: Option<f64>,
    pub tolerance: Option<CurveTolerance>,
    /// Pass when the errors are within the tolerance, Fail when not, Error
    /// when a point could not be measured, Pending when there is no
    /// measured data to compare with.
    pub status: Status,
    pub errors: Vec<String>,
}

/// One figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurveResult {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    /// Legend of the measured data (e.g. "ZN540 measured", "SN640 measured").
    pub data_label: String,
    pub series: Vec<SeriesResult>,
    pub png: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub plot_error: Option<String>,
}

/// One job file the suite ran. (Host time is the caller's to measure: this
/// library stays deterministic and never reads the wall clock.)
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobFileRun {
    pub job: String,
    /// Virtual time the file's run took, from its fio JSON.
    pub virtual_seconds: Option<f64>,
    pub error: Option<String>,
}

/// The suite's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FidelityReport {
    pub seed: u64,
    pub targets: Vec<TargetResult>,
    pub curves: Vec<CurveResult>,
    pub job_files: Vec<JobFileRun>,
    pub passed: usize,
    pub failed: usize,
    pub pending: usize,
    pub errors: usize,
    /// Curve series within their tolerance, beyond it, and that could not
    /// be compared (a point not measured, or no point to compare).
    pub curves_passed: usize,
    pub curves_failed: usize,
    pub curves_errors: usize,
}

fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

fn pct(v: f64) -> String {
    format!("{:+.1}%", v * 100.0)
}

impl FidelityReport {
    /// True when no target and no curve series failed or errored (pending
    /// ones are allowed).
    pub fn all_passed(&self) -> bool {
        self.failed == 0 && self.errors == 0 && self.curves_failed == 0 && self.curves_errors == 0
    }

    /// Readable tables: targets, then curve errors.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let w = self
            .targets
            .iter()
            .map(|t| t.id.len())
            .max()
            .unwrap_or(2)
            .max(2);
        let _ = writeln!(
            s,
            "{:<w$}  {:>10}  {:>10}  {:>8}  {:>10}  status",
            "id", "paper", "emulated", "error", "tolerance"
        );
        for t in &self.targets {
            let tol = match t.kind {
                TargetKind::AtMost => "at most".to_string(),
                TargetKind::AtLeast => "at least".to_string(),
                _ => format!("{:.0}%", t.tolerance * 100.0),
            };
            let _ = write!(
                s,
                "{:<w$}  {:>10}  {:>10}  {:>8}  {:>10}  {}",
                t.id,
                fmt_num(t.paper),
                t.emulated.map(fmt_num).unwrap_or_else(|| "-".into()),
                t.rel_error.map(pct).unwrap_or_else(|| "-".into()),
                tol,
                t.status.as_str(),
            );
            if matches!(t.status, Status::Pending | Status::Error) {
                if let Some(n) = &t.note {
                    let _ = write!(s, " ({n})");
                }
            }
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "\n{} passed, {} failed, {} pending, {} errors ({} targets)",
            self.passed,
            self.failed,
            self.pending,
            self.errors,
            self.targets.len()
        );
        if !self.curves.is_empty() {
            let _ = writeln!(
                s,
                "\nCurves (error of the emulated curve against the drive's measured points):"
            );
            let _ = writeln!(
                s,
                "{:<34}  {:<34}  {:>6}  {:>9}  {:>13}  {:>11}  status",
                "curve", "series", "points", "mean|err|", "max|err|", "tolerance"
            );
            for c in &self.curves {
                for se in &c.series {
                    let _ = write!(
                        s,
                        "{:<34}  {:<34}  {:>6}  {:>9}  {:>13}  {:>11}  {}",
                        c.id,
                        se.label,
                        se.compared,
                        se.mean_abs_rel_error
                            .map(|v| format!("{:.1}%", v * 100.0))
                            .unwrap_or_else(|| "-".into()),
                        match (se.max_abs_rel_error, se.max_error_at_x) {
                            (Some(v), Some(x)) => format!("{:.1}% @{}", v * 100.0, fmt_x(x)),
                            _ => "-".into(),
                        },
                        match se.tolerance {
                            Some(CurveTolerance {
                                mean,
                                max: Some(max),
                            }) => format!("{:.0}%/{:.0}%", mean * 100.0, max * 100.0),
                            Some(CurveTolerance { mean, max: None }) =>
                                format!("{:.0}%", mean * 100.0),
                            None => "-".into(),
                        },
                        se.status.as_str(),
                    );
                    if !se.errors.is_empty() {
                        let _ = write!(s, "  ERROR: {}", se.errors.join("; "));
                    }
                    s.push('\n');
                }
                if let Some(e) = &c.plot_error {
                    let _ = writeln!(s, "{:<34}  plot: {e}", c.id);
                }
            }
            let _ = writeln!(
                s,
                "\n{} passed, {} failed, {} errors ({} curve series; tolerance = mean/max |err|)",
                self.curves_passed,
                self.curves_failed,
                self.curves_errors,
                self.curves.iter().map(|c| c.series.len()).sum::<usize>()
            );
        }
        let _ = writeln!(
            s,
            "\n{} job files, {:.1} s of virtual time (seed {})",
            self.job_files.len(),
            self.job_files
                .iter()
                .filter_map(|j| j.virtual_seconds)
                .sum::<f64>(),
            self.seed
        );
        s
    }

    /// The whole report as JSON.
    pub fn to_json(&self) -> Json {
        serde_json::to_value(self).unwrap_or(Json::Null)
    }
}
