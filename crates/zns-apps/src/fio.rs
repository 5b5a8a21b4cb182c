//! fio runs for application workloads: a job file (with `${VAR}`s fio
//! expands from the environment) run with `--output-format=json`, and the
//! figures its JSON report gives summed over the jobs: read and write IOPS
//! and bandwidth — together the calls per second a filebench personality's
//! I/O flowops make (its writes are O_SYNC/O_DSYNC where filebench
//! fsyncs, so each write is its own sync; docs/filebench-fio.md). A job
//! that reports an error fails the run: flow-locked jobs stall when one
//! dies, and their figures mean nothing.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{run, AppError};

/// A fio report, summed over its jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FioResult {
    pub read_iops: f64,
    pub write_iops: f64,
    pub read_mib_per_s: f64,
    pub write_mib_per_s: f64,
}

impl FioResult {
    /// Reads and writes per second.
    pub fn ops_per_s(&self) -> f64 {
        self.read_iops + self.write_iops
    }
}

/// Runs fio on `job_file` with `env` (the job file's variables); the
/// summed figures and the JSON report.
pub fn run_fio(job_file: &Path, env: &[(&str, &str)]) -> Result<(FioResult, Value), AppError> {
    raise_open_file_limit();
    let file = job_file.to_string_lossy();
    let out = run("fio", &["--output-format=json", &file], env)?;
    // (fio may print notes before the document)
    let start = out.find('{').unwrap_or(0);
    let doc: Value = serde_json::from_str(&out[start..]).map_err(|e| AppError::Report {
        program: "fio".into(),
        what: format!("its JSON report: {e}"),
    })?;
    let r = summarize(&doc).map_err(|what| AppError::Report {
        program: "fio".into(),
        what,
    })?;
    Ok((r, doc))
}

/// fio started with `args` in the background (stdin closed, its JSON
/// report into the file `report`), to run until [`stop_background`].
pub fn spawn_background(args: &[String], report: &Path) -> Result<Child, AppError> {
    let file = std::fs::File::create(report).map_err(AppError::file(report))?;
    Command::new("fio")
        .args(args)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| AppError::Spawn {
            program: "fio".into(),
            source,
        })
}

/// Stops a [`spawn_background`] fio (SIGINT: fio reports what it did) and
/// reads its report from `report`; errors name the run as `label`.
pub fn stop_background(
    mut child: Child,
    report: &Path,
    label: &str,
) -> Result<FioResult, AppError> {
    // SAFETY: kill signals our own child, not yet waited for.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let _ = child.wait();
    let text = std::fs::read_to_string(report)
        .map_err(|e| AppError::Io(format!("{}: {e}", report.display())))?;
    let start = text.find('{').ok_or_else(|| AppError::Report {
        program: label.into(),
        what: format!("no JSON report in {}", report.display()),
    })?;
    let doc: Value = serde_json::from_str(&text[start..]).map_err(|e| AppError::Report {
        program: label.into(),
        what: format!("{}: {e}", report.display()),
    })?;
    summarize(&doc).map_err(|what| AppError::Report {
        program: label.into(),
        what,
    })
}

/// Raises this process's soft limit of open files to its hard limit (fio
/// inherits it): the personalities' flow-locked threads keep all their
/// files open (50 × NFILES for FILESERVER).
fn raise_open_file_limit() {
    // SAFETY: getrlimit and setrlimit read and write a plain struct we own.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Sums a fio JSON report's jobs; an error when it has none or a job
/// failed.
/// The error is what the report lacks (the caller names the program).
pub(crate) fn summarize(doc: &Value) -> Result<FioResult, String> {
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .filter(|j| !j.is_empty())
        .ok_or("its JSON report has no jobs")?;
    let mut r = FioResult::default();
    for j in jobs {
        let error = j["error"].as_i64().unwrap_or(0);
        if error != 0 {
            return Err(format!(
                "job {} failed with error {error}",
                j["jobname"].as_str().unwrap_or("?")
            ));
        }
        let f = |dir: &str, key: &str| j[dir][key].as_f64().unwrap_or(0.0);
        r.read_iops += f("read", "iops");
        r.write_iops += f("write", "iops");
        r.read_mib_per_s += f("read", "bw_bytes") / 1048576.0;
        r.write_mib_per_s += f("write", "bw_bytes") / 1048576.0;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_summed_and_a_failed_job_fails_the_run() {
        let doc = serde_json::json!({"jobs": [
            {"jobname": "a", "error": 0, "read": {"iops": 100.0, "bw_bytes": 1048576.0},
             "write": {"iops": 50.0, "bw_bytes": 2097152.0}},
            {"jobname": "b", "error": 0, "read": {"iops": 10.0, "bw_bytes": 0.0},
             "write": {"iops": 0.0, "bw_bytes": 0.0}},
        ]});
        let r = summarize(&doc).unwrap();
        assert_eq!(r.read_iops, 110.0);
        assert_eq!(r.write_iops, 50.0);
        assert_eq!(r.read_mib_per_s, 1.0);
        assert_eq!(r.write_mib_per_s, 2.0);
        assert_eq!(r.ops_per_s(), 160.0);
        assert!(summarize(&serde_json::json!({"jobs": []})).is_err());
        let failed = serde_json::json!({"jobs": [{"jobname": "oltp-dbwr", "error": 5}]});
        let e = summarize(&failed).unwrap_err();
        assert!(e.contains("oltp-dbwr") && e.contains("error 5"), "{e}");
    }
}
