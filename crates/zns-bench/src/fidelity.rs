//! The fidelity suite (`zns fidelity`): every published figure of
//! `experiments/fidelity-targets.toml` measured through the ordinary
//! benchmark path.
//!
//! `experiments/fidelity.toml` maps each target id to a fio job file kept in
//! `experiments/` and to a *metric*: a small declarative expression evaluated
//! on the fio JSON output (`RunReport::to_fio_json`) of that job file. No
//! number is stored: every value is produced by `parse_job_file` +
//! `run_jobs` + `to_fio_json`, exactly what `zns bench --output-format=json`
//! does. The same file defines curves (sweeps), each overlaid with the real
//! ZN540's measured points from `experiments/data/zn540/*.csv`; the suite
//! reports the error over each whole curve and, on request, writes one PNG
//! and one CSV per curve.
//!
//! The metric language (see `docs/fidelity.md`):
//!
//! * leaf: `{ job = "w4k", path = "write.lat_ns.mean", scale = 0.001 }` —
//!   the number at `path` in the `jobs[]` entry named `job`. `job` may be a
//!   glob (`qd*`) with `reduce = "max" | "min" | "sum" | "mean"`, or `#N`
//!   (the N-th entry); `group = N` restricts to one reporting group. Path
//!   segments are dot-separated; a percentile is written as its number
//!   (`write.clat_ns.percentile.95` finds the key `"95.000000"`).
//! * `{ op = "diff" | "ratio" | "rel_change", a = M, b = M }`:
//!   `a − b`, `a / b`, `(a − b) / b`.
//! * `{ op = "max" | "min" | "sum" | "mean", of = [M, …] }` and
//!   `{ op = "abs", of = M }`.
//! * `scale = k` multiplies the result of any node.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value as Json;

use crate::job::parse_job_file;
use crate::run::run_jobs;

/// Why the suite could not run at all (a bad definition file). Failures of
/// one experiment are reported per id instead ([`Status::Error`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FidelityError {
    #[error("cannot read {path}: {err}")]
    Read { path: PathBuf, err: std::io::Error },
    #[error("{path}: {msg}")]
    Toml { path: PathBuf, msg: String },
    #[error("{path}: {what}: {msg}")]
    Definition {
        path: PathBuf,
        what: String,
        msg: String,
    },
    #[error("no target or curve id matches `{0}`")]
    NoMatch(String),
}

/// Why a metric could not be evaluated on a fio JSON document.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricError {
    #[error("no job matches `{sel}` (jobs: {available})")]
    NoJob { sel: String, available: String },
    #[error("`{sel}` matches {n} jobs; add reduce = \"max\"|\"min\"|\"sum\"|\"mean\"")]
    Ambiguous { sel: String, n: usize },
    #[error("job `{job}`: no number at `{path}` (stopped at `{at}`)")]
    NoValue {
        job: String,
        path: String,
        at: String,
    },
    #[error("the fio JSON has no jobs[] array")]
    NoJobs,
    #[error("{0}")]
    Math(String),
}

// ---------------------------------------------------------------------------
// Metric language
// ---------------------------------------------------------------------------

/// How several matching jobs (or several sub-metrics) combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reduce {
    Max,
    Min,
    Sum,
    Mean,
}

impl Reduce {
    fn parse(s: &str) -> Option<Reduce> {
        Some(match s {
            "max" => Reduce::Max,
            "min" => Reduce::Min,
            "sum" => Reduce::Sum,
            "mean" => Reduce::Mean,
            _ => return None,
        })
    }
    fn apply(self, v: &[f64]) -> f64 {
        match self {
            Reduce::Max => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Reduce::Min => v.iter().copied().fold(f64::INFINITY, f64::min),
            Reduce::Sum => v.iter().sum(),
            Reduce::Mean => v.iter().sum::<f64>() / v.len() as f64,
        }
    }
}

/// Two-operand operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BinOp {
    /// a − b
    Diff,
    /// a / b
    Ratio,
    /// (a − b) / b
    RelChange,
}

/// A metric: an expression over a fio JSON document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Leaf {
        job: String,
        group: Option<u64>,
        path: String,
        reduce: Option<Reduce>,
        scale: f64,
    },
    Bin {
        op: BinOp,
        a: Box<Metric>,
        b: Box<Metric>,
        scale: f64,
    },
    Nary {
        op: Reduce,
        of: Vec<Metric>,
        scale: f64,
    },
    Abs {
        of: Box<Metric>,
        scale: f64,
    },
}

fn glob_match(pat: &str, s: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let t: Vec<char> = s.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            pi += 1;
            mark = ti;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

fn key_matches(key: &str, cand: &str) -> bool {
    if key == cand {
        return true;
    }
    match (key.parse::<f64>(), cand.parse::<f64>()) {
        (Ok(a), Ok(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1.0),
        _ => false,
    }
}

/// The number at a dotted `path` inside `v`. Object keys may contain dots
/// (fio's percentile keys `"99.900000"`): at each level the longest run of
/// segments that names a key wins, and numeric segments match numerically.
pub fn json_path(v: &Json, path: &str) -> Option<f64> {
    let segs: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    let mut cur = v;
    let mut i = 0;
    'outer: while i < segs.len() {
        match cur {
            Json::Object(map) => {
                for len in (1..=segs.len() - i).rev() {
                    let cand = segs[i..i + len].join(".");
                    if let Some((_, next)) = map.iter().find(|(k, _)| key_matches(k, &cand)) {
                        cur = next;
                        i += len;
                        continue 'outer;
                    }
                }
                return None;
            }
            Json::Array(items) => {
                let idx: usize = segs[i].parse().ok()?;
                cur = items.get(idx)?;
                i += 1;
            }
            _ => return None,
        }
    }
    match cur {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn path_prefix_found(v: &Json, path: &str) -> String {
    let segs: Vec<&str> = path.split('.').collect();
    for n in (1..=segs.len()).rev() {
        let p = segs[..n].join(".");
        if lookup_any(v, &p).is_some() {
            return p;
        }
    }
    "the job entry".into()
}

fn lookup_any<'a>(v: &'a Json, path: &str) -> Option<&'a Json> {
    let segs: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    let mut cur = v;
    let mut i = 0;
    'outer: while i < segs.len() {
        let Json::Object(map) = cur else {
            return None;
        };
        for len in (1..=segs.len() - i).rev() {
            let cand = segs[i..i + len].join(".");
            if let Some((_, next)) = map.iter().find(|(k, _)| key_matches(k, &cand)) {
                cur = next;
                i += len;
                continue 'outer;
            }
        }
        return None;
    }
    Some(cur)
}

impl Metric {
    /// Evaluates the metric on a fio JSON document (`{"jobs": [...]}`).
    pub fn eval(&self, fio: &Json) -> Result<f64, MetricError> {
        match self {
            Metric::Leaf {
                job,
                group,
                path,
                reduce,
                scale,
            } => {
                let jobs = fio
                    .get("jobs")
                    .and_then(Json::as_array)
                    .ok_or(MetricError::NoJobs)?;
                let name_of = |j: &Json| {
                    j.get("jobname")
                        .and_then(Json::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let in_group = |j: &Json| {
                    group.map_or(true, |g| j.get("groupid").and_then(Json::as_u64) == Some(g))
                };
                let selected: Vec<&Json> = if let Some(idx) = job.strip_prefix('#') {
                    let idx: usize = idx.parse().map_err(|_| MetricError::NoJob {
                        sel: job.clone(),
                        available: format!("{} entries", jobs.len()),
                    })?;
                    jobs.get(idx).into_iter().collect()
                } else {
                    jobs.iter()
                        .filter(|j| in_group(j) && glob_match(job, &name_of(j)))
                        .collect()
                };
                if selected.is_empty() {
                    let mut names: Vec<String> = jobs.iter().map(name_of).collect();
                    names.dedup();
                    let available = if names.len() > 12 {
                        format!("{} … ({} jobs)", names[..12].join(", "), names.len())
                    } else {
                        names.join(", ")
                    };
                    return Err(MetricError::NoJob {
                        sel: job.clone(),
                        available,
                    });
                }
                if selected.len() > 1 && reduce.is_none() {
                    return Err(MetricError::Ambiguous {
                        sel: job.clone(),
                        n: selected.len(),
                    });
                }
                let mut vals = Vec::with_capacity(selected.len());
                for j in selected {
                    let v = json_path(j, path).ok_or_else(|| MetricError::NoValue {
                        job: name_of(j),
                        path: path.clone(),
                        at: path_prefix_found(j, path),
                    })?;
                    vals.push(v);
                }
                let v = match reduce {
                    Some(r) => r.apply(&vals),
                    None => vals[0],
                };
                Ok(v * scale)
            }
            Metric::Bin { op, a, b, scale } => {
                let (a, b) = (a.eval(fio)?, b.eval(fio)?);
                let v = match op {
                    BinOp::Diff => a - b,
                    BinOp::Ratio | BinOp::RelChange => {
                        if b == 0.0 {
                            return Err(MetricError::Math(format!(
                                "{op:?}: divisor is zero (a = {a})"
                            )));
                        }
                        if *op == BinOp::Ratio {
                            a / b
                        } else {
                            (a - b) / b
                        }
                    }
                };
                Ok(v * scale)
            }
            Metric::Nary { op, of, scale } => {
                let mut vals = Vec::with_capacity(of.len());
                for m in of {
                    vals.push(m.eval(fio)?);
                }
                if vals.is_empty() {
                    return Err(MetricError::Math(format!("{op:?} of nothing")));
                }
                Ok(op.apply(&vals) * scale)
            }
            Metric::Abs { of, scale } => Ok(of.eval(fio)?.abs() * scale),
        }
    }

    /// The same metric with `{job}` in every job selector replaced by `name`.
    pub fn with_job(&self, name: &str) -> Metric {
        match self {
            Metric::Leaf {
                job,
                group,
                path,
                reduce,
                scale,
            } => Metric::Leaf {
                job: job.replace("{job}", name),
                group: *group,
                path: path.clone(),
                reduce: *reduce,
                scale: *scale,
            },
            Metric::Bin { op, a, b, scale } => Metric::Bin {
                op: *op,
                a: Box::new(a.with_job(name)),
                b: Box::new(b.with_job(name)),
                scale: *scale,
            },
            Metric::Nary { op, of, scale } => Metric::Nary {
                op: *op,
                of: of.iter().map(|m| m.with_job(name)).collect(),
                scale: *scale,
            },
            Metric::Abs { of, scale } => Metric::Abs {
                of: Box::new(of.with_job(name)),
                scale: *scale,
            },
        }
    }

    /// Parses a metric from its TOML form; the error names the problem.
    pub fn from_toml(v: &toml::Value) -> Result<Metric, String> {
        let t = v
            .as_table()
            .ok_or_else(|| format!("a metric must be a table, not `{v}`"))?;
        let scale = match t.get("scale") {
            None => 1.0,
            Some(s) => s
                .as_float()
                .or_else(|| s.as_integer().map(|i| i as f64))
                .ok_or_else(|| format!("scale must be a number, not `{s}`"))?,
        };
        let allowed = |keys: &[&str]| -> Result<(), String> {
            for k in t.keys() {
                if !keys.contains(&k.as_str()) && k != "scale" {
                    return Err(format!(
                        "unknown key `{k}` in metric (expected {})",
                        keys.join(", ")
                    ));
                }
            }
            Ok(())
        };
        let sub = |key: &str| -> Result<Metric, String> {
            Metric::from_toml(
                t.get(key)
                    .ok_or_else(|| format!("metric op needs `{key}`"))?,
            )
            .map_err(|e| format!("{key}: {e}"))
        };
        match t.get("op") {
            None => {
                allowed(&["job", "group", "path", "reduce"])?;
                let job = t
                    .get("job")
                    .and_then(toml::Value::as_str)
                    .ok_or("a metric leaf needs job = \"<fio job name>\"")?
                    .to_string();
                let path = t
                    .get("path")
                    .and_then(toml::Value::as_str)
                    .ok_or("a metric leaf needs path = \"<dir>.<field>…\"")?
                    .to_string();
                let group = match t.get("group") {
                    None => None,
                    Some(g) => Some(
                        g.as_integer()
                            .filter(|g| *g >= 0)
                            .ok_or_else(|| format!("group must be an integer ≥ 0, not `{g}`"))?
                            as u64,
                    ),
                };
                let reduce = match t.get("reduce") {
                    None => None,
                    Some(r) => Some(r.as_str().and_then(Reduce::parse).ok_or_else(|| {
                        format!("reduce must be \"max\", \"min\", \"sum\" or \"mean\", not `{r}`")
                    })?),
                };
                Ok(Metric::Leaf {
                    job,
                    group,
                    path,
                    reduce,
                    scale,
                })
            }
            Some(op) => {
                let op = op
                    .as_str()
                    .ok_or_else(|| format!("op must be a string, not `{op}`"))?;
                let bin = match op {
                    "diff" => Some(BinOp::Diff),
                    "ratio" => Some(BinOp::Ratio),
                    "rel_change" => Some(BinOp::RelChange),
                    _ => None,
                };
                if let Some(bop) = bin {
                    allowed(&["op", "a", "b"])?;
                    return Ok(Metric::Bin {
                        op: bop,
                        a: Box::new(sub("a")?),
                        b: Box::new(sub("b")?),
                        scale,
                    });
                }
                if op == "abs" {
                    allowed(&["op", "of"])?;
                    return Ok(Metric::Abs {
                        of: Box::new(sub("of")?),
                        scale,
                    });
                }
                let red = Reduce::parse(op).ok_or_else(|| {
                    format!("unknown op `{op}` (diff, ratio, rel_change, abs, max, min, sum, mean)")
                })?;
                allowed(&["op", "of"])?;
                let of = t
                    .get("of")
                    .and_then(toml::Value::as_array)
                    .ok_or_else(|| format!("op `{op}` needs of = [metric, …]"))?;
                let of = of
                    .iter()
                    .enumerate()
                    .map(|(i, m)| Metric::from_toml(m).map_err(|e| format!("of[{i}]: {e}")))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Metric::Nary { op: red, of, scale })
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Definitions
// ---------------------------------------------------------------------------

/// Kind of a published target (fidelity-targets.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    Value,
    AtMost,
    AtLeast,
    Ratio,
}

/// One published figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    pub id: String,
    pub source: String,
    pub desc: Option<String>,
    pub paper: f64,
    pub kind: TargetKind,
    pub tolerance: f64,
}

/// How one target is measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    pub id: String,
    /// Job file, relative to the experiments directory.
    pub job: Option<String>,
    pub metric: Option<Metric>,
    /// Not measurable yet: the reason.
    pub pending: Option<String>,
    pub note: Option<String>,
}

/// Where a curve's measured points come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataRef {
    /// CSV file in `data/zn540/` of the experiments directory.
    pub csv: String,
    pub x: String,
    pub y: String,
    pub x_scale: f64,
    pub y_scale: f64,
    /// Only rows whose column equals this text.
    pub filter: Vec<(String, String)>,
}

/// One line of a curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesDef {
    pub label: String,
    pub job: String,
    /// (x, fio job name) per emulated point.
    pub points: Vec<(f64, String)>,
    pub metric: Metric,
    pub data: Option<DataRef>,
    /// How far the series may be from its measured points (the curve's
    /// `tolerance` unless the series sets its own).
    pub tolerance: Option<CurveTolerance>,
}

/// A curve's tolerance: the mean of |emulated − measured| / |measured| over
/// the compared points, and optionally the largest single one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurveTolerance {
    pub mean: f64,
    pub max: Option<f64>,
}

impl CurveTolerance {
    fn from_toml(v: &toml::Value) -> Result<CurveTolerance, String> {
        let t = v
            .as_table()
            .ok_or("tolerance must be a table: { mean = 0.10, max = 0.25 }")?;
        for k in t.keys() {
            if k != "mean" && k != "max" {
                return Err(format!("tolerance: unknown key `{k}` (mean, max)"));
            }
        }
        let frac = |k: &str| -> Result<Option<f64>, String> {
            match t.get(k) {
                None => Ok(None),
                Some(v) => match num(v) {
                    Some(f) if f > 0.0 && f.is_finite() => Ok(Some(f)),
                    _ => Err(format!(
                        "tolerance.{k} must be a positive fraction (0.10 = 10 %)"
                    )),
                },
            }
        };
        Ok(CurveTolerance {
            mean: frac("mean")?.ok_or("tolerance needs mean = <fraction>")?,
            max: frac("max")?,
        })
    }
}

/// A figure: several series against one x axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurveDef {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    /// Legend of the measured data: which device it is from (`data_label`
    /// in fidelity.toml; default "ZN540 measured").
    pub data_label: String,
    pub series: Vec<SeriesDef>,
}

/// The parsed suite.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suite {
    pub dir: PathBuf,
    pub targets: Vec<Target>,
    pub experiments: BTreeMap<String, Experiment>,
    pub curves: Vec<CurveDef>,
}

fn read(path: &Path) -> Result<String, FidelityError> {
    std::fs::read_to_string(path).map_err(|err| FidelityError::Read {
        path: path.to_path_buf(),
        err,
    })
}

fn parse_toml(path: &Path, text: &str) -> Result<toml::Table, FidelityError> {
    text.parse::<toml::Table>()
        .map_err(|e| FidelityError::Toml {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })
}

fn num(v: &toml::Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

/// Parses the published targets (fidelity-targets.toml's text).
pub fn parse_targets(text: &str, path: &Path) -> Result<Vec<Target>, FidelityError> {
    let t = parse_toml(path, text)?;
    let def = |what: String, msg: &str| FidelityError::Definition {
        path: path.to_path_buf(),
        what,
        msg: msg.to_string(),
    };
    let arr = t
        .get("target")
        .and_then(toml::Value::as_array)
        .ok_or_else(|| def("file".into(), "no [[target]] entries"))?;
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, e) in arr.iter().enumerate() {
        let what = format!("target #{i}");
        let id = e
            .get("id")
            .and_then(toml::Value::as_str)
            .ok_or_else(|| def(what.clone(), "missing id"))?
            .to_string();
        let what = format!("target {id}");
        if !seen.insert(id.clone()) {
            return Err(def(what, "duplicate id"));
        }
        let paper = e
            .get("paper")
            .and_then(num)
            .ok_or_else(|| def(what.clone(), "missing numeric paper value"))?;
        let kind = match e
            .get("kind")
            .and_then(toml::Value::as_str)
            .unwrap_or("value")
        {
            "value" => TargetKind::Value,
            "at_most" => TargetKind::AtMost,
            "at_least" => TargetKind::AtLeast,
            "ratio" => TargetKind::Ratio,
            other => {
                return Err(def(
                    what,
                    &format!("unknown kind `{other}` (value, at_most, at_least, ratio)"),
                ))
            }
        };
        let tolerance = match e.get("tolerance") {
            Some(v) => num(v).ok_or_else(|| def(what.clone(), "tolerance must be a number"))?,
            None if matches!(kind, TargetKind::AtMost | TargetKind::AtLeast) => 0.0,
            None => return Err(def(what, "missing tolerance")),
        };
        out.push(Target {
            id,
            source: e
                .get("source")
                .and_then(toml::Value::as_str)
                .unwrap_or("")
                .to_string(),
            desc: e
                .get("desc")
                .and_then(toml::Value::as_str)
                .map(str::to_string),
            paper,
            kind,
            tolerance,
        });
    }
    Ok(out)
}

fn fmt_x(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Parses `fidelity.toml`'s text (experiments and curves).
pub fn parse_suite_toml(
    text: &str,
    path: &Path,
) -> Result<(BTreeMap<String, Experiment>, Vec<CurveDef>), FidelityError> {
    let t = parse_toml(path, text)?;
    let def = |what: &str, msg: String| FidelityError::Definition {
        path: path.to_path_buf(),
        what: what.to_string(),
        msg,
    };
    for k in t.keys() {
        if k != "experiment" && k != "curve" {
            return Err(def(
                "file",
                format!("unknown top-level key `{k}` (experiment, curve)"),
            ));
        }
    }
    let mut exps = BTreeMap::new();
    let empty = Vec::new();
    let arr = t
        .get("experiment")
        .and_then(toml::Value::as_array)
        .unwrap_or(&empty);
    for (i, e) in arr.iter().enumerate() {
        let id = e
            .get("id")
            .and_then(toml::Value::as_str)
            .ok_or_else(|| def(&format!("experiment #{i}"), "missing id".into()))?
            .to_string();
        let what = format!("experiment {id}");
        let tbl = e
            .as_table()
            .ok_or_else(|| def(&what, "not a table".into()))?;
        for k in tbl.keys() {
            if !["id", "job", "metric", "pending", "note"].contains(&k.as_str()) {
                return Err(def(
                    &what,
                    format!("unknown key `{k}` (id, job, metric, pending, note)"),
                ));
            }
        }
        let s = |k: &str| e.get(k).and_then(toml::Value::as_str).map(str::to_string);
        let metric = match e.get("metric") {
            Some(m) => Some(Metric::from_toml(m).map_err(|msg| def(&what, msg))?),
            None => None,
        };
        let exp = Experiment {
            id: id.clone(),
            job: s("job"),
            metric,
            pending: s("pending"),
            note: s("note"),
        };
        if exp.pending.is_none() && (exp.job.is_none() || exp.metric.is_none()) {
            return Err(def(
                &what,
                "needs job and metric (or pending = \"reason\")".into(),
            ));
        }
        if exps.insert(id, exp).is_some() {
            return Err(def(&what, "duplicate id".into()));
        }
    }
    let mut curves = Vec::new();
    let arr = t
        .get("curve")
        .and_then(toml::Value::as_array)
        .unwrap_or(&empty);
    let mut seen = BTreeSet::new();
    for (i, c) in arr.iter().enumerate() {
        let id = c
            .get("id")
            .and_then(toml::Value::as_str)
            .ok_or_else(|| def(&format!("curve #{i}"), "missing id".into()))?
            .to_string();
        let what = format!("curve {id}");
        if !seen.insert(id.clone()) {
            return Err(def(&what, "duplicate id".into()));
        }
        let s = |k: &str| c.get(k).and_then(toml::Value::as_str).map(str::to_string);
        let b = |k: &str| c.get(k).and_then(toml::Value::as_bool).unwrap_or(false);
        let curve_job = s("job");
        let curve_tolerance = c
            .get("tolerance")
            .map(CurveTolerance::from_toml)
            .transpose()
            .map_err(|m| def(&what, m))?;
        let mut series = Vec::new();
        let sarr = c
            .get("series")
            .and_then(toml::Value::as_array)
            .ok_or_else(|| def(&what, "needs [[curve.series]]".into()))?;
        for (j, se) in sarr.iter().enumerate() {
            let swhat = format!("{what} series #{j}");
            let ss = |k: &str| se.get(k).and_then(toml::Value::as_str).map(str::to_string);
            let label = ss("label").ok_or_else(|| def(&swhat, "missing label".into()))?;
            let job = ss("job")
                .or_else(|| curve_job.clone())
                .ok_or_else(|| def(&swhat, "missing job (on the series or the curve)".into()))?;
            let xs: Vec<f64> = se
                .get("x")
                .and_then(toml::Value::as_array)
                .ok_or_else(|| def(&swhat, "missing x = [..]".into()))?
                .iter()
                .map(|v| {
                    num(v).ok_or_else(|| def(&swhat, format!("x value `{v}` is not a number")))
                })
                .collect::<Result<_, _>>()?;
            let names: Vec<String> =
                if let Some(list) = se.get("jobs").and_then(toml::Value::as_array) {
                    list.iter()
                        .map(|v| {
                            v.as_str()
                                .map(str::to_string)
                                .ok_or_else(|| def(&swhat, "jobs must be strings".into()))
                        })
                        .collect::<Result<_, _>>()?
                } else if let Some(p) = ss("job_pattern") {
                    xs.iter().map(|x| p.replace("{x}", &fmt_x(*x))).collect()
                } else {
                    return Err(def(&swhat, "needs jobs = [..] or job_pattern".into()));
                };
            if names.len() != xs.len() {
                return Err(def(
                    &swhat,
                    format!("{} x values but {} jobs", xs.len(), names.len()),
                ));
            }
            let metric = Metric::from_toml(
                se.get("metric")
                    .ok_or_else(|| def(&swhat, "missing metric".into()))?,
            )
            .map_err(|m| def(&swhat, m))?;
            let data = match se.get("data") {
                None => None,
                Some(d) => {
                    let ds = |k: &str| {
                        d.get(k)
                            .and_then(toml::Value::as_str)
                            .map(str::to_string)
                            .ok_or_else(|| def(&swhat, format!("data needs {k} = \"…\"")))
                    };
                    let filter = match d.get("where").and_then(toml::Value::as_table) {
                        None => Vec::new(),
                        Some(w) => w
                            .iter()
                            .map(|(k, v)| {
                                let v = v
                                    .as_str()
                                    .map(str::to_string)
                                    .unwrap_or_else(|| v.to_string());
                                (k.clone(), v)
                            })
                            .collect(),
                    };
                    Some(DataRef {
                        csv: ds("csv")?,
                        x: ds("x")?,
                        y: ds("y")?,
                        x_scale: d.get("x_scale").and_then(num).unwrap_or(1.0),
                        y_scale: d.get("y_scale").and_then(num).unwrap_or(1.0),
                        filter,
                    })
                }
            };
            let tolerance = match se.get("tolerance") {
                Some(v) => Some(CurveTolerance::from_toml(v).map_err(|m| def(&swhat, m))?),
                None => curve_tolerance,
            };
            if data.is_some() && tolerance.is_none() {
                return Err(def(
                    &swhat,
                    "has measured data but no tolerance: set tolerance = { mean = …, max = … } on the curve or the series".into(),
                ));
            }
            series.push(SeriesDef {
                label,
                job,
                points: xs.into_iter().zip(names).collect(),
                metric,
                data,
                tolerance,
            });
        }
        curves.push(CurveDef {
            title: s("title").unwrap_or_else(|| id.clone()),
            x_label: s("x_label").unwrap_or_default(),
            y_label: s("y_label").unwrap_or_default(),
            log_x: b("log_x"),
            log_y: b("log_y"),
            data_label: s("data_label").unwrap_or_else(|| DEFAULT_DATA_LABEL.to_string()),
            id,
            series,
        });
    }
    Ok((exps, curves))
}

impl Suite {
    /// Loads `fidelity-targets.toml` and `fidelity.toml` from `dir`.
    pub fn load(dir: &Path) -> Result<Suite, FidelityError> {
        let tp = dir.join("fidelity-targets.toml");
        let targets = parse_targets(&read(&tp)?, &tp)?;
        let sp = dir.join("fidelity.toml");
        let (experiments, curves) = parse_suite_toml(&read(&sp)?, &sp)?;
        for id in experiments.keys() {
            if !targets.iter().any(|t| &t.id == id) {
                return Err(FidelityError::Definition {
                    path: sp.clone(),
                    what: format!("experiment {id}"),
                    msg: "no such id in fidelity-targets.toml".into(),
                });
            }
        }
        Ok(Suite {
            dir: dir.to_path_buf(),
            targets,
            experiments,
            curves,
        })
    }

    /// Every job file the suite refers to (relative paths, sorted).
    pub fn job_files(&self) -> BTreeSet<String> {
        let mut s: BTreeSet<String> = self
            .experiments
            .values()
            .filter_map(|e| e.job.clone())
            .collect();
        for c in &self.curves {
            for se in &c.series {
                s.insert(se.job.clone());
            }
        }
        s
    }
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

/// Reason an `sn540.*` target without an experiment in fidelity.toml is
/// pending (rather than an error): it needs an experiment on the FTL device.
pub const SN540_PENDING: &str = "no experiment on the FTL device (sn540) yet";

/// What to run.
#[derive(Debug, Clone)]
pub struct FidelityOptions {
    /// Directory holding fidelity-targets.toml, fidelity.toml, the job files
    /// and `data/zn540/`.
    pub experiments_dir: PathBuf,
    /// Only ids (targets and curves) matching this: a glob if it contains
    /// `*`, else a substring.
    pub filter: Option<String>,
    /// Write one PNG and one CSV per curve here.
    pub plots_dir: Option<PathBuf>,
    /// Run the curves (sweeps) too.
    pub curves: bool,
    pub seed: u64,
}

/// The experiments directory of this source tree.
pub fn default_experiments_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments"))
}

impl Default for FidelityOptions {
    fn default() -> Self {
        FidelityOptions {
            experiments_dir: default_experiments_dir(),
            filter: None,
            plots_dir: None,
            curves: true,
            seed: 1,
        }
    }
}

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

/// Legend of a curve's measured data unless it sets `data_label`.
pub const DEFAULT_DATA_LABEL: &str = "ZN540 measured";

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

fn id_matches(filter: &Option<String>, id: &str) -> bool {
    match filter {
        None => true,
        Some(f) if f.contains('*') || f.contains('?') => glob_match(f, id),
        Some(f) => id.contains(f.as_str()),
    }
}

/// Runs one job file through the ordinary bench path and returns its fio
/// JSON document.
pub fn run_job_file(dir: &Path, job: &str, seed: u64) -> Result<Json, String> {
    let path = dir.join(job);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let specs = parse_job_file(&text, job).map_err(|e| e.to_string())?;
    let rep = run_jobs(&specs, seed).map_err(|e| format!("{job}: {e}"))?;
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
pub fn load_data(dir: &Path, d: &DataRef) -> Result<Vec<(f64, f64)>, String> {
    let path = dir.join("data").join("zn540").join(&d.csv);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
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
    let suite = Suite::load(&opts.experiments_dir)?;
    let dir = &suite.dir;
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
        let r = run_job_file(dir, j, opts.seed);
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
                match std::fs::write(&csv, crate::plot::curve_csv(c)) {
                    Ok(()) => c.csv = Some(csv),
                    Err(e) => c.plot_error = Some(format!("{}: {e}", csv.display())),
                }
                let png = pd.join(format!("{}.png", c.id));
                match crate::plot::draw_png(c, &png) {
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
