//! One application run on a served array: `zns serve` an array (and a
//! conventional namespace for F2FS's metadata), make and mount F2FS zoned
//! on them, run a workload (a fio personality or db_bench), unmount, stop
//! the server and keep what it counted. The raw reports are written beside
//! the results, so every number can be traced to the program that printed
//! it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::dbbench::{parse_report, run_db_bench, run_db_bench_of, BenchResult};
use crate::filebench::{self, run_filebench, FilebenchResult};
use crate::fio::{run_fio, summarize, FioResult};
use crate::load::{RunLoad, Snapshot};
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
    /// filebench (the user's, `--filebench`) with a personality of
    /// workloads/filebench/*.f and its placeholders (DIR is set to the
    /// mount point).
    Filebench {
        program: PathBuf,
        personality: String,
        vars: Vec<(String, String)>,
    },
    /// The user's db_bench built with ZenFS (`--db-bench`) on ZenFS made by
    /// the `zenfs` utility on the array itself ([`run_on_zenfs`]), with
    /// these arguments (`--fs_uri` is set).
    ZenfsDbBench {
        db_bench: PathBuf,
        zenfs: PathBuf,
        args: Vec<String>,
    },
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
    /// filebench's figures.
    pub filebench: Option<FilebenchResult>,
    /// `zns serve --stats`: requests served, device time, the array's counters.
    pub served: serde_json::Value,
    /// The raw report, as the program printed it.
    pub report_file: PathBuf,
    /// The CPU's busy share and the block layer's counters of the served
    /// devices over the workload (None where they cannot be read).
    pub load: Option<RunLoad>,
}

/// Where a run's [`RunLoad`] is kept (`LABEL.load.json` in the work
/// directory), so that a resumed series keeps it.
fn load_file(work_dir: &Path, label: &str) -> PathBuf {
    work_dir.join(format!("{label}.load.json"))
}

/// Measures what `f` (the workload) costs the CPU and the `devices`' block
/// layers; the load is also written to `LABEL.load.json` in `work_dir`.
pub fn measured<T>(
    work_dir: &Path,
    label: &str,
    devices: &[(&str, &str)],
    f: impl FnOnce() -> Result<T, AppError>,
) -> Result<(T, Option<RunLoad>), AppError> {
    let before = Snapshot::take(devices);
    let out = f()?;
    let load = before.and_then(|b| Some(Snapshot::take(devices)?.since(&b)));
    if let Some(load) = &load {
        let file = load_file(work_dir, label);
        let text = serde_json::to_string_pretty(load)
            .map_err(|e| AppError::Io(format!("{}: {e}", file.display())))?;
        std::fs::write(&file, text + "\n")
            .map_err(|e| AppError::Io(format!("{}: {e}", file.display())))?;
    }
    Ok((out, load))
}

/// `zns serve TARGETS… SERVE_ARGS…` with its stats in `LABEL.serve.json`;
/// the server and the device path of the first target (the array).
fn serve(env: &RunEnv, targets: &[&str], label: &str) -> Result<(Server, String), AppError> {
    std::fs::create_dir_all(&env.work_dir)
        .map_err(|e| AppError::Io(format!("{}: {e}", env.work_dir.display())))?;
    let stats = env.work_dir.join(format!("{label}.serve.json"));
    let mut args: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
    args.extend(env.serve_args.iter().cloned());
    let server = Server::start(&env.zns, &args, &stats)?;
    let array = targets.first().copied().unwrap_or_default();
    let dev = server
        .path_of(array)
        .ok_or_else(|| AppError::Io(format!("zns serve did not list {array}")))?
        .to_string();
    Ok((server, dev))
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
    let (server, zoned) = serve(env, &[array, meta], label)?;
    let meta_dev = server
        .devices
        .iter()
        .find(|d| !d.zoned)
        .map(|d| d.path.clone())
        .ok_or_else(|| AppError::Io(format!("{meta} has no conventional namespace")))?;
    let fs = FileSystem::F2fsZoned {
        meta: meta_dev.clone(),
        zoned: zoned.clone(),
    };
    fs.make()?;
    // (the mount point stays off the work directory, which may be a
    // shared folder in the guest)
    let mnt = std::env::temp_dir().join(format!("zns-apps-mnt-{}", std::process::id()));
    let mounted = fs.mount(&mnt)?;
    let report_file = env.work_dir.join(format!("{label}.report"));
    let devices = [("array", zoned.as_str()), ("meta", meta_dev.as_str())];
    let outcome = measured(&env.work_dir, label, &devices, || {
        run_workload(workload, mounted.dir(), &env.work_dir, &report_file)
    });
    mounted.unmount()?;
    let served = server.stop()?;
    let ((fio, db_bench, filebench), load) = outcome?;
    Ok(RunResult {
        fio,
        db_bench,
        filebench,
        served,
        report_file,
        load,
    })
}

/// Zones ZenFS needs on its device (fewer: `zenfs mkfs` refuses it).
pub const ZENFS_MIN_ZONES: u64 = 32;

/// The I/O scheduler ZenFS asks of its device (it checks for it).
pub const ZENFS_SCHEDULER: &str = "mq-deadline";

/// Serves `array` alone, makes ZenFS on it with the `zenfs` utility
/// (`mkfs`; its aux directory, ZenFS's lock and log files, on the local
/// file system), and runs the user's db_bench built with ZenFS on it
/// (`--fs_uri=zenfs://dev:NAME`): Fig. 10 as the paper ran it. The device
/// gets the mq-deadline scheduler and must have at least
/// [`ZENFS_MIN_ZONES`] zones. `workload` must be a
/// [`Workload::ZenfsDbBench`].
pub fn run_on_zenfs(
    env: &RunEnv,
    array: &str,
    workload: &Workload,
    label: &str,
) -> Result<RunResult, AppError> {
    let Workload::ZenfsDbBench {
        db_bench,
        zenfs,
        args,
    } = workload
    else {
        return Err(AppError::Invalid(
            "run_on_zenfs runs db_bench with ZenFS only".into(),
        ));
    };
    let (server, dev) = serve(env, &[array], label)?;
    let report_file = env.work_dir.join(format!("{label}.report"));
    let outcome = zenfs_prepare(&dev, zenfs, label).and_then(|name| {
        let mut all = vec![format!("--fs_uri=zenfs://dev:{name}")];
        all.extend(args.iter().cloned());
        let program = db_bench.to_string_lossy();
        measured(&env.work_dir, label, &[("array", dev.as_str())], || {
            let (results, out) = run_db_bench_of(&program, &all)?;
            std::fs::write(&report_file, &out)
                .map_err(|e| AppError::Io(format!("{}: {e}", report_file.display())))?;
            Ok(results)
        })
    });
    let served = server.stop()?;
    let (db_bench, load) = outcome?;
    Ok(RunResult {
        fio: None,
        db_bench,
        filebench: None,
        served,
        report_file,
        load,
    })
}

/// The device `dev` made ready for ZenFS: its zone count checked, its
/// scheduler set, `zenfs mkfs` run; its name (`ublkbN`).
fn zenfs_prepare(dev: &str, zenfs: &Path, label: &str) -> Result<String, AppError> {
    let name = Path::new(dev)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| AppError::Io(format!("{dev}: no device name")))?;
    let queue = format!("/sys/block/{name}/queue");
    let read = |f: &str| {
        std::fs::read_to_string(format!("{queue}/{f}"))
            .map_err(|e| AppError::Io(format!("{queue}/{f}: {e}")))
    };
    let zones: u64 = read("nr_zones")?.trim().parse().unwrap_or(0);
    if zones < ZENFS_MIN_ZONES {
        return Err(AppError::Invalid(format!(
            "{dev}: {zones} zones; ZenFS needs at least {ZENFS_MIN_ZONES} (--member-zones)"
        )));
    }
    std::fs::write(format!("{queue}/scheduler"), ZENFS_SCHEDULER)
        .map_err(|e| AppError::Io(format!("{queue}/scheduler: {ZENFS_SCHEDULER}: {e}")))?;
    let aux = std::env::temp_dir().join(format!("zenfs-aux-{label}"));
    let _ = std::fs::remove_dir_all(&aux);
    crate::run(
        &zenfs.to_string_lossy(),
        &[
            "mkfs",
            &format!("--zbd={name}"),
            &format!("--aux_path={}", aux.display()),
            "--force",
        ],
        &[],
    )?;
    Ok(name)
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
    let (fio, db_bench, filebench) = match workload {
        Workload::Fio { .. } => {
            let doc: serde_json::Value = serde_json::from_str(&report).ok()?;
            (Some(summarize(&doc).ok()?), Vec::new(), None)
        }
        Workload::DbBench { .. } | Workload::ZenfsDbBench { .. } => {
            let results = parse_report(&report);
            if results.is_empty() {
                return None;
            }
            (None, results, None)
        }
        Workload::Filebench { .. } => (None, Vec::new(), Some(filebench::parse_report(&report)?)),
    };
    // (a run from before the load was kept has none)
    let load = std::fs::read_to_string(load_file(&env.work_dir, label))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    Some(RunResult {
        fio,
        db_bench,
        filebench,
        served,
        report_file,
        load,
    })
}

type Figures = (Option<FioResult>, Vec<BenchResult>, Option<FilebenchResult>);

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
            Ok((Some(r), Vec::new(), None))
        }
        Workload::DbBench { args } => {
            let mut all = vec![format!("--db={}/rocksdb", mnt.display())];
            all.extend(args.iter().cloned());
            let (results, out) = run_db_bench(&all)?;
            write_report(&out)?;
            Ok((None, results, None))
        }
        Workload::Filebench {
            program,
            personality,
            vars,
        } => {
            let mut all = vec![("DIR".to_string(), mnt.display().to_string())];
            all.extend(vars.iter().cloned());
            let job = work_dir.join(format!("{personality}.f"));
            std::fs::write(&job, filebench::personality(personality, &all)?)
                .map_err(|e| AppError::Io(format!("{}: {e}", job.display())))?;
            let (r, out) = run_filebench(program, &job)?;
            write_report(&out)?;
            Ok((None, Vec::new(), Some(r)))
        }
        Workload::ZenfsDbBench { .. } => Err(AppError::Invalid(
            "db_bench on ZenFS runs on the array itself (run_on_zenfs), not on F2FS".into(),
        )),
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
