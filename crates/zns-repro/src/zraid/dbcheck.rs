//! The method check against the one application-level measurement of the
//! real drive (docs/apps.md): RocksDB's db_bench on F2FS zoned on a ZN540
//! (`experiments/data/zn540/nvmeb_rocksdb_dbbench.csv`, rows `f2fs-zns`:
//! zbdbench's runs with 20 B keys and 800 B values) against the same
//! workloads on F2FS zoned over a served `zn540-cns` (F2FS's metadata on its
//! conventional namespace), at a reduced key count and a speed factor F.
//!
//! Scaling: at `--speed F` every device latency is 1/F times longer, so a
//! workload the device bounds runs F times slower than on the drive: its
//! ops/s divided by F is what the drive would do. A workload the host bounds
//! (db_bench's fill and overwrite mostly go to the memtable and the WAL in
//! the page cache) does not scale so; the table gives both, and the ratio
//! says which case a workload is in.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use zns_apps::dbbench::{run_db_bench, BenchResult};
use zns_apps::experiment::measured as measured_run;
use zns_apps::load::RunLoad;
use zns_apps::mount::FileSystem;
use zns_apps::outfiles;
use zns_apps::served::Server;
use zns_apps::AppError;

/// How the check runs.
#[derive(Debug, Clone)]
pub struct DbCheckOptions {
    /// `zns serve --speed` of the fills (fillrandom, overwrite: one thread,
    /// k = [`FILL_CORES`]).
    pub fill_speed: f64,
    /// `zns serve --speed` of readrandom (32 threads, k = [`READ_CORES`]);
    /// when it differs from `fill_speed` the database is built again on a
    /// second server at this speed (the same fills, not measured).
    pub read_speed: f64,
    /// Keys written by fillrandom (and overwritten).
    pub keys: u64,
    /// readrandom's duration, seconds (the guest's clock).
    pub read_seconds: u32,
    /// Zones of zn540-cns's zoned namespace (`zns serve --zones`).
    pub zones: u32,
    pub out_dir: PathBuf,
    /// The `zns` binary that serves.
    pub zns: PathBuf,
    /// The measured CSV's text (experiments/data/zn540/nvmeb_rocksdb_dbbench.csv).
    pub measured_csv: String,
}

/// One workload: the drive's figures and ours.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DbCheckRow {
    pub workload: String,
    /// The drive's (mean over the CSV's runs).
    pub measured_ops_per_s: Option<f64>,
    pub measured_p99_us: Option<f64>,
    /// Ours at the speed factor (the clock of the machine it ran on).
    pub emulated_ops_per_s: f64,
    pub emulated_p99_us: Option<f64>,
    pub speed: f64,
    /// Ours divided by the speed factor: the drive's rate if the device
    /// bounds the workload.
    pub scaled_ops_per_s: f64,
    /// scaled / measured.
    pub ratio: Option<f64>,
    /// The CPU's busy share and the device's counters over the step that
    /// measured this row (None from before they were kept).
    #[serde(default)]
    pub load: Option<RunLoad>,
}

/// The workloads, as zbdbench ran them: fill and overwrite with one thread,
/// random reads with 32 (its readrandom: 211.7 µs/op at 151 k ops/s).
const READ_THREADS: u32 = 32;

/// k of the fills (F = c / k in the guest, docs/apps.md): one thread, one
/// core of the drive's machine — the calibration's own case.
pub const FILL_CORES: f64 = 1.0;

/// k of readrandom: its 32 threads kept up to 32 cores of the drive's
/// machine busy; measured, F = c / 32 lands on the drive (0.958) where
/// F = c gave 0.427 (one guest core for 32 threads).
pub const READ_CORES: f64 = READ_THREADS as f64;

fn common(keys: u64) -> Vec<String> {
    vec![
        format!("--num={keys}"),
        "--key_size=20".into(),
        "--value_size=800".into(),
        "--use_direct_reads=true".into(),
        "--use_direct_io_for_flush_and_compaction=true".into(),
        "--histogram=1".into(),
        "--progress_reports=false".into(),
    ]
}

/// The CSV's `f2fs-zns` rows for `workload`: mean ops/s and p99 (µs).
pub fn measured(csv: &str, workload: &str) -> (Option<f64>, Option<f64>) {
    let mut header: Vec<&str> = Vec::new();
    let (mut ops, mut p99) = (Vec::new(), Vec::new());
    for (i, line) in csv.lines().enumerate() {
        let cols: Vec<&str> = line.split(',').collect();
        if i == 0 {
            header = cols;
            continue;
        }
        let col = |name: &str| {
            header
                .iter()
                .position(|h| *h == name)
                .and_then(|j| cols.get(j))
        };
        if col("filesystem") != Some(&"f2fs-zns") || col("workload") != Some(&workload) {
            continue;
        }
        if let Some(v) = col("ops_per_sec").and_then(|v| v.parse::<f64>().ok()) {
            ops.push(v);
        }
        if let Some(v) = col("op_lat_p99_us").and_then(|v| v.parse::<f64>().ok()) {
            p99.push(v);
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    (mean(&ops), mean(&p99))
}

/// A db_bench step: its benchmarks, its own arguments and whether its
/// figures are rows of the check.
struct Step {
    benchmarks: &'static str,
    extra: Vec<String>,
    measured: bool,
}

/// The fills (fillrandom then overwrite, one thread).
fn fills(measured: bool) -> Step {
    Step {
        benchmarks: "fillrandom,overwrite",
        extra: vec!["--threads=1".into()],
        measured,
    }
}

/// A measured db_bench result, the speed it ran at and its step's load.
type Measured = (BenchResult, f64, Option<RunLoad>);

/// One server at `speed`, F2FS zoned on it, the `steps` in order; the
/// measured steps' results. `tag` names the phase's files in `runs/`.
fn phase(
    opts: &DbCheckOptions,
    speed: f64,
    tag: &str,
    steps: &[Step],
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Measured>, AppError> {
    let runs = opts.out_dir.join("runs");
    let target = "zn540-cns";
    let args = vec![
        target.to_string(),
        "--zones".into(),
        opts.zones.to_string(),
        "--speed".into(),
        speed.to_string(),
    ];
    progress(&format!(
        "db_bench check: F2FS zoned on a served {target} at --speed {speed}"
    ));
    let server = Server::start(&opts.zns, &args, &runs.join(format!("{tag}.serve.json")))?;
    let dev = |zoned: bool| {
        server
            .devices
            .iter()
            .find(|d| d.zoned == zoned)
            .map(|d| d.path.clone())
            .ok_or_else(|| AppError::Report {
                program: "zns serve".into(),
                what: format!(
                    "{target}: no {} namespace served",
                    if zoned { "zoned" } else { "conventional" }
                ),
            })
    };
    let (meta, zoned) = (dev(false)?, dev(true)?);
    let fs = FileSystem::F2fsZoned {
        meta: meta.clone(),
        zoned: zoned.clone(),
    };
    fs.make()?;
    let mnt = std::env::temp_dir().join(format!("zns-apps-dbcheck-{}", std::process::id()));
    let mounted = fs.mount(&mnt)?;
    let db = format!("--db={}/rocksdb", mounted.dir().display());
    let devices = [("device", zoned.as_str()), ("meta", meta.as_str())];
    let mut results = Vec::new();
    for step in steps {
        progress(&format!("db_bench --benchmarks={}", step.benchmarks));
        let mut a = vec![db.clone(), format!("--benchmarks={}", step.benchmarks)];
        a.extend(common(opts.keys));
        a.extend(step.extra.iter().cloned());
        let label = format!("{tag}-{}", step.benchmarks.replace(',', "-"));
        let ((r, raw), load) = measured_run(&runs, &label, &devices, || run_db_bench(&a))?;
        let file = runs.join(format!("{label}.report"));
        std::fs::write(&file, raw).map_err(AppError::file(&file))?;
        if step.measured {
            results.extend(r.into_iter().map(|b| (b, speed, load.clone())));
        }
    }
    mounted.unmount()?;
    server.stop()?;
    Ok(results)
}

/// Runs the check (the fills at `fill_speed`, readrandom at `read_speed`:
/// one server and file system, or two when the speeds differ) and writes
/// `dbcheck.csv`/`dbcheck.json`, the raw reports, the servers' stats and
/// each step's load into `out_dir`.
pub fn run(
    opts: &DbCheckOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<DbCheckRow>, AppError> {
    let csv = &opts.measured_csv;
    let runs = opts.out_dir.join("runs");
    std::fs::create_dir_all(&runs).map_err(AppError::file(&runs))?;
    let reads = Step {
        benchmarks: "readrandom",
        extra: vec![
            format!("--threads={READ_THREADS}"),
            "--use_existing_db=true".into(),
            format!("--duration={}", opts.read_seconds),
        ],
        measured: true,
    };
    let results = if opts.fill_speed == opts.read_speed {
        phase(
            opts,
            opts.fill_speed,
            "dbcheck",
            &[fills(true), reads],
            progress,
        )?
    } else {
        let mut r = phase(opts, opts.fill_speed, "dbcheck", &[fills(true)], progress)?;
        // the database readrandom reads, built as the drive's run built it
        r.extend(phase(
            opts,
            opts.read_speed,
            "dbcheck-read",
            &[fills(false), reads],
            progress,
        )?);
        r
    };
    let rows: Vec<DbCheckRow> = ["fillrandom", "overwrite", "readrandom"]
        .iter()
        .filter_map(|w| {
            let (r, speed, load) = results.iter().find(|(r, _, _)| r.benchmark == *w)?;
            let (m_ops, m_p99) = measured(csv, w);
            let scaled = r.ops_per_sec / speed;
            Some(DbCheckRow {
                workload: w.to_string(),
                measured_ops_per_s: m_ops,
                measured_p99_us: m_p99,
                emulated_ops_per_s: r.ops_per_sec,
                emulated_p99_us: r.p99_us,
                speed: *speed,
                scaled_ops_per_s: scaled,
                ratio: m_ops.map(|m| scaled / m),
                load: load.clone(),
            })
        })
        .collect();
    write_rows(&opts.out_dir, &rows)?;
    Ok(rows)
}

fn write_rows(dir: &Path, rows: &[DbCheckRow]) -> Result<(), AppError> {
    let mut csv = String::from(
        "workload,measured_ops_per_s,measured_p99_us,emulated_ops_per_s,emulated_p99_us,speed,scaled_ops_per_s,ratio,cpu_busy_share,cpu_bound,device_reads,device_writes\n",
    );
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_default();
    for r in rows {
        let dev = r.load.as_ref().and_then(|l| l.block.get("device"));
        csv += &format!(
            "{},{},{},{:.2},{},{},{:.1},{},{},{},{},{}\n",
            r.workload,
            opt(r.measured_ops_per_s),
            opt(r.measured_p99_us),
            r.emulated_ops_per_s,
            opt(r.emulated_p99_us),
            r.speed,
            r.scaled_ops_per_s,
            r.ratio.map(|v| format!("{v:.4}")).unwrap_or_default(),
            r.load
                .as_ref()
                .map(|l| format!("{:.4}", l.cpu_busy_share))
                .unwrap_or_default(),
            r.load
                .as_ref()
                .map(|l| l.cpu_bound().to_string())
                .unwrap_or_default(),
            dev.map(|d| d.reads.to_string()).unwrap_or_default(),
            dev.map(|d| d.writes.to_string()).unwrap_or_default(),
        );
    }
    outfiles::write(dir, "dbcheck.csv", csv)?;
    outfiles::write_json(dir, "dbcheck.json", rows).map(|_| ())
}

/// The rows a run wrote to `dir/dbcheck.json`.
pub fn read_rows(dir: &Path) -> Result<Vec<DbCheckRow>, AppError> {
    outfiles::read_json(dir, "dbcheck.json")
}

/// A run's CPU busy share as the tables show it, flagged when the CPU
/// bounded it (zns-apps' `load::CPU_BOUND_BUSY_SHARE`).
pub fn busy_text(load: Option<&RunLoad>) -> String {
    match load {
        None => "—".into(),
        Some(l) if l.cpu_bound() => format!("{:.0} % **CPU-bound**", l.cpu_busy_share * 100.0),
        Some(l) => format!("{:.0} %", l.cpu_busy_share * 100.0),
    }
}

/// The check as a Markdown table.
pub fn markdown(rows: &[DbCheckRow]) -> String {
    let mut s = String::from(
        "| db_bench on F2FS zoned | ZN540 (measured) ops/s | ours ops/s at --speed | ours / speed | ratio | p99 µs measured | p99 µs ours | guest CPU busy |\n|---|---|---|---|---|---|---|---|\n",
    );
    let opt = |v: Option<f64>, d: usize| v.map(|v| format!("{v:.d$}")).unwrap_or("—".into());
    for r in rows {
        s += &format!(
            "| {} | {} | {:.0} (F = {}) | {:.0} | {} | {} | {} | {} |\n",
            r.workload,
            opt(r.measured_ops_per_s, 0),
            r.emulated_ops_per_s,
            r.speed,
            r.scaled_ops_per_s,
            opt(r.ratio, 3),
            opt(r.measured_p99_us, 1),
            opt(r.emulated_p99_us, 1),
            busy_text(r.load.as_ref())
        );
    }
    s += &format!("\nA ratio near 1 means the device bounds the workload and the emulation scales to the drive; far from 1, the host (the guest's CPU, the memtable, the page cache) bounds it at this speed. fillrandom is the calibration of c (in the guest the fills run at F = c, readrandom at F = c / 32: docs/apps.md); a row whose CPU was more than {:.0} % busy is CPU-bound: its rate measures the CPU, not the device.\n", zns_apps::load::CPU_BOUND_BUSY_SHARE * 100.0);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "\
filesystem,workload,run,micros_per_op,ops_per_sec,seconds,mb_per_s,op_lat_p50_us,op_lat_p99_us,op_lat_p99_9_us
f2fs,fillrandom,1,10.12,98813,13156.061,77.3,0.55,44.87,74.18
f2fs-zns,fillrandom,1,10.592,94406,13770.212,73.8,0.54,44.63,80.85
f2fs-zns,readrandom,1,211.677,151163,1800.217,103.2,202.75,613.15,1290.76
f2fs-zns,readrandom,2,214.217,149373,1800.19,103.4,202.50,732.55,1636.11
";

    #[test]
    fn the_drives_rows_are_averaged_per_workload() {
        assert_eq!(measured(CSV, "fillrandom"), (Some(94406.0), Some(44.63)));
        let (ops, p99) = measured(CSV, "readrandom");
        assert_eq!(ops, Some(150268.0));
        assert!((p99.unwrap() - 672.85).abs() < 1e-9);
        assert_eq!(measured(CSV, "overwrite"), (None, None));
    }
}
