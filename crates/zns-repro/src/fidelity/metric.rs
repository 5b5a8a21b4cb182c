//! The metric language: a declarative expression evaluated on a fio JSON
//! document (job selection by name, glob or index; dot paths; reductions
//! and arithmetic), see the module header of `fidelity` and docs/fidelity.md.

use serde::Serialize;
use serde_json::Value as Json;

use super::MetricError;

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

pub(super) fn glob_match(pat: &str, s: &str) -> bool {
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
    match walk(v, path, true)? {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The value at `path` in `v`: object keys matched as `json_path` says
/// (the longest dotted key first), and with `index_arrays` array items by
/// their index.
fn walk<'a>(v: &'a Json, path: &str, index_arrays: bool) -> Option<&'a Json> {
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
            Json::Array(items) if index_arrays => {
                let idx: usize = segs[i].parse().ok()?;
                cur = items.get(idx)?;
                i += 1;
            }
            _ => return None,
        }
    }
    Some(cur)
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

/// The value at `path` in `v`, through objects only.
fn lookup_any<'a>(v: &'a Json, path: &str) -> Option<&'a Json> {
    walk(v, path, false)
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
    pub fn from_toml(v: &toml::Value) -> Result<Metric, MetricError> {
        Metric::parse_toml(v).map_err(MetricError::Definition)
    }

    fn parse_toml(v: &toml::Value) -> Result<Metric, String> {
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
            Metric::parse_toml(
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
                    .map(|(i, m)| Metric::parse_toml(m).map_err(|e| format!("of[{i}]: {e}")))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Metric::Nary { op: red, of, scale })
            }
        }
    }
}
