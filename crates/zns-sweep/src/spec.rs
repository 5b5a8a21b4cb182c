//! The sweep file: what to run, the fixed parameters, the grid and/or list
//! of points, the seeds, and the resources a point asks of a cluster.
//! Expansion into [`Point`]s, in a fixed order with stable ids.
//!
//! ```toml
//! run = "crashtest"                   # crashtest | bench | cache | repro-zraid
//! # job = "seqwrite.fio"              # bench: the fio job file (relative to this file)
//! seeds = { first = 1, count = 100 }  # or a list: seeds = [1, 2, 3]
//! [params]                            # the same for every point
//! policy = "wplog"
//! [grid]                              # every combination (keys in name order)
//! chunk_kib = [32, 64]
//! qd = [1, 4]
//! [[points]]                          # and/or listed points (each × the grid)
//! members = 4
//! [resources]                         # what a Ray task asks for
//! cpus = 1
//! memory = "1G"
//! retries = 3
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::kind::RunKind;
use crate::point::{self, JobText, Point};
use crate::SweepError;

/// What one point asks of a cluster scheduler (Ray); the local engine
/// runs one point per worker thread and ignores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// CPUs a point's task reserves (a simulation uses one).
    pub cpus: f64,
    /// Memory a point's task reserves, bytes (None: no reservation).
    pub memory_bytes: Option<u64>,
    /// How often a task lost with its worker is run again.
    pub retries: u32,
}

impl Default for Resources {
    fn default() -> Resources {
        Resources {
            cpus: 1.0,
            memory_bytes: None,
            retries: 3,
        }
    }
}

/// A parsed sweep file.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Where it was read from (for messages).
    pub file: String,
    pub kind: RunKind,
    /// The fio job (bench), read at load time so that a point carries it.
    pub job: Option<JobText>,
    /// Parameters every point has, in name order.
    pub fixed: Map<String, Value>,
    /// Listed points (`[[points]]`), each crossed with the grid.
    pub list: Vec<Map<String, Value>>,
    /// Grid axes in name order: every combination is a point.
    pub grid: Vec<(String, Vec<Value>)>,
    /// Seeds, the innermost axis (empty: no `seed` column from `seeds`).
    pub seeds: Vec<u64>,
    pub resources: Resources,
}

/// The most points one sweep file may expand to.
pub const MAX_POINTS: usize = 10_000_000;

impl Sweep {
    /// Reads and parses a sweep file; a bench job file is read relative to it.
    pub fn load(path: &Path) -> Result<Sweep, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|e| SweepError::file(path, e))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Sweep::parse(&text, &path.display().to_string(), dir)
    }

    /// Parses sweep-file text; `dir` is where relative job paths start.
    pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Sweep, SweepError> {
        let bad = |msg: String| SweepError::Spec {
            file: file.to_string(),
            msg,
        };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            // where: line and column (1-based) of the error's start
            let at = e.span().map(|r| {
                let before = &text[..r.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!("line {line}, column {col}: ")
            });
            bad(format!("{}{}", at.unwrap_or_default(), e.message().trim()))
        })?;
        for key in table.keys() {
            if ![
                "run",
                "job",
                "job_text",
                "seeds",
                "params",
                "grid",
                "points",
                "resources",
            ]
            .contains(&key.as_str())
            {
                return Err(bad(format!(
                    "unknown key `{key}` (a sweep file has run, job, job_text, seeds, [params], [grid], [[points]], [resources])"
                )));
            }
        }
        let kind = match table.get("run") {
            Some(toml::Value::String(s)) => RunKind::parse(s).map_err(bad)?,
            Some(_) => return Err(bad("`run` must be a string".into())),
            None => {
                return Err(bad(format!(
                    "missing `run = \"…\"`: what each point runs ({})",
                    RunKind::NAMES.join(", ")
                )))
            }
        };
        let job = match (table.get("job"), table.get("job_text")) {
            (Some(_), Some(_)) => {
                return Err(bad("give `job` (a file) or `job_text`, not both".into()))
            }
            (Some(toml::Value::String(p)), None) => {
                let path: PathBuf = dir.join(p);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| bad(format!("job = \"{p}\": {e}")))?;
                Some(JobText {
                    name: p.clone(),
                    text,
                })
            }
            (None, Some(toml::Value::String(t))) => Some(JobText {
                name: "job_text".into(),
                text: t.clone(),
            }),
            (None, None) => None,
            _ => return Err(bad("`job` and `job_text` must be strings".into())),
        };
        match (kind, &job) {
            (RunKind::Bench, None) => {
                return Err(bad(
                    "run = \"bench\" needs `job = \"FILE.fio\"` or `job_text = \"…\"`".into(),
                ))
            }
            (RunKind::Bench, Some(_)) | (_, None) => {}
            (k, Some(_)) => {
                return Err(bad(format!(
                    "`job` belongs to run = \"bench\", not run = \"{}\"",
                    k.name()
                )))
            }
        }
        let fixed = match table.get("params") {
            None => Map::new(),
            Some(toml::Value::Table(t)) => scalars(t, "[params]").map_err(bad)?,
            Some(_) => return Err(bad("`params` must be a table ([params])".into())),
        };
        let mut grid = Vec::new();
        match table.get("grid") {
            None => {}
            Some(toml::Value::Table(t)) => {
                for (k, v) in t {
                    let toml::Value::Array(vals) = v else {
                        return Err(bad(format!(
                            "[grid] {k}: a list of values, e.g. {k} = [1, 2]"
                        )));
                    };
                    if vals.is_empty() {
                        return Err(bad(format!("[grid] {k}: an empty list gives no points")));
                    }
                    let vals = vals
                        .iter()
                        .map(|v| scalar(v).map_err(|m| format!("[grid] {k}: {m}")))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(bad)?;
                    grid.push((k.clone(), vals));
                }
            }
            Some(_) => return Err(bad("`grid` must be a table ([grid])".into())),
        }
        let list = match table.get("points") {
            None => Vec::new(),
            Some(toml::Value::Array(a)) => {
                if a.is_empty() {
                    return Err(bad("`points` is empty".into()));
                }
                a.iter()
                    .enumerate()
                    .map(|(i, p)| match p {
                        toml::Value::Table(t) => scalars(t, &format!("[[points]] #{}", i + 1)),
                        _ => Err(format!("[[points]] #{}: must be a table", i + 1)),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(bad)?
            }
            Some(_) => {
                return Err(bad(
                    "`points` must be an array of tables ([[points]])".into()
                ))
            }
        };
        let seeds = match table.get("seeds") {
            None => Vec::new(),
            Some(toml::Value::Array(a)) => {
                if a.is_empty() {
                    return Err(bad("`seeds` is empty".into()));
                }
                a.iter()
                    .map(|v| match v {
                        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
                        _ => Err(bad(format!("seeds: {v} is not a non-negative integer"))),
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
            Some(toml::Value::Table(t)) => {
                let get = |k: &str| match t.get(k) {
                    Some(toml::Value::Integer(i)) if *i >= 0 => Ok(*i as u64),
                    Some(v) => Err(bad(format!("seeds.{k}: {v} is not a non-negative integer"))),
                    None => Err(bad(format!(
                        "seeds = {{ first = N, count = M }}: `{k}` is missing"
                    ))),
                };
                if let Some(k) = t.keys().find(|k| *k != "first" && *k != "count") {
                    return Err(bad(format!("seeds: unknown key `{k}` (first, count)")));
                }
                let (first, count) = (get("first")?, get("count")?);
                if count == 0 || count > MAX_POINTS as u64 {
                    return Err(bad(format!("seeds.count = {count}: 1 to {MAX_POINTS}")));
                }
                (0..count).map(|i| first.wrapping_add(i)).collect()
            }
            Some(_) => {
                return Err(bad(
                    "`seeds` is a list ([1, 2]) or { first = N, count = M }".into(),
                ))
            }
        };
        let resources = match table.get("resources") {
            None => Resources::default(),
            Some(toml::Value::Table(t)) => resources(t).map_err(bad)?,
            Some(_) => return Err(bad("`resources` must be a table ([resources])".into())),
        };
        // a parameter comes from one place only
        let mut sources: Vec<(&str, &str)> =
            fixed.keys().map(|k| (k.as_str(), "[params]")).collect();
        for (k, _) in &grid {
            sources.push((k, "[grid]"));
        }
        if !seeds.is_empty() {
            sources.push(("seed", "seeds"));
        }
        for (i, (k, from)) in sources.iter().enumerate() {
            if let Some((_, other)) = sources[..i].iter().find(|(o, _)| o == k) {
                return Err(bad(format!(
                    "parameter `{k}` is set in both {other} and {from}"
                )));
            }
            if list.iter().any(|p| p.contains_key(*k)) {
                return Err(bad(format!(
                    "parameter `{k}` is set in both {from} and [[points]]"
                )));
            }
        }
        let sweep = Sweep {
            file: file.to_string(),
            kind,
            job,
            fixed,
            list,
            grid,
            seeds,
            resources,
        };
        let n = sweep.len();
        if n > MAX_POINTS {
            return Err(bad(format!(
                "{n} points: at most {MAX_POINTS} in one sweep"
            )));
        }
        // names are checked once, here, rather than failing every point
        let mut names: Vec<&str> = sweep.fixed.keys().map(String::as_str).collect();
        names.extend(sweep.grid.iter().map(|(k, _)| k.as_str()));
        names.extend(sweep.list.iter().flat_map(|p| p.keys().map(String::as_str)));
        for name in names {
            point::check_param_name(kind, name).map_err(bad)?;
        }
        Ok(sweep)
    }

    /// How many points the sweep has.
    pub fn len(&self) -> usize {
        let grid: usize = self
            .grid
            .iter()
            .map(|(_, v)| v.len())
            .fold(1usize, |a, b| a.saturating_mul(b));
        grid.saturating_mul(self.list.len().max(1))
            .saturating_mul(self.seeds.len().max(1))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parameter names, in the order of the table's columns: fixed,
    /// listed, grid, seed.
    pub fn param_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.fixed.keys().cloned().collect();
        for p in &self.list {
            for k in p.keys() {
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        names.extend(self.grid.iter().map(|(k, _)| k.clone()));
        if !self.seeds.is_empty() {
            names.push("seed".into());
        }
        names
    }

    /// Every point, in order: listed points, then the grid (the last axis
    /// varying fastest), then the seeds. Two points with the same
    /// parameters are an error.
    pub fn points(&self) -> Result<Vec<Point>, SweepError> {
        let mut out = Vec::with_capacity(self.len());
        let empty = [Map::new()];
        let list: &[Map<String, Value>] = if self.list.is_empty() {
            &empty
        } else {
            &self.list
        };
        let grid_n: usize = self.grid.iter().map(|(_, v)| v.len()).product();
        let seeds: Vec<Option<u64>> = if self.seeds.is_empty() {
            vec![None]
        } else {
            self.seeds.iter().copied().map(Some).collect()
        };
        let mut seen = std::collections::HashMap::new();
        for listed in list {
            for g in 0..grid_n {
                // mixed-radix digits of g, the last axis fastest
                let mut rest = g;
                let mut cell = Vec::with_capacity(self.grid.len());
                for (k, vals) in self.grid.iter().rev() {
                    cell.push((k, &vals[rest % vals.len()]));
                    rest /= vals.len();
                }
                cell.reverse();
                for seed in &seeds {
                    let mut params = self.fixed.clone();
                    for (k, v) in listed {
                        params.insert(k.clone(), v.clone());
                    }
                    for (k, v) in &cell {
                        params.insert((*k).clone(), (*v).clone());
                    }
                    if let Some(s) = seed {
                        params.insert("seed".into(), Value::from(*s));
                    }
                    let p = Point::new(out.len(), self.kind, params, self.job.clone());
                    if let Some(first) = seen.insert(p.id.clone(), p.index) {
                        return Err(SweepError::Spec {
                            file: self.file.clone(),
                            msg: format!(
                                "points {} and {} have the same parameters ({})",
                                first + 1,
                                p.index + 1,
                                Value::Object(p.params.clone())
                            ),
                        });
                    }
                    out.push(p);
                }
            }
        }
        Ok(out)
    }
}

fn scalars(t: &toml::Table, what: &str) -> Result<Map<String, Value>, String> {
    t.iter()
        .map(|(k, v)| {
            Ok((
                k.clone(),
                scalar(v).map_err(|m| format!("{what} {k}: {m}"))?,
            ))
        })
        .collect()
}

/// A parameter value: string, integer, float or boolean.
fn scalar(v: &toml::Value) -> Result<Value, String> {
    match v {
        toml::Value::String(s) => Ok(Value::from(s.clone())),
        toml::Value::Integer(i) => Ok(Value::from(*i)),
        toml::Value::Float(f) if f.is_finite() => Ok(Value::from(*f)),
        toml::Value::Boolean(b) => Ok(Value::from(*b)),
        other => Err(format!(
            "{other} is not a value a parameter takes (a string, number or boolean)"
        )),
    }
}

fn resources(t: &toml::Table) -> Result<Resources, String> {
    let mut r = Resources::default();
    for (k, v) in t {
        match (k.as_str(), v) {
            ("cpus", toml::Value::Integer(i)) if *i > 0 => r.cpus = *i as f64,
            ("cpus", toml::Value::Float(f)) if f.is_finite() && *f > 0.0 => r.cpus = *f,
            ("memory", toml::Value::Integer(i)) if *i > 0 => r.memory_bytes = Some(*i as u64),
            ("memory", toml::Value::String(s)) => {
                let b = zns_target::size::parse_bytes(s)
                    .map_err(|e| format!("[resources] memory = \"{s}\": {e}"))?;
                if b == 0 {
                    return Err("[resources] memory: must be more than 0".into());
                }
                r.memory_bytes = Some(b);
            }
            ("retries", toml::Value::Integer(i)) if *i >= 0 => r.retries = *i as u32,
            ("cpus" | "memory" | "retries", v) => {
                return Err(format!(
                    "[resources] {k} = {v}: cpus is a positive number, memory a size (\"2G\") or bytes, retries a count"
                ))
            }
            _ => {
                return Err(format!(
                    "[resources]: unknown key `{k}` (cpus, memory, retries)"
                ))
            }
        }
    }
    Ok(r)
}
