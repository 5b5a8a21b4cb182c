//! One point of a sweep: its parameters and stable id, and running it
//! in-process through the libraries (zns-raid's crash harness, zns-bench's
//! runner, zns-cache, zns-bench's ZRAID reproduction) into a [`Record`]:
//! the metrics as flat columns, or the error that stopped it. A panic in a
//! run is caught and recorded as the point's error, so one bad point does
//! not end a sweep.
//!
//! [`run_params`] is the same run with the whole report as JSON (the
//! Python package's `crashtest`, `cache_run`, …).

use std::collections::BTreeMap;
use std::path::Path;
use zns_cache::CacheRunParams;
use zns_raid::crash_params::CrashParams;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::kind::RunKind;

/// A fio job carried by a point (read from the sweep's `job` file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobText {
    /// The file name, for messages.
    pub name: String,
    pub text: String,
}

/// One point: what to run with which parameters. Self-contained (a bench
/// job's text is inside), so it runs on any machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Position in the sweep (0-based).
    pub index: usize,
    /// Stable id: a hash of the run kind, the parameters (in name order)
    /// and the job text; the same point has the same id in every sweep.
    pub id: String,
    pub run: RunKind,
    pub params: Map<String, Value>,
    pub job: Option<JobText>,
}

/// Whether a point ran to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Error,
}

/// A point's result: one file in the sweep's `points/`, one row of its table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub index: usize,
    pub id: String,
    pub params: Map<String, Value>,
    pub status: Status,
    /// Why the point failed (status error).
    pub error: Option<String>,
    /// Flat metrics (numbers, strings, booleans), by column name.
    pub metrics: Map<String, Value>,
    /// Host seconds the point took (not in the merged table: it depends on
    /// the machine, the table does not).
    pub host_s: f64,
}

impl Point {
    pub fn new(
        index: usize,
        run: RunKind,
        params: Map<String, Value>,
        job: Option<JobText>,
    ) -> Point {
        let id = point_id(run, &params, job.as_ref());
        Point {
            index,
            id,
            run,
            params,
            job,
        }
    }
}

/// The id of a point: FNV-1a (64 bits) of its canonical JSON, in hex.
pub fn point_id(run: RunKind, params: &Map<String, Value>, job: Option<&JobText>) -> String {
    let sorted: BTreeMap<&String, &Value> = params.iter().collect();
    let canon = serde_json::json!({
        "run": run.name(),
        "params": sorted,
        "job": job.map(|j| &j.text),
    });
    let text = canon.to_string();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The host's monotonic clock, in seconds from any origin. The OS-facing
/// caller (zns-cli, zns-py) gives it: a point's host time is a figure the
/// sweep reports, never an input of a simulation, and this crate reads no
/// clock itself (DESIGN.md, "Time and determinism").
pub type HostClock = dyn Fn() -> f64 + Sync;

/// Runs `point` and records its metrics or its error, and its host time on
/// `clock`. `files_dir` is where a run that writes files (repro-zraid's CSV
/// and PNG) puts them.
pub fn run_point(point: &Point, files_dir: Option<&Path>, clock: &HostClock) -> Record {
    let start = clock();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_params(point.run, &point.params, point.job.as_ref(), files_dir)
    }));
    let result = match result {
        Ok(r) => r.map(|full| metrics(point.run, &full)),
        Err(p) => Err(format!("panic: {}", panic_text(&p))),
    };
    let host_s = clock() - start;
    let (status, error, metrics) = match result {
        Ok(m) => (Status::Ok, None, m),
        Err(e) => (Status::Error, Some(e), Map::new()),
    };
    Record {
        index: point.index,
        id: point.id.clone(),
        params: point.params.clone(),
        status,
        error,
        metrics,
        host_s,
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

/// Parameters each run kind takes (bench: any fio job option, and `seed`).
/// A crash test's are the policy, the seed and the fields of
/// `zns_raid::crash_params::CrashParams` (the flags of `zns raid crashtest`);
/// a cache run's the fields of `zns_cache::CacheRunParams` (the flags of
/// `zns cache run`).
pub fn crashtest_params() -> Vec<String> {
    let mut names = vec!["policy".to_string(), "seed".to_string()];
    names.extend(CrashParams::names());
    names
}

pub const REPRO_ZRAID_PARAMS: [&str; 3] = ["fig", "seed", "raid_options"];

/// Whether `name` is a parameter of `kind`; the error lists what is.
pub fn check_param_name(kind: RunKind, name: &str) -> Result<(), String> {
    let crashtest = crashtest_params();
    let crashtest: Vec<&str> = crashtest.iter().map(String::as_str).collect();
    let cache = CacheRunParams::names();
    let cache: Vec<&str> = cache.iter().map(String::as_str).collect();
    let known: &[&str] = match kind {
        RunKind::Crashtest => &crashtest,
        RunKind::Cache => &cache,
        RunKind::ReproZraid => &REPRO_ZRAID_PARAMS,
        RunKind::Bench => {
            if name == "seed" || zns_bench::job::find_option(name).is_some() {
                return Ok(());
            }
            let hint = zns_bench::job::suggest_option(name)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "parameter `{name}`: not a fio job option{hint} (`zns bench --cmdhelp` lists them) nor `seed`"
            ));
        }
    };
    if known.contains(&name) {
        Ok(())
    } else {
        Err(format!(
            "parameter `{name}`: run = \"{}\" takes {}",
            kind.name(),
            known.join(", ")
        ))
    }
}

/// Typed access to a point's parameters, with errors that name them.
struct Params<'a>(&'a Map<String, Value>);

impl Params<'_> {
    fn u64(&self, k: &str, default: u64) -> Result<u64, String> {
        match self.0.get(k) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .ok_or_else(|| format!("{k} = {v}: expected a non-negative integer")),
        }
    }
    /// A string parameter; numbers are taken as their text (`chunk = 65536`).
    fn text(&self, k: &str) -> Option<String> {
        self.0.get(k).map(value_text)
    }
    fn text_or(&self, k: &str, default: &str) -> String {
        self.text(k).unwrap_or_else(|| default.to_string())
    }
}

/// A parameter as text (strings without quotes).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Runs `kind` with `params` and returns its whole report as JSON (or the
/// reason it could not run). The same parameters as a sweep point.
pub fn run_params(
    kind: RunKind,
    params: &Map<String, Value>,
    job: Option<&JobText>,
    files_dir: Option<&Path>,
) -> Result<Value, String> {
    for k in params.keys() {
        check_param_name(kind, k)?;
    }
    let p = Params(params);
    match kind {
        RunKind::Crashtest => crashtest(&p),
        RunKind::Bench => {
            let job = job.ok_or("run = \"bench\" needs a job (job file or job text)")?;
            bench(&p, job)
        }
        RunKind::Cache => cache(&p),
        RunKind::ReproZraid => {
            let dir = files_dir
                .ok_or("repro-zraid writes CSV and PNG files: it needs a directory for them")?;
            repro_zraid(&p, dir)
        }
    }
}

fn crashtest(p: &Params) -> Result<Value, String> {
    use zns_raid::crash_params::DEFAULT_TRIALS;
    use zns_raid::crashtest;
    let policy: zns_raid::Policy = p
        .text_or("policy", "wplog")
        .parse()
        .map_err(|e| format!("policy: {e}"))?;
    let fields: Map<String, Value> =
        p.0.iter()
            .filter(|(k, _)| *k != "policy" && *k != "seed")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    let params: CrashParams = read_params(&fields)?;
    let shape = params
        .shape(DEFAULT_TRIALS, None)
        .map_err(|e| format!("profile: {e}"))?;
    let cfg = shape
        .config(policy)
        .map_err(|e| params.as_given(e).to_string())?;
    let seed = p.u64("seed", 1)?;
    let s = crashtest::run(&cfg, shape.trials, seed, &mut |_| {});
    if let Some(e) = s.not_run_error(policy) {
        return Err(e); // a point with status=error, never a failure rate
    }
    serde_json::to_value(s.report(policy)).map_err(|e| e.to_string())
}

/// Adds `key=value` lines at the end of every job section of `text`
/// ([global] included), so that a point's parameters win over the file's
/// own settings of them, as a later line wins in fio's INI.
pub fn override_job_text(text: &str, params: &[(String, String)]) -> String {
    if params.is_empty() {
        return text.to_string();
    }
    let lines: String = params.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    let mut out = String::with_capacity(text.len() + lines.len() * 4);
    let mut in_section = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            if in_section {
                out.push_str(&lines);
            }
            in_section = true;
        }
        out.push_str(line);
        out.push('\n');
    }
    if in_section {
        out.push_str(&lines);
    }
    out
}

fn bench(p: &Params, job: &JobText) -> Result<Value, String> {
    use zns_bench::job;
    let seed = p.u64("seed", 0)?;
    let overrides: Vec<(String, String)> =
        p.0.iter()
            .filter(|(k, _)| *k != "seed")
            .map(|(k, v)| (k.clone(), value_text(v)))
            .collect();
    let text = override_job_text(&job.text, &overrides);
    let no_env = |_: &str| None;
    let no_include = |path: &Path| -> Result<String, String> {
        Err(format!(
            "{}: include files are not read in a sweep (the point must run anywhere): inline it",
            path.display()
        ))
    };
    let text = zns_bench::jobtext::expand(&text, Path::new(&job.name), &no_env, &no_include)?;
    let specs = job::parse_job_file(&text, &job.name).map_err(|e| e.to_string())?;
    for name in specs.iter().filter_map(|j| j.filename.as_deref()) {
        if zns_target::is_real_device(name) {
            return Err(format!(
                "filename={name}: a sweep runs emulated devices only (virtual time)"
            ));
        }
    }
    let report = zns_bench::run::run_jobs(&specs, seed).map_err(|e| e.to_string())?;
    let failures = report.failures();
    if !failures.is_empty() {
        return Err(failures.join("; "));
    }
    Ok(report.to_fio_json())
}

fn cache(p: &Params) -> Result<Value, String> {
    let params: CacheRunParams = read_params(p.0)?;
    let spec = params.spec(None).map_err(|e| e.to_string())?;
    let report = zns_cache::run_cache(&spec, &mut |_| {}).map_err(|e| e.to_string())?;
    serde_json::to_value(&report).map_err(|e| e.to_string())
}

/// A run's parameter struct filled from a point's keys (serde's defaults
/// for the others); each key is read alone first, so that a value of the
/// wrong type is named.
fn read_params<T: serde::de::DeserializeOwned>(keys: &Map<String, Value>) -> Result<T, String> {
    for (k, v) in keys {
        let one = Map::from_iter([(k.clone(), v.clone())]);
        serde_json::from_value::<T>(Value::Object(one)).map_err(|e| format!("{k} = {v}: {e}"))?;
    }
    serde_json::from_value(Value::Object(keys.clone())).map_err(|e| e.to_string())
}

fn repro_zraid(p: &Params, dir: &Path) -> Result<Value, String> {
    use zns_repro::zraid::emulated::{self, parse_figs, ReproOptions};
    let figs = parse_figs(&p.text_or("fig", "7,8,waf,11")).map_err(|e| format!("fig: {e}"))?;
    let raid_options = p.text("raid_options");
    let opts = ReproOptions::new(
        figs,
        p.u64("seed", 1)?,
        dir.to_path_buf(),
        raid_options.as_deref(),
    );
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let report = emulated::run(&opts, &mut |_| {}).map_err(|e| e.to_string())?;
    serde_json::to_value(&report).map_err(|e| e.to_string())
}

/// The columns of a point's row: the run's headline numbers, flat.
pub fn metrics(kind: RunKind, full: &Value) -> Map<String, Value> {
    match kind {
        RunKind::Bench => bench_metrics(full),
        RunKind::Crashtest => {
            // the policy is a parameter; `trials` counts the counted ones
            let mut m = Map::new();
            flatten("", full, &mut m);
            m.shift_remove("policy");
            if let Some(t) = m.shift_remove("trials") {
                m.insert("counted_trials".into(), t);
            }
            m
        }
        RunKind::Cache | RunKind::ReproZraid => {
            let mut m = Map::new();
            flatten("", full, &mut m);
            m
        }
    }
}

/// Scalars of `v` under dotted names; arrays (time series, per-point
/// lists, files) are left out, except [name, number] pairs (named values).
pub fn flatten(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                flatten(&key(k), v, out);
            }
        }
        Value::Array(a) => {
            for item in a {
                if let Some([Value::String(name), n @ Value::Number(_)]) =
                    item.as_array().map(Vec::as_slice)
                {
                    out.insert(key(name), n.clone());
                }
            }
        }
        Value::Null => {
            out.insert(prefix.to_string(), Value::Null);
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

/// fio JSON to columns, per direction (read, write, trim with I/O):
/// iops and bw (KiB/s, fio's unit) summed over the jobs; the completion
/// latency's mean weighted by the jobs' I/Os; its p50/p99/p99.9 the
/// largest of the jobs' (the worst job's, exact with one job or
/// group_reporting); and the run's virtual seconds.
fn bench_metrics(fio: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    let jobs = fio["jobs"].as_array().cloned().unwrap_or_default();
    for dir in ["read", "write", "trim"] {
        let ios: u64 = jobs
            .iter()
            .filter_map(|j| j[dir]["total_ios"].as_u64())
            .sum();
        if ios == 0 {
            continue;
        }
        let sum = |f: &dyn Fn(&Value) -> Option<f64>| -> f64 {
            jobs.iter().filter_map(|j| f(&j[dir])).sum()
        };
        m.insert(
            format!("{dir}_iops"),
            Value::from(sum(&|d| d["iops"].as_f64())),
        );
        m.insert(
            format!("{dir}_bw_kib_s"),
            Value::from(sum(&|d| d["bw"].as_f64())),
        );
        m.insert(format!("{dir}_ios"), Value::from(ios));
        let weighted = sum(&|d| Some(d["clat_ns"]["mean"].as_f64()? * d["total_ios"].as_f64()?));
        m.insert(
            format!("{dir}_clat_mean_ns"),
            Value::from(weighted / ios as f64),
        );
        for (name, key) in [
            ("p50", "50.000000"),
            ("p99", "99.000000"),
            ("p99_9", "99.900000"),
        ] {
            let worst = jobs
                .iter()
                .filter_map(|j| j[dir]["clat_ns"]["percentile"][key].as_u64())
                .max();
            if let Some(w) = worst {
                m.insert(format!("{dir}_clat_{name}_ns"), Value::from(w));
            }
        }
    }
    if let Some(t) = fio["znskit"]["virtual_ns"].as_u64() {
        m.insert("virtual_s".into(), Value::from(t as f64 / 1e9));
    }
    m
}
