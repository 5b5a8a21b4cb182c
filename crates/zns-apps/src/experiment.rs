//! One application run on a served array: `zns serve` an array (and a
//! conventional namespace for F2FS's metadata), make and mount F2FS zoned
//! on them, run a workload (a fio personality or db_bench), unmount, stop
//! the server and keep what it counted. The raw reports are written beside
//! the results, so every number can be traced to the program that printed
//! it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::dbbench::{parse_report, run_db_bench, BenchResult};
use crate::fio::{run_fio, summarize, FioResult};
use crate::mount::FileSystem;
use crate::served::Server;
use crate::AppError;

/// The fio personalities of filebench's workloads (workloads/filebench,
/// docs/filebench-fio.md), embedded so that `zns` needs no checkout.
pub const PERSONALITIES: [(&str, &str); 3] = [
    (
        "fileserver",
        include_str!("../../../workloads/filebench/fileserver.fio"),
    ),
    (
        "oltp",
        include_str!("../../../workloads/filebench/oltp.fio"),
    ),
    (
        "varmail",
        include_str!("../../../workloads/filebench/varmail.fio"),
    ),
];

/// What runs on the file system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Workload {
    /// A fio personality by name, with its variables (DIR is set to the
    /// mount point).
    Fio {
        personality: String,
        vars: Vec<(String, String)>,
    },
    /// db_bench with these arguments (`--db` is set to a directory on the
    /// mount point).
    DbBench { args: Vec<String> },
}

/// Where and how the runs happen.
#[derive(Debug, Clone)]
pub struct RunEnv {
    /// The `zns` binary that serves.
    pub zns: PathBuf,
    /// Where the stats files and raw reports go.
    pub work_dir: PathBuf,
    /// `zns serve` options every run gets (`--speed`, `--zones`, …).
    pub serve_args: Vec<String>,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// fio's figures (a personality).
    pub fio: Option<FioResult>,
    /// db_bench's figures (each benchmark).
    pub db_bench: Vec<BenchResult>,
    /// `zns serve --stats`: requests served, device time, the array's counters.
    pub served: serde_json::Value,
    /// The raw report, as the program printed it.
    pub report_file: PathBuf,
}

/// Serves `array` with `meta` (a conventional namespace, e.g. `zn540-cns`'s
/// first) for F2FS's metadata, runs `workload` on F2FS zoned, and returns
/// the figures; `label` names the raw report file.
pub fn run_on_f2fs(
    env: &RunEnv,
    array: &str,
    meta: &str,
    workload: &Workload,
    label: &str,
) -> Result<RunResult, AppError> {
    std::fs::create_dir_all(&env.work_dir)
        .map_err(|e| AppError::Io(format!("{}: {e}", env.work_dir.display())))?;
    let stats = env.work_dir.join(format!("{label}.serve.json"));
    let mut args = vec![array.to_string(), meta.to_string()];
    args.extend(env.serve_args.iter().cloned());
    let server = Server::start(&env.zns, &args, &stats)?;
    let zoned = server
        .path_of(array)
        .ok_or_else(|| AppError::Io(format!("zns serve did not list {array}")))?
        .to_string();
    let meta_dev = server
        .devices
        .iter()
        .find(|d| !d.zoned)
        .map(|d| d.path.clone())
        .ok_or_else(|| AppError::Io(format!("{meta} has no conventional namespace")))?;
    let fs = FileSystem::F2fsZoned {
        meta: meta_dev,
        zoned,
    };
    fs.make()?;
    // (the mount point stays off the work directory, which may be a
    // shared folder in the guest)
    let mnt = std::env::temp_dir().join(format!("zns-apps-mnt-{}", std::process::id()));
    let mounted = fs.mount(&mnt)?;
    let report_file = env.work_dir.join(format!("{label}.report"));
    let outcome = run_workload(workload, mounted.dir(), &env.work_dir, &report_file);
    mounted.unmount()?;
    let served = server.stop()?;
    let (fio, db_bench) = outcome?;
    Ok(RunResult {
        fio,
        db_bench,
        served,
        report_file,
    })
}

/// The result of an earlier run of `workload` named `label` in
/// `env.work_dir`, read back from the files it left (its raw report and
/// the server's stats), for resuming a long series; `None` when the run did
/// not finish (either file missing, cut short, or without figures).
pub fn earlier_run(env: &RunEnv, workload: &Workload, label: &str) -> Option<RunResult> {
    let report_file = env.work_dir.join(format!("{label}.report"));
    let stats = env.work_dir.join(format!("{label}.serve.json"));
    let served: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).ok()?).ok()?;
    served.get("virtual_ns")?;
    let report = std::fs::read_to_string(&report_file).ok()?;
    let (fio, db_bench) = match workload {
        Workload::Fio { .. } => {
            let doc: serde_json::Value = serde_json::from_str(&report).ok()?;
            (Some(summarize(&doc).ok()?), Vec::new())
        }
        Workload::DbBench { .. } => {
            let results = parse_report(&report);
            if results.is_empty() {
                return None;
            }
            (None, results)
        }
    };
    Some(RunResult {
        fio,
        db_bench,
        served,
        report_file,
    })
}

type Figures = (Option<FioResult>, Vec<BenchResult>);

fn run_workload(
    workload: &Workload,
    mnt: &Path,
    work_dir: &Path,
    report_file: &Path,
) -> Result<Figures, AppError> {
    let write_report = |text: &str| {
        std::fs::write(report_file, text)
            .map_err(|e| AppError::Io(format!("{}: {e}", report_file.display())))
    };
    match workload {
        Workload::Fio { personality, vars } => {
            let text = PERSONALITIES
                .iter()
                .find(|(n, _)| n == personality)
                .map(|(_, t)| *t)
                .ok_or_else(|| AppError::Io(format!("no fio personality {personality}")))?;
            let job = work_dir.join(format!("{personality}.fio"));
            std::fs::write(&job, text)
                .map_err(|e| AppError::Io(format!("{}: {e}", job.display())))?;
            let dir = mnt.to_string_lossy().into_owned();
            let mut env: Vec<(&str, &str)> = vec![("DIR", dir.as_str())];
            env.extend(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let (r, doc) = run_fio(&job, &env)?;
            write_report(&format!("{doc:#}\n"))?;
            Ok((Some(r), Vec::new()))
        }
        Workload::DbBench { args } => {
            let mut all = vec![format!("--db={}/rocksdb", mnt.display())];
            all.extend(args.iter().cloned());
            let (results, out) = run_db_bench(&all)?;
            write_report(&out)?;
            Ok((None, results))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished run is read back from its two files; a run cut short
    /// (either file missing or truncated, a failed job) is not.
    #[test]
    fn earlier_runs_are_kept_only_when_finished() {
        let dir = std::env::temp_dir().join(format!("zns-apps-earlier-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let env = RunEnv {
            zns: PathBuf::from("zns"),
            work_dir: dir.clone(),
            serve_args: Vec::new(),
        };
        let fio = Workload::Fio {
            personality: "oltp".into(),
            vars: Vec::new(),
        };
        let report = serde_json::json!({"jobs": [{"jobname": "a", "error": 0,
            "read": {"iops": 100.0, "bw_bytes": 1048576.0},
            "write": {"iops": 50.0, "bw_bytes": 0.0}}]});
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
        assert!(earlier_run(&env, &fio, "r").is_none(), "nothing yet");
        write("r.report", &report.to_string());
        assert!(
            earlier_run(&env, &fio, "r").is_none(),
            "server stats missing"
        );
        write("r.serve.json", "{\"virtual_ns\": 12");
        assert!(earlier_run(&env, &fio, "r").is_none(), "stats cut short");
        write("r.serve.json", "{\"virtual_ns\": 12}");
        let r = earlier_run(&env, &fio, "r").expect("a finished run");
        assert_eq!(r.fio.unwrap().ops_per_s(), 150.0);
        assert_eq!(r.served["virtual_ns"], 12);
        write(
            "r.report",
            &report.to_string().replace("\"error\":0", "\"error\":5"),
        );
        assert!(earlier_run(&env, &fio, "r").is_none(), "a failed job");
        let db = Workload::DbBench { args: Vec::new() };
        write("d.serve.json", "{\"virtual_ns\": 1}");
        write("d.report", "RocksDB: version 7.8\n");
        assert!(earlier_run(&env, &db, "d").is_none(), "no benchmark line");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
