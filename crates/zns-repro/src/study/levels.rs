//! The study's integration levels (§4.1.1, its Fig. 1): db_bench's six
//! workloads on F2FS over a block SSD, F2FS zoned and btrfs zoned.

use std::fmt::Write as _;
use std::path::Path;

use zns_apps::dbbench::{run_db_bench, BenchResult};
use zns_apps::mount::FileSystem;
use zns_apps::served::Server;
use zns_apps::AppError;

use super::plan::{
    conventional, counters, io, mount_dir, serve_args, zoned, zoned_targets, Level, LevelPoint,
    Scale, StudyOptions,
};
use zns_apps::host::fs_space;

/// The six workloads of §4.1.1, in the order db_bench runs them.
pub const LEVEL_BENCHMARKS: [&str; 6] = [
    "fillseq",
    "fillrandom",
    "readrandom",
    "readseq",
    "overwrite",
    "updaterandom",
];

/// RocksDB's default LSM sizes divided by `divisor`.
pub(super) fn lsm_args(divisor: u64, sst_bytes: Option<u64>) -> Vec<String> {
    let d = divisor.max(1);
    vec![
        format!("--write_buffer_size={}", (64 << 20) / d),
        format!(
            "--target_file_size_base={}",
            sst_bytes.unwrap_or((64 << 20) / d)
        ),
        format!("--max_bytes_for_level_base={}", (256 << 20) / d),
    ]
}

/// The db_bench invocations of an integration-level run: fillseq and
/// fillrandom each on a fresh database of `level_keys` keys, then on the
/// fillrandom database readrandom (`level_reads` reads), readseq (the whole
/// database, `level_keys` reads, as the study's `--reads` = `--num`: a
/// few hundred keys are the iterator's cold start, a handful of reads at
/// the device's latency, not a scan), overwrite (`level_keys` writes) and
/// updaterandom (`level_reads` read-modify-writes); `--db` comes first.
pub fn level_invocations(scale: &Scale, db: &str) -> Vec<Vec<String>> {
    let common = |benchmarks: &str| -> Vec<String> {
        let mut v: Vec<String> = vec![
            format!("--db={db}"),
            format!("--benchmarks={benchmarks}"),
            format!("--num={}", scale.level_keys),
            "--key_size=16".into(),
            "--value_size=100".into(),
            "--compression_type=none".into(),
            "--use_direct_reads=true".into(),
            "--use_direct_io_for_flush_and_compaction=true".into(),
            "--histogram=1".into(),
            "--progress_reports=false".into(),
        ];
        v.extend(lsm_args(scale.lsm_divisor, None));
        v
    };
    let on_the_database = |benchmarks: &str, reads: u64| {
        let mut v = common(benchmarks);
        v.push("--use_existing_db=1".into());
        v.push(format!("--reads={reads}"));
        v
    };
    vec![
        common("fillseq"),
        common("fillrandom"),
        on_the_database("readrandom", scale.level_reads),
        on_the_database("readseq", scale.level_keys),
        on_the_database("overwrite,updaterandom", scale.level_reads),
    ]
}

pub(super) fn run_level(
    opts: &StudyOptions,
    scale: &Scale,
    level: Level,
    rep: u32,
    work: &Path,
    label: &str,
) -> Result<Vec<LevelPoint>, AppError> {
    let stats = work.join(format!("{label}.serve.json"));
    let server = Server::start(&opts.zns, &serve_args(level.profile(), opts.speed), &stats)?;
    let fs = match level {
        Level::A => FileSystem::F2fs {
            dev: conventional(&server)?,
        },
        Level::C => FileSystem::F2fsZoned {
            meta: conventional(&server)?,
            zoned: zoned(&server)
                .first()
                .ok_or_else(|| io("no zoned namespace"))?
                .path
                .clone(),
        },
        Level::D => FileSystem::BtrfsZoned {
            dev: zoned(&server)
                .first()
                .ok_or_else(|| io("no zoned namespace"))?
                .path
                .clone(),
        },
    };
    fs.make()?;
    let mounted = fs.mount(&mount_dir("level"))?;
    let db = mounted.dir().join("rocksdb").to_string_lossy().into_owned();
    let mut report = String::new();
    let mut results: Vec<BenchResult> = Vec::new();
    let mut outcome = Ok(());
    for args in level_invocations(scale, &db) {
        let _ = writeln!(report, "$ db_bench {}", args.join(" "));
        match run_db_bench(&args) {
            Ok((r, out)) => {
                report += &out;
                results.extend(r);
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    let used = fs_space(mounted.dir()).map(|s| s.1).unwrap_or(0);
    let report_file = work.join(format!("{label}.report"));
    std::fs::write(&report_file, &report)
        .map_err(|e| io(format!("{}: {e}", report_file.display())))?;
    mounted.unmount()?;
    let zoned_names = zoned_targets(&server);
    let served = server.stop()?;
    outcome?;
    let c = counters(&served, &zoned_names);
    Ok(results
        .into_iter()
        .filter(|b| LEVEL_BENCHMARKS.contains(&b.benchmark.as_str()))
        .map(|b| LevelPoint {
            level: level.key().into(),
            rep,
            benchmark: b.benchmark,
            ops_per_s: b.ops_per_sec,
            mb_per_s: b.mb_per_s,
            p50_us: b.p50_us,
            p99_us: b.p99_us,
            p99_9_us: b.p99_9_us,
            counters: c.clone(),
            fs_used_bytes: used,
            report_file: report_file.clone(),
        })
        .collect())
}
