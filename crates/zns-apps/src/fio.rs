//! fio runs for application workloads: a job file (with `${VAR}`s fio
//! expands from the environment) run with `--output-format=json`, and the
//! figures its JSON report gives summed over the jobs: read and write IOPS
//! and bandwidth, and syncs (fsync/fdatasync) per second — together the
//! operations per second a filebench personality's I/O flowops make.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::{run, AppError};

/// A fio report, summed over its jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct FioResult {
    pub read_iops: f64,
    pub write_iops: f64,
    pub sync_per_s: f64,
    pub read_mib_per_s: f64,
    pub write_mib_per_s: f64,
}

impl FioResult {
    /// Reads, writes and syncs per second.
    pub fn ops_per_s(&self) -> f64 {
        self.read_iops + self.write_iops + self.sync_per_s
    }
}

/// Runs fio on `job_file` with `env` (the job file's variables); the
/// summed figures and the JSON report.
pub fn run_fio(job_file: &Path, env: &[(&str, &str)]) -> Result<(FioResult, Value), AppError> {
    let file = job_file.to_string_lossy();
    let out = run("fio", &["--output-format=json", &file], env)?;
    // (fio may print notes before the document)
    let start = out.find('{').unwrap_or(0);
    let doc: Value = serde_json::from_str(&out[start..]).map_err(|e| AppError::Report {
        program: "fio".into(),
        what: format!("its JSON report: {e}"),
    })?;
    let r = summarize(&doc).ok_or_else(|| AppError::Report {
        program: "fio".into(),
        what: "its JSON report has no jobs".into(),
    })?;
    Ok((r, doc))
}

/// Sums a fio JSON report's jobs.
pub fn summarize(doc: &Value) -> Option<FioResult> {
    let jobs = doc.get("jobs")?.as_array()?;
    if jobs.is_empty() {
        return None;
    }
    let mut r = FioResult::default();
    for j in jobs {
        let f = |dir: &str, key: &str| j[dir][key].as_f64().unwrap_or(0.0);
        r.read_iops += f("read", "iops");
        r.write_iops += f("write", "iops");
        r.read_mib_per_s += f("read", "bw_bytes") / 1048576.0;
        r.write_mib_per_s += f("write", "bw_bytes") / 1048576.0;
        let runtime_ms = j["job_runtime"].as_f64().unwrap_or(0.0);
        let syncs = j["sync"]["total_ios"].as_f64().unwrap_or(0.0);
        if runtime_ms > 0.0 {
            r.sync_per_s += syncs / (runtime_ms / 1000.0);
        }
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_summed_with_their_syncs() {
        let doc = serde_json::json!({"jobs": [
            {"job_runtime": 2000, "read": {"iops": 100.0, "bw_bytes": 1048576.0},
             "write": {"iops": 50.0, "bw_bytes": 2097152.0}, "sync": {"total_ios": 40}},
            {"job_runtime": 1000, "read": {"iops": 10.0, "bw_bytes": 0.0},
             "write": {"iops": 0.0, "bw_bytes": 0.0}, "sync": {"total_ios": 0}},
        ]});
        let r = summarize(&doc).unwrap();
        assert_eq!(r.read_iops, 110.0);
        assert_eq!(r.write_iops, 50.0);
        assert_eq!(r.sync_per_s, 20.0);
        assert_eq!(r.read_mib_per_s, 1.0);
        assert_eq!(r.write_mib_per_s, 2.0);
        assert_eq!(r.ops_per_s(), 180.0);
        assert!(summarize(&serde_json::json!({"jobs": []})).is_none());
    }
}
