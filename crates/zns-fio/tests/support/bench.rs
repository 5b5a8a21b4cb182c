//! `zns bench` on fio job files, for comparing it with fio running the
//! engine (tests/fio.rs and examples/fio_vs_bench.rs include this file):
//! zns-bench is a dev-dependency of the engine, not a dependency.

use serde_json::Value as Json;

/// Runs job files (text, name) through `zns bench` in virtual time, one
/// reporting group per file as fio does, and returns fio's JSON layout.
pub fn bench_json(files: &[(String, String)], seed: u64) -> Result<Json, String> {
    let mut all: Vec<zns_bench::job::JobSpec> = Vec::new();
    for (text, name) in files {
        let mut jobs =
            zns_bench::job::parse_job_file(text, name).map_err(|e| format!("{name}: {e}"))?;
        let base = all.last().map_or(0, |j| j.group + 1);
        for j in &mut jobs {
            j.group += base;
        }
        all.extend(jobs);
    }
    let report = zns_bench::run::run_jobs(&all, seed).map_err(|e| e.to_string())?;
    Ok(report.to_fio_json())
}
