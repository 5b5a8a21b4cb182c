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
use zns_apps::mount::FileSystem;
use zns_apps::outfiles;
use zns_apps::served::Server;
use zns_apps::AppError;

/// How the check runs.
#[derive(Debug, Clone)]
pub struct DbCheckOptions {
    /// `zns serve --speed`.
    pub speed: f64,
    /// Keys written by fillrandom (and overwritten).
    pub keys: u64,
    /// readrandom's duration, seconds (wall clock).
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
    /// Ours at the speed factor (wall clock).
    pub emulated_ops_per_s: f64,
    pub emulated_p99_us: Option<f64>,
    pub speed: f64,
    /// Ours divided by the speed factor: the drive's rate if the device
    /// bounds the workload.
    pub scaled_ops_per_s: f64,
    /// scaled / measured.
    pub ratio: Option<f64>,
}

/// The workloads, as zbdbench ran them: fill and overwrite with one thread,
/// random reads with 32 (its readrandom: 211.7 µs/op at 151 k ops/s).
const READ_THREADS: u32 = 32;

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

/// Runs the check (one server, one file system, three db_bench workloads)
/// and writes `dbcheck.csv`/`dbcheck.json` and the raw reports into
/// `out_dir`.
pub fn run(
    opts: &DbCheckOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<DbCheckRow>, AppError> {
    let csv = &opts.measured_csv;
    let runs = opts.out_dir.join("runs");
    std::fs::create_dir_all(&runs).map_err(AppError::file(&runs))?;
    let target = "zn540-cns";
    let args = vec![
        target.to_string(),
        "--zones".into(),
        opts.zones.to_string(),
        "--speed".into(),
        opts.speed.to_string(),
    ];
    progress(&format!(
        "db_bench check: F2FS zoned on a served {target} at --speed {}",
        opts.speed
    ));
    let server = Server::start(&opts.zns, &args, &runs.join("dbcheck.serve.json"))?;
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
    let fs = FileSystem::F2fsZoned {
        meta: dev(false)?,
        zoned: dev(true)?,
    };
    fs.make()?;
    let mnt = std::env::temp_dir().join(format!("zns-apps-dbcheck-{}", std::process::id()));
    let mounted = fs.mount(&mnt)?;
    let db = format!("--db={}/rocksdb", mounted.dir().display());
    let mut results: Vec<BenchResult> = Vec::new();
    let steps: [(&str, Vec<String>); 2] = [
        ("fillrandom,overwrite", vec!["--threads=1".into()]),
        (
            "readrandom",
            vec![
                format!("--threads={READ_THREADS}"),
                "--use_existing_db=true".into(),
                format!("--duration={}", opts.read_seconds),
            ],
        ),
    ];
    for (benchmarks, extra) in steps {
        progress(&format!("db_bench --benchmarks={benchmarks}"));
        let mut a = vec![db.clone(), format!("--benchmarks={benchmarks}")];
        a.extend(common(opts.keys));
        a.extend(extra);
        let (r, raw) = run_db_bench(&a)?;
        let file = runs.join(format!("dbcheck-{}.report", benchmarks.replace(',', "-")));
        std::fs::write(&file, raw).map_err(AppError::file(&file))?;
        results.extend(r);
    }
    mounted.unmount()?;
    server.stop()?;
    let rows: Vec<DbCheckRow> = ["fillrandom", "overwrite", "readrandom"]
        .iter()
        .filter_map(|w| {
            let r = results.iter().find(|r| r.benchmark == *w)?;
            let (m_ops, m_p99) = measured(csv, w);
            let scaled = r.ops_per_sec / opts.speed;
            Some(DbCheckRow {
                workload: w.to_string(),
                measured_ops_per_s: m_ops,
                measured_p99_us: m_p99,
                emulated_ops_per_s: r.ops_per_sec,
                emulated_p99_us: r.p99_us,
                speed: opts.speed,
                scaled_ops_per_s: scaled,
                ratio: m_ops.map(|m| scaled / m),
            })
        })
        .collect();
    write_rows(&opts.out_dir, &rows)?;
    Ok(rows)
}

fn write_rows(dir: &Path, rows: &[DbCheckRow]) -> Result<(), AppError> {
    let mut csv = String::from(
        "workload,measured_ops_per_s,measured_p99_us,emulated_ops_per_s,emulated_p99_us,speed,scaled_ops_per_s,ratio\n",
    );
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_default();
    for r in rows {
        csv += &format!(
            "{},{},{},{:.2},{},{},{:.1},{}\n",
            r.workload,
            opt(r.measured_ops_per_s),
            opt(r.measured_p99_us),
            r.emulated_ops_per_s,
            opt(r.emulated_p99_us),
            r.speed,
            r.scaled_ops_per_s,
            r.ratio.map(|v| format!("{v:.4}")).unwrap_or_default()
        );
    }
    outfiles::write(dir, "dbcheck.csv", csv)?;
    outfiles::write_json(dir, "dbcheck.json", rows).map(|_| ())
}

/// The rows a run wrote to `dir/dbcheck.json`.
pub fn read_rows(dir: &Path) -> Result<Vec<DbCheckRow>, AppError> {
    outfiles::read_json(dir, "dbcheck.json")
}

/// The check as a Markdown table.
pub fn markdown(rows: &[DbCheckRow]) -> String {
    let mut s = String::from(
        "| db_bench on F2FS zoned | ZN540 (measured) ops/s | ours ops/s at --speed | ours / speed | ratio | p99 µs measured | p99 µs ours |\n|---|---|---|---|---|---|---|\n",
    );
    let opt = |v: Option<f64>, d: usize| v.map(|v| format!("{v:.d$}")).unwrap_or("—".into());
    for r in rows {
        s += &format!(
            "| {} | {} | {:.0} (F = {}) | {:.0} | {} | {} | {} |\n",
            r.workload,
            opt(r.measured_ops_per_s, 0),
            r.emulated_ops_per_s,
            r.speed,
            r.scaled_ops_per_s,
            opt(r.ratio, 3),
            opt(r.measured_p99_us, 1),
            opt(r.emulated_p99_us, 1)
        );
    }
    s += "\nA ratio near 1 means the device bounds the workload and the emulation scales to the drive; far from 1, the host (the guest's CPU, the memtable, the page cache) bounds it at this speed.\n";
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
