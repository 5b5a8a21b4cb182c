//! The suite's definitions: the published targets (fidelity-targets.toml)
//! and the experiments, curves and tolerances (fidelity.toml), parsed and
//! checked into `Suite`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::{FidelityError, Metric};
use crate::experiments::Experiments;

/// Legend of a curve's measured data unless it sets `data_label`.
pub const DEFAULT_DATA_LABEL: &str = "ZN540 measured";

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
    /// Where its files are read from.
    #[serde(skip)]
    pub files: Experiments,
    pub targets: Vec<Target>,
    pub experiments: BTreeMap<String, Experiment>,
    pub curves: Vec<CurveDef>,
}

fn read(files: &Experiments, rel: &str) -> Result<String, FidelityError> {
    files.read(rel).map_err(|err| FidelityError::Read {
        path: files.path(rel),
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

pub(super) fn fmt_x(x: f64) -> String {
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
            Some(m) => Some(Metric::from_toml(m).map_err(|e| def(&what, e.to_string()))?),
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
            .map_err(|m| def(&swhat, m.to_string()))?;
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
    /// Loads `fidelity-targets.toml` and `fidelity.toml` from `files`.
    pub fn load(files: &Experiments) -> Result<Suite, FidelityError> {
        let tp = files.path("fidelity-targets.toml");
        let targets = parse_targets(&read(files, "fidelity-targets.toml")?, &tp)?;
        let sp = files.path("fidelity.toml");
        let (experiments, curves) = parse_suite_toml(&read(files, "fidelity.toml")?, &sp)?;
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
            files: files.clone(),
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
