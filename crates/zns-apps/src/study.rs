//! The ZNS integration study (zns-integration-study-2022 §3–§4) on emulated
//! drives served by `zns serve`, with real F2FS, btrfs, fio and db_bench:
//!
//! - **integration levels** (Fig. 1, §4.1.1): db_bench's fillseq,
//!   fillrandom, readrandom, readseq, overwrite and updaterandom (16 B keys,
//!   100 B values, no compression, direct I/O) on (a) F2FS on a block SSD
//!   (`sn540`, an FTL with device GC), (c) F2FS zoned with its metadata on
//!   the conventional namespace of `zn540-cns` (the study's 4 GiB + 100 GiB
//!   set-up), (d) RocksDB on a zoned file system — btrfs zoned, since ZenFS
//!   is in no package registry;
//! - **two tenants** (§4.1.3): two zoned namespaces of one drive, tenant A
//!   F2FS with random overwrites (fio), tenant B db_bench fillrandom +
//!   overwrite (100 B keys, 800 B values compressed to 400 B) on btrfs
//!   zoned; B alone against B with A, at the study's low utilization and at
//!   Western Digital's (§4.2): capacity > 80 %, bandwidth > 30 %, measured.
//!
//! Every run is a fresh server and file systems; the raw reports and the
//! server's `--stats` go to `runs/`. docs/zns-study.md gives the method and
//! the scaling.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use zns_device::{NamespaceProfile, Profile};

use crate::dbbench::{run_db_bench, BenchResult};
use crate::fio::FioResult;
use crate::mount::{FileSystem, Mounted};
use crate::outfiles::{self, spread};
use crate::served::{ServedDevice, Server};
use crate::AppError;

/// The two experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Part {
    Levels,
    Tenants,
}

impl std::str::FromStr for Part {
    type Err = String;
    fn from_str(s: &str) -> Result<Part, String> {
        match s {
            "levels" => Ok(Part::Levels),
            "tenants" => Ok(Part::Tenants),
            _ => Err(format!("{s}: expected levels or tenants")),
        }
    }
}

/// An integration level of the study's Fig. 1 ((b), dm-zap, the study
/// could not run either).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Level {
    /// F2FS on a conventional SSD (an FTL with device GC).
    A,
    /// F2FS zoned, metadata on the drive's conventional namespace.
    C,
    /// RocksDB on a zoned file system (btrfs zoned, for ZenFS).
    D,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::A, Level::C, Level::D];

    pub fn key(self) -> &'static str {
        match self {
            Level::A => "a",
            Level::C => "c",
            Level::D => "d",
        }
    }

    pub fn from_key(k: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.key() == k)
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::A => "(a) F2FS on block SSD (sn540)",
            Level::C => "(c) F2FS zoned (zn540-cns)",
            Level::D => "(d) btrfs zoned for ZenFS (zn540-cns)",
        }
    }

    /// The drive served for this level.
    pub fn profile(self) -> &'static str {
        match self {
            Level::A => "sn540",
            Level::C | Level::D => "zn540-cns",
        }
    }
}

/// The drive's utilization during a two-tenant run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Utilization {
    /// The study's: empty file systems, tenant A's working set only.
    Low,
    /// Western Digital's advice (§4.2): both file systems filled first.
    High,
}

impl Utilization {
    pub fn key(self) -> &'static str {
        match self {
            Utilization::Low => "low",
            Utilization::High => "high",
        }
    }
}

/// Tenant B alone, or with tenant A's overwrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tenancy {
    Alone,
    Shared,
}

impl Tenancy {
    pub fn key(self) -> &'static str {
        match self {
            Tenancy::Alone => "alone",
            Tenancy::Shared => "shared",
        }
    }
}

/// How the study is run.
#[derive(Debug, Clone)]
pub struct StudyOptions {
    pub parts: Vec<Part>,
    /// Small keys counts and file systems, one repetition (CI's smoke).
    pub quick: bool,
    pub reps: u32,
    /// `zns serve --speed`.
    pub speed: f64,
    pub out_dir: PathBuf,
    /// The `zns` binary that serves.
    pub zns: PathBuf,
}

/// The sizes of the runs (docs/zns-study.md sets them against the study's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scale {
    /// Keys of the integration-level databases (fillseq, fillrandom,
    /// overwrite: the study's `--num`).
    pub level_keys: u64,
    /// readrandom's and readseq's reads and updaterandom's
    /// read-modify-writes (`--reads`).
    pub level_reads: u64,
    /// RocksDB's sizes (memtable 64 MiB, SST files 64 MiB, L1 256 MiB)
    /// divided by this, so that the small databases flush and compact.
    pub lsm_divisor: u64,
    /// Tenant B's keys (fillrandom, then as many overwrites).
    pub tenant_keys: u64,
    /// The two-tenant drive: zone size and capacity (LBAs of 4 KiB), zones
    /// of tenant A's and tenant B's namespaces, and the conventional
    /// namespace for F2FS's metadata.
    pub zone_lbas: u64,
    pub zone_cap_lbas: u64,
    pub zones_a: u32,
    pub zones_b: u32,
    pub meta_lbas: u64,
    /// Tenant A's hot set (the files it overwrites), as a fraction of the
    /// space its fresh F2FS offers.
    pub hot_fraction: f64,
    /// High utilization: F2FS A filled (cold + hot files) to this fraction
    /// of the space it offers before the measured phase.
    pub high_fill: f64,
    /// High utilization: btrfs B's zones filled to this fraction of their
    /// capacity (btrfs zoned needs free zones for the database's new block
    /// groups: at 92 % db_bench's fill met ENOSPC on 128 zones, at 85 % its
    /// overwrite aborted on 384).
    pub high_fill_b: f64,
    /// Low utilization: tenant A's overwrites are paced (fio `--rate`) to
    /// this share of the drive's peak write bandwidth, as the study's
    /// F2FS tenant loaded the drive lightly; at high utilization they run
    /// unpaced.
    pub low_a_bandwidth: f64,
}

/// The scale of a full run or of `--quick`.
pub fn scale(quick: bool) -> Scale {
    // zones of 4 MiB with 2 MiB capacity (the ZN540: 2048 / 1077 MiB): F2FS
    // keeps 28 sections free for its GC at the study's 10 %
    // over-provisioning, whatever their size, so > 80 % needs hundreds of
    // sections; and a capacity of whole 2 MiB segments (1077 MiB is 538.5
    // of them: a partial segment that F2FS counts as free space it does
    // not have, and fills to a stop)
    let full = Scale {
        level_keys: 100_000,
        level_reads: 1_000,
        lsm_divisor: 16,
        tenant_keys: 40_000,
        zone_lbas: 1024,
        zone_cap_lbas: 512,
        zones_a: 512,
        zones_b: 384,
        meta_lbas: 8192,
        hot_fraction: 0.25,
        high_fill: 0.92,
        high_fill_b: 0.8,
        low_a_bandwidth: 0.05,
    };
    if quick {
        Scale {
            level_keys: 10_000,
            level_reads: 200,
            tenant_keys: 5_000,
            zones_a: 256,
            zones_b: 128,
            ..full
        }
    } else {
        full
    }
}

/// One run of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunSpec {
    Level {
        level: Level,
        rep: u32,
    },
    Tenants {
        util: Utilization,
        tenancy: Tenancy,
        rep: u32,
    },
}

impl RunSpec {
    /// The name of its files under `runs/`.
    pub fn label(&self) -> String {
        match self {
            RunSpec::Level { level, rep } => format!("level-{}-rep{rep}", level.key()),
            RunSpec::Tenants { util, tenancy, rep } => {
                format!("tenants-{}-{}-rep{rep}", util.key(), tenancy.key())
            }
        }
    }

    /// Minutes it takes in the TCG guest at speed 0.01, roughly (for the
    /// guest's time limit).
    fn guest_minutes(&self, quick: bool) -> usize {
        match (self, quick) {
            (RunSpec::Level { .. }, true) => 3,
            (RunSpec::Level { .. }, false) => 15,
            (
                RunSpec::Tenants {
                    util: Utilization::Low,
                    ..
                },
                _,
            ) => 4,
            (RunSpec::Tenants { .. }, true) => 6,
            (RunSpec::Tenants { .. }, false) => 12,
        }
    }
}

/// Every run, in order: repetition by repetition (so that a run cut short
/// still has whole repetitions), the levels interleaved within one, and B
/// alone and B with A next to each other at each utilization, so that a
/// slow spell of the host spreads over what is compared.
pub fn plan(opts: &StudyOptions) -> Vec<RunSpec> {
    let reps = if opts.quick { 1 } else { opts.reps.max(1) };
    let mut runs = Vec::new();
    for rep in 0..reps {
        if opts.parts.contains(&Part::Levels) {
            for level in Level::ALL {
                runs.push(RunSpec::Level { level, rep });
            }
        }
        if opts.parts.contains(&Part::Tenants) {
            for util in [Utilization::Low, Utilization::High] {
                for tenancy in [Tenancy::Alone, Tenancy::Shared] {
                    runs.push(RunSpec::Tenants { util, tenancy, rep });
                }
            }
        }
    }
    runs
}

/// The number of runs `opts` makes.
pub fn run_count(opts: &StudyOptions) -> usize {
    plan(opts).len()
}

/// The guest's time budget in units of two minutes (what
/// `run_repro_in_guest` counts a run as).
pub fn guest_budget_runs(opts: &StudyOptions) -> usize {
    plan(opts)
        .iter()
        .map(|r| r.guest_minutes(opts.quick).div_ceil(2))
        .sum()
}

/// What the served drive did over a run (`zns serve --stats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Device time the server ran, in seconds.
    pub device_s: f64,
    pub read_bytes: u64,
    /// Writes, zone appends and write-zeroes.
    pub write_bytes: u64,
    /// The part of them that went to zoned namespaces (the rest: the
    /// conventional ones, e.g. F2FS's metadata device).
    #[serde(default)]
    pub zoned_write_bytes: u64,
    pub zone_appends: u64,
    pub zone_resets: u64,
    pub discard_bytes: u64,
    /// A conventional namespace with an FTL: flash / host bytes, GC.
    pub ftl_waf: Option<f64>,
    pub ftl_gc_relocated_bytes: Option<u64>,
    pub ftl_gc_victims: Option<u64>,
    pub ftl_erases: Option<u64>,
}

/// The counters in a `zns serve --stats` document, summed over its devices;
/// `zoned` names the served devices that are zoned.
pub fn counters(stats: &Value, zoned: &[String]) -> Counters {
    let mut c = Counters {
        device_s: stats["virtual_ns"].as_f64().unwrap_or(0.0) / 1e9,
        ..Counters::default()
    };
    for dev in stats["served"].as_array().into_iter().flatten() {
        let kinds = &dev["requests"]["by_kind"];
        let k = |name: &str, field: &str| kinds[name][field].as_u64().unwrap_or(0);
        c.read_bytes += k("read", "bytes");
        let written = k("write", "bytes") + k("zone-append", "bytes") + k("write-zeroes", "bytes");
        c.write_bytes += written;
        if dev["name"]
            .as_str()
            .is_some_and(|n| zoned.iter().any(|z| z == n))
        {
            c.zoned_write_bytes += written;
        }
        c.zone_appends += k("zone-append", "requests");
        c.zone_resets += k("zone-reset", "requests") + k("zone-reset-all", "requests");
        c.discard_bytes += k("discard", "bytes");
    }
    let (mut host, mut flash, mut gc, mut victims, mut erases, mut any) = (0, 0, 0, 0, 0, false);
    for dev in stats["devices"]
        .as_object()
        .into_iter()
        .flat_map(|o| o.values())
    {
        for ctrl in dev["controllers"].as_array().into_iter().flatten() {
            for ftl in ctrl["ftl"].as_object().into_iter().flat_map(|o| o.values()) {
                any = true;
                let f = |k: &str| ftl[k].as_u64().unwrap_or(0);
                host += f("host_bytes_written");
                flash += f("flash_bytes_written");
                gc += f("gc_relocated_bytes");
                victims += f("gc_victims");
                erases += f("erases");
            }
        }
    }
    if any {
        c.ftl_waf = Some(if host > 0 {
            flash as f64 / host as f64
        } else {
            0.0
        });
        c.ftl_gc_relocated_bytes = Some(gc);
        c.ftl_gc_victims = Some(victims);
        c.ftl_erases = Some(erases);
    }
    c
}

/// One db_bench benchmark of an integration-level run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LevelPoint {
    /// `a`, `c` or `d`.
    pub level: String,
    pub rep: u32,
    pub benchmark: String,
    pub ops_per_s: f64,
    pub mb_per_s: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p99_9_us: Option<f64>,
    /// The whole run's (every benchmark of it: same in each of its points).
    pub counters: Counters,
    /// What the file system held at the end (statvfs), bytes.
    pub fs_used_bytes: u64,
    pub report_file: PathBuf,
}

/// How full a two-tenant drive is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// The share of the space each fresh file system offered that is used
    /// now (statvfs: what `df` reads).
    pub a_fs: f64,
    pub b_fs: f64,
    /// The share of each namespace's zone capacity written (zone report:
    /// write pointers; F2FS's GC keeps its reserved sections empty).
    pub a_zones: f64,
    pub b_zones: f64,
    /// Both zoned namespaces together.
    pub drive_zones: f64,
}

/// The drive's bandwidth over a measured window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Bandwidth {
    /// The seconds db_bench reports its benchmarks took (wall clock), and
    /// device seconds (× the speed factor).
    pub window_s: f64,
    pub device_window_s: f64,
    /// Bytes the block layer moved on the drive's three devices
    /// (/sys/block/…/stat) per device second.
    pub write_mib_s: f64,
    pub read_mib_s: f64,
    /// Shares of the profile's peak write (flash programs) and read (host
    /// link) bandwidth; `utilization` is their sum.
    pub write_utilization: f64,
    pub read_utilization: f64,
    pub utilization: f64,
}

/// One db_bench benchmark of tenant B in a two-tenant run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TenantPoint {
    /// `low` or `high`.
    pub util: String,
    /// `alone` or `shared`.
    pub tenancy: String,
    pub rep: u32,
    pub benchmark: String,
    pub ops_per_s: f64,
    pub mb_per_s: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p99_9_us: Option<f64>,
    /// At the start of the measured phase (after the fills) and its end.
    pub capacity_start: Capacity,
    pub capacity_end: Capacity,
    /// Over tenant B's whole db_bench run.
    pub bandwidth: Bandwidth,
    /// Tenant A's overwrites meanwhile (shared runs).
    pub tenant_a: Option<FioResult>,
    /// Seconds the fills took, as fio reports them.
    pub fill_s: f64,
    pub counters: Counters,
    pub report_file: PathBuf,
}

/// Everything a study run measured (`points.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StudyPoints {
    pub speed: f64,
    pub quick: bool,
    pub levels: Vec<LevelPoint>,
    pub tenants: Vec<TenantPoint>,
    /// The runs that failed, with why (the others still ran).
    #[serde(default)]
    pub failures: Vec<String>,
}

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
fn lsm_args(divisor: u64, sst_bytes: Option<u64>) -> Vec<String> {
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
/// fillrandom database readrandom and readseq (`level_reads` reads),
/// overwrite (`level_keys` writes) and updaterandom (`level_reads`
/// read-modify-writes); `--db` comes first.
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
    let mut reads = common("readrandom,readseq,overwrite,updaterandom");
    reads.push("--use_existing_db=1".into());
    reads.push(format!("--reads={}", scale.level_reads));
    vec![common("fillseq"), common("fillrandom"), reads]
}

/// Tenant B's db_bench (§4.1.2's workload: 100 B keys, 800 B values
/// compressed to 400 B, SST files of a zone's capacity, direct I/O).
pub fn tenant_b_args(scale: &Scale, db: &str) -> Vec<String> {
    let mut v: Vec<String> = vec![
        format!("--db={db}"),
        "--benchmarks=fillrandom,overwrite".into(),
        format!("--num={}", scale.tenant_keys),
        "--key_size=100".into(),
        "--value_size=800".into(),
        "--compression_ratio=0.5".into(),
        "--use_direct_reads=true".into(),
        "--use_direct_io_for_flush_and_compaction=true".into(),
        "--histogram=1".into(),
        "--progress_reports=false".into(),
    ];
    v.extend(lsm_args(
        scale.lsm_divisor,
        Some(scale.zone_cap_lbas * 4096),
    ));
    v
}

/// The two-tenant drive: `zn540-cns`'s controller and flash with a small
/// conventional namespace (F2FS's metadata) and two zoned namespaces of
/// the scaled zones (tenant A, tenant B), sharing the flash.
pub fn tenant_profile(scale: &Scale) -> Result<Profile, AppError> {
    let base = Profile::builtin("zn540-cns")?;
    let mut conv = None;
    let mut zoned = None;
    for ns in &base.namespaces {
        match ns {
            NamespaceProfile::Conventional(c) if conv.is_none() => conv = Some(c.clone()),
            NamespaceProfile::Zoned(z) if zoned.is_none() => zoned = Some(z.clone()),
            _ => {}
        }
    }
    let (Some(mut conv), Some(zoned)) = (conv, zoned) else {
        return Err(AppError::Invalid(
            "zn540-cns: expected a conventional and a zoned namespace".into(),
        ));
    };
    conv.capacity_lbas = scale.meta_lbas;
    let ns = |zones: u32, unlimited: bool| {
        let mut z = zoned.clone();
        z.zone_count = zones;
        z.zone_size_lbas = scale.zone_lbas;
        z.zone_capacity_lbas = scale.zone_cap_lbas;
        if unlimited {
            // served as "no limit" (docs/serve.md): btrfs zoned in Linux
            // 6.12 fails its transaction commits with EAGAIN (a metadata
            // block group it cannot activate) under the ZN540's 14 active
            // zones once the namespace is 85 % full
            z.max_open_zones = zones;
            z.max_active_zones = zones;
        }
        NamespaceProfile::Zoned(z)
    };
    let mut p = base.clone();
    p.name = "zn540-two-tenants".into();
    p.description = format!(
        "zn540-cns's controller and flash: a {} MiB conventional namespace (F2FS metadata) and two zoned namespaces of {} and {} zones of {} MiB ({} MiB capacity), tenants A and B (no active-zone limit), sharing the flash",
        (scale.meta_lbas * 4096) >> 20,
        scale.zones_a,
        scale.zones_b,
        (scale.zone_lbas * 4096) >> 20,
        (scale.zone_cap_lbas * 4096) >> 20,
    );
    p.namespaces = vec![
        NamespaceProfile::Conventional(conv),
        ns(scale.zones_a, false),
        ns(scale.zones_b, true),
    ];
    // (parsed again: the timing model takes the zone geometry from it)
    Ok(Profile::from_toml(&p.to_toml(), "zn540-two-tenants")?)
}

/// The profile's peak write bandwidth (every die programming) and read
/// bandwidth (the host link), in MiB/s.
pub fn peak_mib_s(p: &Profile) -> (f64, f64) {
    let t = &p.timing;
    let write = t.total_dies() as f64 * t.program_unit_bytes() as f64 / t.program_ns as f64 * 1e9
        / 1048576.0;
    (write, t.host_link_read_mibps as f64)
}

/// `(written, capacity)` sectors of the sequential zones in a `blkzone
/// report`: a full zone counts its capacity, others their write pointer
/// (relative to the zone start, as blkzone prints it).
pub fn zone_fill(report: &str) -> Option<(u64, u64)> {
    let hex = |line: &str, key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        let word = rest.trim_start().split([',', ' ']).next()?;
        u64::from_str_radix(word.trim_start_matches("0x"), 16).ok()
    };
    let (mut written, mut cap, mut any) = (0u64, 0u64, false);
    for line in report.lines().filter(|l| l.contains("zcond:")) {
        if line.contains("CONVENTIONAL") {
            continue;
        }
        let c = hex(line, "cap ")?;
        let wp = hex(line, "wptr ")?;
        let cond = line[line.find("zcond:")? + 6..].trim_start();
        let full = cond.starts_with("14");
        written += if full { c } else { wp.min(c) };
        cap += c;
        any = true;
    }
    any.then_some((written, cap))
}

/// Sectors read and written in a `/sys/block/NAME/stat` line.
pub fn block_stat_sectors(text: &str) -> Option<(u64, u64)> {
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    Some((*f.get(2)?, *f.get(6)?))
}

fn sectors_of(dev: &str) -> Result<(u64, u64), AppError> {
    let name = Path::new(dev)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = format!("/sys/block/{name}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| AppError::Io(format!("{path}: {e}")))?;
    block_stat_sectors(&text).ok_or_else(|| AppError::Io(format!("{path}: unexpected: {text}")))
}

/// (size, used, available) bytes of the file system at `dir`, as `df`.
fn fs_space(dir: &Path) -> Result<(u64, u64, u64), AppError> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| AppError::Io(format!("{}: {e}", dir.display())))?;
    // SAFETY: statvfs writes into the zeroed struct we own; `c` is a valid
    // NUL-terminated path.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(AppError::Io(format!(
            "statvfs {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        )));
    }
    let f = s.f_frsize as u64;
    let size = s.f_blocks as u64 * f;
    let used = (s.f_blocks as u64).saturating_sub(s.f_bfree as u64) * f;
    Ok((size, used, s.f_bavail as u64 * f))
}

fn zones_of(dev: &str) -> Result<(u64, u64), AppError> {
    let out = crate::run("blkzone", &["report", dev], &[])?;
    zone_fill(&out).ok_or_else(|| AppError::Report {
        program: "blkzone".into(),
        what: format!("no zones in its report of {dev}"),
    })
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn io(e: impl std::fmt::Display) -> AppError {
    AppError::Io(e.to_string())
}

/// A mount point of this process (off the work directory, which may be a
/// shared folder in the guest).
fn mount_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zns-study-{}-{name}", std::process::id()))
}

/// Runs the study; `progress` gets a line per run.
pub fn run(opts: &StudyOptions, progress: &mut dyn FnMut(&str)) -> Result<StudyPoints, AppError> {
    let work = opts.out_dir.join("runs");
    std::fs::create_dir_all(&work).map_err(AppError::file(&work))?;
    let scale = scale(opts.quick);
    let profile = tenant_profile(&scale)?;
    let tenant_toml = work.join("two-tenants.toml");
    if opts.parts.contains(&Part::Tenants) {
        std::fs::write(&tenant_toml, profile.to_toml()).map_err(AppError::file(&tenant_toml))?;
    }
    let runs = plan(opts);
    let total = runs.len();
    let mut points = StudyPoints {
        speed: opts.speed,
        quick: opts.quick,
        ..StudyPoints::default()
    };
    for (i, spec) in runs.into_iter().enumerate() {
        let label = spec.label();
        match spec {
            RunSpec::Level { level, rep } => {
                progress(&format!(
                    "[{}/{total}] integration level {}, rep {rep}",
                    i + 1,
                    level.name()
                ));
                match run_level(opts, &scale, level, rep, &work, &label) {
                    Ok(p) => points.levels.extend(p),
                    Err(e) => {
                        let e = format!("{label}: {e}");
                        progress(&format!("  FAILED {e}"));
                        points.failures.push(e);
                    }
                }
            }
            RunSpec::Tenants { util, tenancy, rep } => {
                progress(&format!(
                    "[{}/{total}] two tenants, {} utilization, B {}, rep {rep}",
                    i + 1,
                    util.key(),
                    match tenancy {
                        Tenancy::Alone => "alone",
                        Tenancy::Shared => "with A's overwrites",
                    }
                ));
                let r = run_tenants(
                    opts,
                    &scale,
                    &profile,
                    &tenant_toml,
                    (util, tenancy, rep),
                    &work,
                    &label,
                );
                match r {
                    Ok(p) => {
                        progress(&tenant_line(&p));
                        points.tenants.extend(p);
                    }
                    Err(e) => {
                        let e = format!("{label}: {e}");
                        progress(&format!("  FAILED {e}"));
                        points.failures.push(e);
                    }
                }
            }
        }
        // (what has run so far, for a run cut short; the caller writes the
        // whole set at the end)
        if let Ok(text) = serde_json::to_string_pretty(&points) {
            let _ = std::fs::write(opts.out_dir.join("points.json"), text);
        }
    }
    Ok(points)
}

/// A line of what a two-tenant run reached.
fn tenant_line(points: &[TenantPoint]) -> String {
    let Some(p) = points.first() else {
        return String::new();
    };
    let ops: Vec<String> = points
        .iter()
        .map(|p| format!("{} {:.0} ops/s", p.benchmark, p.ops_per_s))
        .collect();
    format!(
        "  {}; drive zones {:.0} % written (A {:.0} %, B {:.0} %), bandwidth {:.0} % ({:.1} MiB/s written per device second)",
        ops.join(", "),
        p.capacity_start.drive_zones * 100.0,
        p.capacity_start.a_zones * 100.0,
        p.capacity_start.b_zones * 100.0,
        p.bandwidth.utilization * 100.0,
        p.bandwidth.write_mib_s
    )
}

fn serve_args(target: &str, speed: f64) -> Vec<String> {
    vec![target.to_string(), "--speed".into(), speed.to_string()]
}

fn conventional(server: &Server) -> Result<String, AppError> {
    server
        .devices
        .iter()
        .find(|d| !d.zoned)
        .map(|d| d.path.clone())
        .ok_or_else(|| io("the drive has no conventional namespace"))
}

fn zoned_targets(server: &Server) -> Vec<String> {
    zoned(server).iter().map(|d| d.target.clone()).collect()
}

fn zoned(server: &Server) -> Vec<&ServedDevice> {
    server.devices.iter().filter(|d| d.zoned).collect()
}

fn run_level(
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

/// A fio run that writes `bytes` into `nrfiles` files named
/// `NAME.N` in `dir`, sequentially (a fill, or a hot set's layout).
/// Writes `nrfiles` files of `bytes` in all into `dir` with fio; the seconds
/// fio reports the job ran.
fn fio_write_files(dir: &Path, name: &str, nrfiles: u32, bytes: u64) -> Result<f64, AppError> {
    let mib = (bytes >> 20).max(nrfiles as u64);
    let out = crate::run(
        "fio",
        &[
            &format!("--name={name}"),
            &format!("--directory={}", dir.display()),
            &format!("--filename_format={name}.$filenum"),
            &format!("--nrfiles={nrfiles}"),
            &format!("--size={mib}M"),
            "--rw=write",
            "--bs=512k",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=8",
            "--end_fsync=1",
            "--eta=never",
            "--output-format=json",
        ],
        &[],
    )?;
    let start = out.find('{').unwrap_or(0);
    let doc: serde_json::Value =
        serde_json::from_str(&out[start..]).map_err(|e| AppError::Report {
            program: "fio".into(),
            what: format!("its JSON report: {e}"),
        })?;
    let runtime_ms = doc["jobs"][0]["job_runtime"].as_f64().unwrap_or(0.0);
    Ok(runtime_ms / 1000.0)
}

/// Tenant A's hot set: four files of this many MiB each.
const HOT_FILES: u32 = 4;

/// Tenant A's overwrites: random 64 KiB writes over its hot files until
/// stopped (SIGINT), fsync every 64 (F2FS zoned turns direct writes into
/// buffered ones), at most `rate_kib_s` (wall clock) when given; JSON
/// report on stdout.
fn spawn_tenant_a(
    dir: &Path,
    hot_mib: u64,
    rate_kib_s: Option<u64>,
    out: &Path,
) -> Result<Child, AppError> {
    let file = std::fs::File::create(out).map_err(|e| io(format!("{}: {e}", out.display())))?;
    Command::new("fio")
        .args(rate_kib_s.map(|r| format!("--rate={}k", r.max(1))))
        .args([
            "--name=hot",
            &format!("--directory={}", dir.display()),
            "--filename_format=hot.$filenum",
            &format!("--nrfiles={HOT_FILES}"),
            &format!("--size={hot_mib}M"),
            "--rw=randwrite",
            "--bs=64k",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=16",
            "--fsync=64",
            "--time_based",
            "--runtime=86400",
            "--output-format=json",
        ])
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| AppError::Spawn {
            program: "fio".into(),
            source,
        })
}

/// Stops tenant A (SIGINT: fio reports what it did) and reads its report.
fn stop_tenant_a(mut child: Child, out: &Path) -> Result<FioResult, AppError> {
    // SAFETY: kill signals our own child, not yet waited for.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let _ = child.wait();
    let text = std::fs::read_to_string(out).map_err(|e| io(format!("{}: {e}", out.display())))?;
    let start = text.find('{').ok_or_else(|| AppError::Report {
        program: "fio (tenant A)".into(),
        what: format!("no JSON report in {}", out.display()),
    })?;
    let doc: Value = serde_json::from_str(&text[start..]).map_err(|e| AppError::Report {
        program: "fio (tenant A)".into(),
        what: format!("{}: {e}", out.display()),
    })?;
    crate::fio::summarize(&doc).map_err(|what| AppError::Report {
        program: "fio (tenant A)".into(),
        what,
    })
}

struct Tenants {
    meta: String,
    a: String,
    b: String,
    mnt_a: PathBuf,
    mnt_b: PathBuf,
    /// (used, available) bytes of each fresh file system.
    fresh_a: (u64, u64),
    fresh_b: (u64, u64),
}

impl Tenants {
    fn capacity(&self) -> Result<Capacity, AppError> {
        let fs = |dir: &Path, fresh: (u64, u64)| -> Result<f64, AppError> {
            let (_, used, _) = fs_space(dir)?;
            Ok(ratio(used.saturating_sub(fresh.0), fresh.1))
        };
        let (wa, ca) = zones_of(&self.a)?;
        let (wb, cb) = zones_of(&self.b)?;
        Ok(Capacity {
            a_fs: fs(&self.mnt_a, self.fresh_a)?,
            b_fs: fs(&self.mnt_b, self.fresh_b)?,
            a_zones: ratio(wa, ca),
            b_zones: ratio(wb, cb),
            drive_zones: ratio(wa + wb, ca + cb),
        })
    }

    fn sectors(&self) -> Result<(u64, u64), AppError> {
        let mut sum = (0, 0);
        for d in [&self.meta, &self.a, &self.b] {
            let (r, w) = sectors_of(d)?;
            sum.0 += r;
            sum.1 += w;
        }
        Ok(sum)
    }
}

fn run_tenants(
    opts: &StudyOptions,
    scale: &Scale,
    profile: &Profile,
    profile_file: &Path,
    (util, tenancy, rep): (Utilization, Tenancy, u32),
    work: &Path,
    label: &str,
) -> Result<Vec<TenantPoint>, AppError> {
    let stats = work.join(format!("{label}.serve.json"));
    let server = Server::start(
        &opts.zns,
        &serve_args(&profile_file.to_string_lossy(), opts.speed),
        &stats,
    )?;
    let meta = conventional(&server)?;
    let z = zoned(&server);
    if z.len() != 2 {
        return Err(io(format!(
            "the two-tenant drive served {} zoned namespaces, not 2",
            z.len()
        )));
    }
    let (a, b) = (z[0].path.clone(), z[1].path.clone());
    let fs_a = FileSystem::F2fsZoned {
        meta: meta.clone(),
        zoned: a.clone(),
    };
    let fs_b = FileSystem::BtrfsZoned { dev: b.clone() };
    fs_a.make()?;
    fs_b.make()?;
    let mounted_a = fs_a.mount(&mount_dir("a"))?;
    let mounted_b = fs_b.mount(&mount_dir("b"))?;
    let space = |m: &Mounted| fs_space(m.dir()).map(|(_, used, avail)| (used, avail));
    let t = Tenants {
        meta,
        a,
        b,
        mnt_a: mounted_a.dir().to_path_buf(),
        mnt_b: mounted_b.dir().to_path_buf(),
        fresh_a: space(&mounted_a)?,
        fresh_b: space(&mounted_b)?,
    };
    let outcome = tenants_measure(opts, scale, profile, &t, (util, tenancy), work, label);
    mounted_a.unmount()?;
    mounted_b.unmount()?;
    let zoned_names = zoned_targets(&server);
    let served = server.stop()?;
    let (mut points, report_file) = outcome?;
    let c = counters(&served, &zoned_names);
    for p in &mut points {
        p.rep = rep;
        p.counters = c.clone();
        p.report_file = report_file.clone();
    }
    Ok(points)
}

/// The fills, the measured phase and its figures (the rest is filled in
/// by the caller); the db_bench report file.
fn tenants_measure(
    opts: &StudyOptions,
    scale: &Scale,
    profile: &Profile,
    t: &Tenants,
    (util, tenancy): (Utilization, Tenancy),
    work: &Path,
    label: &str,
) -> Result<(Vec<TenantPoint>, PathBuf), AppError> {
    // the fills' duration as fio reports it (no clock read here)
    let mut fill_s = 0.0;
    let offered_a = t.fresh_a.1;
    let hot = (offered_a as f64 * scale.hot_fraction) as u64;
    let hot_mib = (hot >> 20) / HOT_FILES as u64;
    if util == Utilization::High {
        // cold files to the fill target, less the hot set laid out below
        let cold_a = (offered_a as f64 * scale.high_fill) as u64 - hot;
        fill_s += fio_write_files(&t.mnt_a, "cold", 8, cold_a)?;
        let cap_b = scale.zones_b as u64 * scale.zone_cap_lbas * 4096;
        let (written_b, _) = zones_of(&t.b)?;
        let cold_b = ((cap_b as f64 * scale.high_fill_b) as u64).saturating_sub(written_b * 512);
        fill_s += fio_write_files(&t.mnt_b, "cold", 8, cold_b)?;
    }
    fill_s += fio_write_files(
        &t.mnt_a,
        "hot",
        HOT_FILES,
        hot_mib * HOT_FILES as u64 * 1048576,
    )?;
    let capacity_start = t.capacity()?;
    let fio_out = work.join(format!("{label}.tenant-a.json"));
    let before = t.sectors()?;
    let tenant_a = match tenancy {
        Tenancy::Shared => {
            let (peak_w, _) = peak_mib_s(profile);
            let rate = (util == Utilization::Low)
                .then_some((scale.low_a_bandwidth * peak_w * 1024.0 * opts.speed) as u64);
            Some(spawn_tenant_a(&t.mnt_a, hot_mib, rate, &fio_out)?)
        }
        Tenancy::Alone => None,
    };
    let db = t.mnt_b.join("rocksdb").to_string_lossy().into_owned();
    let args = tenant_b_args(scale, &db);
    let b = run_db_bench(&args);
    let after = t.sectors()?;
    let tenant_a = match tenant_a {
        Some(child) => Some(stop_tenant_a(child, &fio_out)?),
        None => None,
    };
    let (results, out) = b?;
    // the window is what db_bench reports its benchmarks took (wall clock)
    let window_s: f64 = results.iter().filter_map(|r| r.seconds).sum();
    let report_file = work.join(format!("{label}.report"));
    std::fs::write(
        &report_file,
        format!("$ db_bench {}\n{out}", args.join(" ")),
    )
    .map_err(|e| io(format!("{}: {e}", report_file.display())))?;
    let capacity_end = t.capacity()?;
    let (peak_w, peak_r) = peak_mib_s(profile);
    let device_window_s = window_s * opts.speed;
    let per_s = |sectors: u64| sectors as f64 * 512.0 / 1048576.0 / device_window_s.max(1e-9);
    let write_mib_s = per_s(after.1.saturating_sub(before.1));
    let read_mib_s = per_s(after.0.saturating_sub(before.0));
    let bandwidth = Bandwidth {
        window_s,
        device_window_s,
        write_mib_s,
        read_mib_s,
        write_utilization: write_mib_s / peak_w,
        read_utilization: read_mib_s / peak_r,
        utilization: write_mib_s / peak_w + read_mib_s / peak_r,
    };
    let points = results
        .into_iter()
        .filter(|r| r.benchmark == "fillrandom" || r.benchmark == "overwrite")
        .map(|r| TenantPoint {
            util: util.key().into(),
            tenancy: tenancy.key().into(),
            rep: 0,
            benchmark: r.benchmark,
            ops_per_s: r.ops_per_sec,
            mb_per_s: r.mb_per_s,
            p50_us: r.p50_us,
            p99_us: r.p99_us,
            p99_9_us: r.p99_9_us,
            capacity_start,
            capacity_end,
            bandwidth,
            tenant_a,
            fill_s,
            counters: Counters::default(),
            report_file: PathBuf::new(),
        })
        .collect();
    Ok((points, report_file))
}

// ---------------------------------------------------------------- outputs

/// The points a run wrote to `dir/points.json`.
pub fn read_points(dir: &Path) -> Result<StudyPoints, AppError> {
    outfiles::read_json(dir, "points.json")
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_default()
}

/// The integration-level points as CSV.
pub fn levels_csv(points: &[LevelPoint]) -> String {
    let mut s = String::from(
        "level,rep,benchmark,ops_per_s,mb_per_s,p50_us,p99_us,p99_9_us,device_s,read_bytes,write_bytes,zoned_write_bytes,zone_resets,zone_appends,discard_bytes,ftl_waf,ftl_gc_relocated_bytes,ftl_gc_victims,fs_used_bytes,report\n",
    );
    for p in points {
        let c = &p.counters;
        let _ = writeln!(
            s,
            "{},{},{},{:.1},{},{},{},{},{:.3},{},{},{},{},{},{},{},{},{},{},{}",
            p.level,
            p.rep,
            p.benchmark,
            p.ops_per_s,
            opt(p.mb_per_s, 2),
            opt(p.p50_us, 2),
            opt(p.p99_us, 2),
            opt(p.p99_9_us, 2),
            c.device_s,
            c.read_bytes,
            c.write_bytes,
            c.zoned_write_bytes,
            c.zone_resets,
            c.zone_appends,
            c.discard_bytes,
            opt(c.ftl_waf, 4),
            c.ftl_gc_relocated_bytes
                .map(|v| v.to_string())
                .unwrap_or_default(),
            c.ftl_gc_victims.map(|v| v.to_string()).unwrap_or_default(),
            p.fs_used_bytes,
            p.report_file.display()
        );
    }
    s
}

/// The two-tenant points as CSV.
pub fn tenants_csv(points: &[TenantPoint]) -> String {
    let mut s = String::from(
        "util,tenancy,rep,benchmark,ops_per_s,mb_per_s,p50_us,p99_us,p99_9_us,a_fs,b_fs,a_zones,b_zones,drive_zones,drive_zones_end,window_s,write_mib_s,read_mib_s,bandwidth_utilization,tenant_a_write_mib_s_wall,fill_s,device_s,write_bytes,zone_resets,report\n",
    );
    for p in points {
        let c = &p.capacity_start;
        let _ = writeln!(
            s,
            "{},{},{},{},{:.1},{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.1},{:.3},{:.3},{:.4},{},{:.1},{:.3},{},{},{}",
            p.util,
            p.tenancy,
            p.rep,
            p.benchmark,
            p.ops_per_s,
            opt(p.mb_per_s, 2),
            opt(p.p50_us, 2),
            opt(p.p99_us, 2),
            opt(p.p99_9_us, 2),
            c.a_fs,
            c.b_fs,
            c.a_zones,
            c.b_zones,
            c.drive_zones,
            p.capacity_end.drive_zones,
            p.bandwidth.window_s,
            p.bandwidth.write_mib_s,
            p.bandwidth.read_mib_s,
            p.bandwidth.utilization,
            opt(p.tenant_a.map(|f| f.write_mib_per_s), 3),
            p.fill_s,
            p.counters.device_s,
            p.counters.write_bytes,
            p.counters.zone_resets,
            p.report_file.display()
        );
    }
    s
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.collect();
    spread(&v).map(|s| s.0)
}

/// A workload's figures under one configuration, over its repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct Aggregate {
    /// The configuration (`a`, `c`, `d`; `low/alone`, …).
    pub config: String,
    pub benchmark: String,
    pub reps: usize,
    pub ops_per_s: f64,
    pub ops_min: f64,
    pub ops_max: f64,
    pub mb_per_s: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p99_9_us: Option<f64>,
}

fn aggregate<'a>(
    rows: impl Iterator<Item = (String, &'a str, f64, [Option<f64>; 4])>,
) -> Vec<Aggregate> {
    type Row = (f64, [Option<f64>; 4]);
    let mut groups: BTreeMap<(String, String), Vec<Row>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for (config, bench, ops, extra) in rows {
        let key = (config, bench.to_string());
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push((ops, extra));
    }
    order
        .into_iter()
        .filter_map(|key| {
            let rows = &groups[&key];
            let ops: Vec<f64> = rows.iter().map(|r| r.0).collect();
            let (m, lo, hi) = spread(&ops)?;
            let col = |i: usize| mean(rows.iter().filter_map(|r| r.1[i]));
            Some(Aggregate {
                config: key.0,
                benchmark: key.1,
                reps: rows.len(),
                ops_per_s: m,
                ops_min: lo,
                ops_max: hi,
                mb_per_s: col(0),
                p50_us: col(1),
                p99_us: col(2),
                p99_9_us: col(3),
            })
        })
        .collect()
}

/// Each (level, workload) over its repetitions.
pub fn level_aggregates(points: &[LevelPoint]) -> Vec<Aggregate> {
    let mut sorted: Vec<&LevelPoint> = points.iter().collect();
    let pos = |b: &str| LEVEL_BENCHMARKS.iter().position(|x| *x == b);
    sorted.sort_by_key(|p| (p.level.clone(), pos(&p.benchmark)));
    aggregate(sorted.into_iter().map(|p| {
        (
            p.level.clone(),
            p.benchmark.as_str(),
            p.ops_per_s,
            [p.mb_per_s, p.p50_us, p.p99_us, p.p99_9_us],
        )
    }))
}

/// Each (utilization/tenancy, benchmark) of tenant B over its repetitions.
pub fn tenant_aggregates(points: &[TenantPoint]) -> Vec<Aggregate> {
    aggregate(points.iter().map(|p| {
        (
            format!("{}/{}", p.util, p.tenancy),
            p.benchmark.as_str(),
            p.ops_per_s,
            [p.mb_per_s, p.p50_us, p.p99_us, p.p99_9_us],
        )
    }))
}

fn find<'a>(aggs: &'a [Aggregate], config: &str, bench: &str) -> Option<&'a Aggregate> {
    aggs.iter()
        .find(|a| a.config == config && a.benchmark == bench)
}

/// One finding of the study beside ours.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    pub what: String,
    pub study: String,
    pub ours: Option<f64>,
    /// The direction and whether it agrees, or why there is no number.
    pub note: String,
}

/// Whether two configurations' ranges over their repetitions overlap
/// (then their difference is within the runs' own spread).
fn overlap(x: &Aggregate, y: &Aggregate) -> bool {
    x.reps > 1 && y.reps > 1 && x.ops_min <= y.ops_max && y.ops_min <= x.ops_max
}

fn with_spread(note: String, x: Option<&Aggregate>, y: Option<&Aggregate>) -> String {
    match (x, y) {
        (Some(x), Some(y)) if overlap(x, y) => {
            format!("{note}; within the repetitions' spread (their min–max ranges overlap)")
        }
        _ => note,
    }
}

/// Within this much of each other, two throughputs are "little to no
/// difference" (the study's words, which give no number).
pub const LITTLE_DIFFERENCE: f64 = 0.10;

/// A ratio of throughputs told in words: `x` (what is compared) against
/// `y` (the reference).
fn ratio_note(r: Option<f64>, x: &str, y: &str, study_expects_little: bool) -> String {
    let Some(r) = r else {
        return "not run".into();
    };
    let pct = (r - 1.0) * 100.0;
    let dir = if pct >= 0.0 { "faster" } else { "slower" };
    let little = (r - 1.0).abs() <= LITTLE_DIFFERENCE;
    let verdict = match (little, study_expects_little) {
        (true, true) => "little to no difference, as the study found",
        (false, true) => "a difference, unlike the study",
        (true, false) => "little to no difference: the expected effect did not show",
        (false, false) => "a difference, as Western Digital's advice expects",
    };
    format!(
        "{x} {:.1} % {dir} than {y}: {verdict} (±{:.0} % counts as little)",
        pct.abs(),
        LITTLE_DIFFERENCE * 100.0
    )
}

/// The study's findings (§4.2) beside ours, and the utilization reached
/// against Western Digital's advice.
pub fn summary(points: &StudyPoints) -> Vec<SummaryRow> {
    let mut rows = Vec::new();
    let lv = level_aggregates(&points.levels);
    for bench in LEVEL_BENCHMARKS {
        let base_agg = find(&lv, "a", bench);
        let base = base_agg.map(|a| a.ops_per_s);
        for (lvl, name) in [("c", "(c) F2FS zoned"), ("d", "(d) btrfs zoned")] {
            let x = find(&lv, lvl, bench);
            let r = match (x, base) {
                (Some(x), Some(b)) if b > 0.0 => Some(x.ops_per_s / b),
                _ => None,
            };
            rows.push(SummaryRow {
                what: format!("{bench}: {name} / (a) F2FS on block SSD, ops/s"),
                study: "little to no difference".into(),
                ours: r,
                note: with_spread(ratio_note(r, name, "(a)", true), x, base_agg),
            });
        }
    }
    let waf = mean(
        points
            .levels
            .iter()
            .filter(|p| p.level == "a")
            .filter_map(|p| p.counters.ftl_waf),
    );
    if !points.levels.is_empty() {
        let gc = mean(
            points
                .levels
                .iter()
                .filter(|p| p.level == "a")
                .filter_map(|p| p.counters.ftl_gc_relocated_bytes.map(|b| b as f64)),
        );
        rows.push(SummaryRow {
            what: "(a) the SSD's FTL write amplification over a run".into(),
            study: "not measured (§4.2: an empty drive does little GC)".into(),
            ours: waf,
            note: match gc {
                Some(g) if g > 0.0 => format!("GC relocated {:.1} MiB", g / 1048576.0),
                Some(_) => "no device GC: the drive stays nearly empty".into(),
                None => "not run".into(),
            },
        });
    }
    let tv = tenant_aggregates(&points.tenants);
    for util in ["low", "high"] {
        for bench in ["fillrandom", "overwrite"] {
            let alone = find(&tv, &format!("{util}/alone"), bench);
            let shared = find(&tv, &format!("{util}/shared"), bench);
            let r = match (shared, alone) {
                (Some(s), Some(a)) if a.ops_per_s > 0.0 => Some(s.ops_per_s / a.ops_per_s),
                _ => None,
            };
            let (study, expects_little) = if util == "low" {
                ("very similar (little to no difference)", true)
            } else {
                (
                    "not evaluated; expected: A's traffic slows B (§4.2 advice)",
                    false,
                )
            };
            rows.push(SummaryRow {
                what: format!("two tenants, {util} utilization: B {bench} with A / B alone, ops/s"),
                study: study.into(),
                ours: r,
                note: with_spread(
                    ratio_note(r, "B with A", "B alone", expects_little),
                    shared,
                    alone,
                ),
            });
            let p99 = match (shared.and_then(|s| s.p99_us), alone.and_then(|a| a.p99_us)) {
                (Some(s), Some(a)) if a > 0.0 => Some(s / a),
                _ => None,
            };
            rows.push(SummaryRow {
                what: format!("two tenants, {util} utilization: B {bench} P99 with A / alone"),
                study: "not reported".into(),
                ours: p99,
                note: p99.map_or("not run".into(), |r| {
                    format!(
                        "P99 {:.1} % {} with A",
                        (r - 1.0).abs() * 100.0,
                        if r >= 1.0 { "higher" } else { "lower" }
                    )
                }),
            });
        }
        let alone: Vec<&TenantPoint> = points
            .tenants
            .iter()
            .filter(|p| p.util == util && p.tenancy == "alone")
            .collect();
        let shared: Vec<&TenantPoint> = points
            .tenants
            .iter()
            .filter(|p| p.util == util && p.tenancy == "shared")
            .collect();
        if alone.is_empty() && shared.is_empty() {
            continue;
        }
        let both = || alone.iter().chain(shared.iter());
        let cap = mean(both().map(|p| p.capacity_start.drive_zones));
        let fs_a = mean(both().map(|p| p.capacity_start.a_fs));
        let bw = mean(shared.iter().map(|p| p.bandwidth.utilization));
        let advice = |v: Option<f64>, min: f64| match v {
            None => "not run".to_string(),
            Some(v) if v > min => format!("{:.0} %: above {:.0} %", v * 100.0, min * 100.0),
            Some(v) => format!("{:.0} %: below {:.0} %", v * 100.0, min * 100.0),
        };
        rows.push(SummaryRow {
            what: format!(
                "{util} utilization: capacity, the drive's zones written (F2FS A: {} of its free space)",
                fs_a.map_or("—".into(), |v| format!("{:.0} %", v * 100.0))
            ),
            study: "WD: > 50 % (preferably 80 %+); the study's runs were far below".into(),
            ours: cap,
            note: advice(cap, 0.8),
        });
        rows.push(SummaryRow {
            what: format!("{util} utilization: bandwidth while B runs with A (share of peak)"),
            study: "WD: > 30 % of the device bandwidth".into(),
            ours: bw,
            note: advice(bw, 0.3),
        });
    }
    rows
}

/// The summary as a Markdown table.
pub fn summary_markdown(rows: &[SummaryRow]) -> String {
    let mut s = String::from("| measure | study | ours | note |\n|---|---|---|---|\n");
    for r in rows {
        let ours = r.ours.map_or("—".to_string(), |v| format!("{v:.3}"));
        let _ = writeln!(s, "| {} | {} | {ours} | {} |", r.what, r.study, r.note);
    }
    s
}

/// The absolute figures (mean over repetitions) as Markdown tables.
pub fn figures_markdown(points: &StudyPoints) -> String {
    let mut s = String::new();
    let table = |s: &mut String, title: &str, aggs: &[Aggregate]| {
        if aggs.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "\n{title}\n\n| config | workload | reps | ops/s (min–max) | MB/s | P50 µs | P99 µs | P99.9 µs |\n|---|---|---|---|---|---|---|---|"
        );
        for a in aggs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.0} ({:.0}–{:.0}) | {} | {} | {} | {} |",
                a.config,
                a.benchmark,
                a.reps,
                a.ops_per_s,
                a.ops_min,
                a.ops_max,
                opt(a.mb_per_s, 1),
                opt(a.p50_us, 1),
                opt(a.p99_us, 1),
                opt(a.p99_9_us, 1)
            );
        }
    };
    if !points.failures.is_empty() {
        let _ = writeln!(s, "\nFailed runs (their points are missing):\n");
        for f in &points.failures {
            let first = f.lines().next().unwrap_or_default();
            let _ = writeln!(s, "- {first}");
        }
    }
    table(
        &mut s,
        "Integration levels (db_bench, wall clock at the run's speed):",
        &level_aggregates(&points.levels),
    );
    if !points.levels.is_empty() {
        let _ = writeln!(
            s,
            "\nServed drives per run (mean over repetitions):\n\n| level | device s | read MiB | written MiB | of which to zones | zone resets | zone appends | FTL WAF | FTL GC MiB |\n|---|---|---|---|---|---|---|---|---|"
        );
        for level in Level::ALL {
            // one entry per run (every benchmark of a run has its counters)
            let runs: Vec<&Counters> = {
                let mut seen = Vec::new();
                let mut v = Vec::new();
                for p in points.levels.iter().filter(|p| p.level == level.key()) {
                    if !seen.contains(&p.rep) {
                        seen.push(p.rep);
                        v.push(&p.counters);
                    }
                }
                v
            };
            if runs.is_empty() {
                continue;
            }
            let m = |f: &dyn Fn(&Counters) -> f64| mean(runs.iter().map(|c| f(c))).unwrap_or(0.0);
            let _ = writeln!(
                s,
                "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {:.0} | {} | {} |",
                level.name(),
                m(&|c| c.device_s),
                m(&|c| c.read_bytes as f64 / 1048576.0),
                m(&|c| c.write_bytes as f64 / 1048576.0),
                m(&|c| c.zoned_write_bytes as f64 / 1048576.0),
                m(&|c| c.zone_resets as f64),
                m(&|c| c.zone_appends as f64),
                opt(mean(runs.iter().filter_map(|c| c.ftl_waf)), 3),
                opt(
                    mean(
                        runs.iter()
                            .filter_map(|c| c.ftl_gc_relocated_bytes.map(|b| b as f64 / 1048576.0))
                    ),
                    1
                ),
            );
        }
    }
    table(
        &mut s,
        "Two tenants, tenant B (db_bench on btrfs zoned):",
        &tenant_aggregates(&points.tenants),
    );
    if !points.tenants.is_empty() {
        let _ = writeln!(
            s,
            "\nTwo tenants, the drive (each run; capacity at the start of the measured phase, bandwidth over B's run):\n\n| run | A zones | B zones | drive zones | F2FS A fs | btrfs B fs | write MiB/s | read MiB/s | bandwidth | A's writes MiB/s | fills s | window s |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        let mut seen = Vec::new();
        for p in &points.tenants {
            let key = (p.util.clone(), p.tenancy.clone(), p.rep);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let c = &p.capacity_start;
            let pc = |v: f64| format!("{:.0} %", v * 100.0);
            let _ = writeln!(
                s,
                "| {}/{} rep {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {} | {} | {:.0} | {:.0} |",
                p.util,
                p.tenancy,
                p.rep,
                pc(c.a_zones),
                pc(c.b_zones),
                pc(c.drive_zones),
                pc(c.a_fs),
                pc(c.b_fs),
                p.bandwidth.write_mib_s,
                p.bandwidth.read_mib_s,
                pc(p.bandwidth.utilization),
                opt(p.tenant_a.map(|f| f.write_mib_per_s / points.speed.max(1e-9)), 2),
                p.fill_s,
                p.bandwidth.window_s
            );
        }
    }
    s
}

/// Writes the study's files into `dir`: points.json (what [`read_points`]
/// reads back), levels.csv, tenants.csv, summary.md, summary.json and,
/// with `plots`, levels.png and tenants.png (drawing needs fonts, which
/// the guest lacks: its points are plotted on the host); their paths.
pub fn write_outputs(
    points: &StudyPoints,
    dir: &Path,
    plots: bool,
) -> Result<Vec<PathBuf>, AppError> {
    std::fs::create_dir_all(dir).map_err(AppError::file(dir))?;
    let mut files = Vec::new();
    files.push(outfiles::write_json(dir, "points.json", points)?);
    let mut write = |name: &str, text: String| -> Result<(), AppError> {
        files.push(outfiles::write(dir, name, text)?);
        Ok(())
    };
    write("levels.csv", levels_csv(&points.levels))?;
    write("tenants.csv", tenants_csv(&points.tenants))?;
    let rows = summary(points);
    write(
        "summary.md",
        format!("{}{}", summary_markdown(&rows), figures_markdown(points)),
    )?;
    let doc = serde_json::json!({
        "speed": points.speed,
        "quick": points.quick,
        "scale": scale(points.quick),
        "findings": rows,
        "levels": level_aggregates(&points.levels),
        "tenants": tenant_aggregates(&points.tenants),
        "failures": points.failures,
    });
    write(
        "summary.json",
        serde_json::to_string_pretty(&doc).map_err(AppError::file(&dir.join("summary.json")))?,
    )?;
    if !plots {
        return Ok(files);
    }
    let lv = level_aggregates(&points.levels);
    if !lv.is_empty() {
        let groups: Vec<String> = LEVEL_BENCHMARKS
            .iter()
            .filter(|b| lv.iter().any(|a| a.benchmark == **b))
            .map(|b| b.to_string())
            .collect();
        let series = Level::ALL
            .iter()
            .map(|l| {
                let bars = groups
                    .iter()
                    .map(|g| {
                        let base = find(&lv, "a", g).map(|a| a.ops_per_s).filter(|b| *b > 0.0);
                        match (find(&lv, l.key(), g), base) {
                            (Some(x), Some(b)) => {
                                (x.ops_per_s / b, Some((x.ops_min / b, x.ops_max / b)))
                            }
                            _ => (f64::NAN, None),
                        }
                    })
                    .collect();
                (l.name().to_string(), bars)
            })
            .collect();
        let path = dir.join("levels.png");
        zns_plot::bar_chart(
            &zns_plot::BarChart {
                title: "Integration levels: db_bench ops/s normalized to (a) F2FS on a block SSD"
                    .into(),
                y_label: "throughput / (a)".into(),
                groups,
                series,
                reference: Some(1.0),
            },
            &path,
        )?;
        files.push(path);
    }
    let tv = tenant_aggregates(&points.tenants);
    if !tv.is_empty() {
        let mut groups = Vec::new();
        for util in ["low", "high"] {
            for bench in ["fillrandom", "overwrite"] {
                if find(&tv, &format!("{util}/alone"), bench).is_some() {
                    groups.push((util, bench));
                }
            }
        }
        let series = ["alone", "shared"]
            .iter()
            .map(|tenancy| {
                let bars = groups
                    .iter()
                    .map(|(util, bench)| {
                        let base = find(&tv, &format!("{util}/alone"), bench)
                            .map(|a| a.ops_per_s)
                            .filter(|b| *b > 0.0);
                        match (find(&tv, &format!("{util}/{tenancy}"), bench), base) {
                            (Some(x), Some(b)) => {
                                (x.ops_per_s / b, Some((x.ops_min / b, x.ops_max / b)))
                            }
                            _ => (f64::NAN, None),
                        }
                    })
                    .collect();
                let name = if *tenancy == "alone" {
                    "B alone"
                } else {
                    "B with A's overwrites"
                };
                (name.to_string(), bars)
            })
            .collect();
        let path = dir.join("tenants.png");
        zns_plot::bar_chart(
            &zns_plot::BarChart {
                title: "Two tenants on one drive: tenant B's db_bench ops/s normalized to B alone"
                    .into(),
                y_label: "throughput / B alone".into(),
                groups: groups
                    .iter()
                    .map(|(u, b)| format!("{u} utilization, {b}"))
                    .collect(),
                series,
                reference: Some(1.0),
            },
            &path,
        )?;
        files.push(path);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(parts: Vec<Part>, quick: bool, reps: u32) -> StudyOptions {
        StudyOptions {
            parts,
            quick,
            reps,
            speed: 0.01,
            out_dir: PathBuf::from("/tmp/x"),
            zns: PathBuf::from("zns"),
        }
    }

    #[test]
    fn the_plan_interleaves_what_is_compared_and_quick_is_one_rep() {
        let q = plan(&opts(vec![Part::Levels, Part::Tenants], true, 3));
        assert_eq!(q.len(), 3 + 4);
        assert_eq!(
            q[0],
            RunSpec::Level {
                level: Level::A,
                rep: 0
            }
        );
        assert_eq!(
            q[2],
            RunSpec::Level {
                level: Level::D,
                rep: 0
            }
        );
        assert_eq!(
            q[3],
            RunSpec::Tenants {
                util: Utilization::Low,
                tenancy: Tenancy::Alone,
                rep: 0
            }
        );
        assert_eq!(
            q[4],
            RunSpec::Tenants {
                util: Utilization::Low,
                tenancy: Tenancy::Shared,
                rep: 0
            }
        );
        assert_eq!(q[6].label(), "tenants-high-shared-rep0");
        let full = opts(vec![Part::Tenants], false, 2);
        let f = plan(&full);
        assert_eq!(f.len(), 8);
        // repetition by repetition; alone and shared next to each other
        let kind = |r: &RunSpec| match r {
            RunSpec::Tenants { util, tenancy, rep } => (util.key(), tenancy.key(), *rep),
            RunSpec::Level { .. } => ("level", "", 0),
        };
        assert_eq!(kind(&f[1]), ("low", "shared", 0));
        assert_eq!(kind(&f[2]), ("high", "alone", 0));
        assert_eq!(kind(&f[4]), ("low", "alone", 1));
        let both = plan(&opts(vec![Part::Levels, Part::Tenants], false, 2));
        assert_eq!(
            both[7],
            RunSpec::Level {
                level: Level::A,
                rep: 1
            }
        );
        assert_eq!(run_count(&opts(vec![Part::Levels], false, 3)), 9);
        assert!(guest_budget_runs(&full) >= f.len());
        assert_eq!("tenants".parse::<Part>(), Ok(Part::Tenants));
        assert!("zenfs".parse::<Part>().is_err());
    }

    #[test]
    fn db_bench_runs_have_the_studys_flags() {
        let s = scale(true);
        let inv = level_invocations(&s, "/mnt/db");
        assert_eq!(inv.len(), 3);
        for args in &inv {
            assert_eq!(args[0], "--db=/mnt/db");
            for flag in [
                "--key_size=16",
                "--value_size=100",
                "--compression_type=none",
                "--use_direct_reads=true",
                "--use_direct_io_for_flush_and_compaction=true",
                "--histogram=1",
            ] {
                assert!(args.iter().any(|a| a == flag), "{flag} in {args:?}");
            }
            assert!(args.contains(&format!("--num={}", s.level_keys)));
            assert!(args.contains(&"--write_buffer_size=4194304".to_string()));
        }
        assert!(inv[0].contains(&"--benchmarks=fillseq".to_string()));
        assert!(inv[1].contains(&"--benchmarks=fillrandom".to_string()));
        assert!(inv[2].contains(&"--use_existing_db=1".to_string()));
        assert!(inv[2].contains(&format!("--reads={}", s.level_reads)));
        assert!(!inv[0].iter().any(|a| a.starts_with("--reads")));
        let b = tenant_b_args(&s, "/mnt/b/db");
        for flag in [
            "--benchmarks=fillrandom,overwrite",
            "--key_size=100",
            "--value_size=800",
            "--compression_ratio=0.5",
        ] {
            assert!(b.iter().any(|a| a == flag), "{flag} in {b:?}");
        }
        // SST files of one zone's capacity, as the study sets them
        let sst = format!("--target_file_size_base={}", s.zone_cap_lbas * 4096);
        assert!(b.contains(&sst), "{b:?}");
    }

    #[test]
    fn the_two_tenant_drive_has_a_conventional_and_two_zoned_namespaces() {
        for quick in [true, false] {
            let s = scale(quick);
            let p = tenant_profile(&s).unwrap();
            assert_eq!(p.namespaces.len(), 3);
            match &p.namespaces[0] {
                NamespaceProfile::Conventional(c) => assert_eq!(c.capacity_lbas, s.meta_lbas),
                other => panic!("{other:?}"),
            }
            for (ns, zones) in [(1, s.zones_a), (2, s.zones_b)] {
                match &p.namespaces[ns] {
                    NamespaceProfile::Zoned(z) => {
                        assert_eq!(z.zone_count, zones);
                        assert_eq!(z.zone_size_lbas, s.zone_lbas);
                        assert_eq!(z.zone_capacity_lbas, s.zone_cap_lbas);
                        assert!(z.zone_size_lbas.is_power_of_two());
                        // A keeps the ZN540's limits, B has none (btrfs)
                        let limit = if ns == 1 { 14 } else { zones };
                        assert_eq!(z.max_active_zones, limit);
                    }
                    other => panic!("{other:?}"),
                }
            }
            // whole F2FS segments (2 MiB = 512 blocks) per zone
            assert_eq!(s.zone_cap_lbas % 512, 0);
            // the file written back parses to the same drive
            let again = Profile::from_toml(&p.to_toml(), "again").unwrap();
            assert_eq!(again.namespaces, p.namespaces);
        }
        let (w, r) = peak_mib_s(&Profile::builtin("zn540-cns").unwrap());
        assert!((w - 1170.0).abs() < 1.0, "{w}");
        assert_eq!(r, 3000.0);
    }

    #[test]
    fn zone_reports_and_block_stats_are_read() {
        let report = "\
  start: 0x000000000, len 0x002000, cap 0x001000, wptr 0x001000 reset:0 non-seq:0, zcond:14(fu) [type: 2(SEQ_WRITE_REQUIRED)]
  start: 0x000002000, len 0x002000, cap 0x001000, wptr 0x000200 reset:0 non-seq:0, zcond: 2(oi) [type: 2(SEQ_WRITE_REQUIRED)]
  start: 0x000004000, len 0x002000, cap 0x001000, wptr 0x000000 reset:0 non-seq:0, zcond: 1(em) [type: 2(SEQ_WRITE_REQUIRED)]
  start: 0x000006000, len 0x002000, cap 0x001000, wptr 0x002000 reset:0 non-seq:0, zcond:14(fu) [type: 2(SEQ_WRITE_REQUIRED)]
";
        assert_eq!(
            zone_fill(report),
            Some((0x1000 + 0x200 + 0x1000, 4 * 0x1000))
        );
        assert_eq!(zone_fill("no zones here\n"), None);
        let stat = "     53        0     2128      788        2        0        8        7        0      512      799        0        0        0        0        1        3\n";
        assert_eq!(block_stat_sectors(stat), Some((2128, 8)));
        assert_eq!(block_stat_sectors("1 2"), None);
    }

    #[test]
    fn served_counters_are_summed_with_the_ftls() {
        let stats = serde_json::json!({
            "virtual_ns": 2_500_000_000u64,
            "served": [
                {"name": "sn540", "requests": {"by_kind": {
                    "read": {"requests": 10, "bytes": 4096, "failed": 0},
                    "write": {"requests": 5, "bytes": 8192, "failed": 0},
                    "discard": {"requests": 1, "bytes": 1048576, "failed": 0}}}},
                {"name": "zn540-cns nsid 2", "requests": {"by_kind": {
                    "zone-append": {"requests": 3, "bytes": 12288, "failed": 0},
                    "zone-reset": {"requests": 2, "bytes": 0, "failed": 0}}}}
            ],
            "devices": {"sn540": {"controllers": [{"commands": {}, "ftl": {"1": {
                "host_bytes_written": 1000, "flash_bytes_written": 1500,
                "gc_relocated_bytes": 400, "gc_victims": 2, "erases": 3}}}]}}
        });
        let c = counters(&stats, &["zn540-cns nsid 2".to_string()]);
        assert_eq!(c.device_s, 2.5);
        assert_eq!(c.read_bytes, 4096);
        assert_eq!(c.write_bytes, 8192 + 12288);
        assert_eq!(c.zoned_write_bytes, 12288);
        assert_eq!(c.zone_appends, 3);
        assert_eq!(c.zone_resets, 2);
        assert_eq!(c.discard_bytes, 1048576);
        assert_eq!(c.ftl_waf, Some(1.5));
        assert_eq!(c.ftl_gc_relocated_bytes, Some(400));
        assert_eq!(c.ftl_gc_victims, Some(2));
        let zoned_only = serde_json::json!({"virtual_ns": 1, "served": [],
            "devices": {"zn540-cns": {"controllers": [{"commands": {}, "ftl": {}}]}}});
        assert_eq!(counters(&zoned_only, &[]).ftl_waf, None);
    }

    fn level(l: &str, bench: &str, rep: u32, ops: f64) -> LevelPoint {
        LevelPoint {
            level: l.into(),
            rep,
            benchmark: bench.into(),
            ops_per_s: ops,
            mb_per_s: Some(1.0),
            p50_us: Some(10.0),
            p99_us: Some(100.0),
            p99_9_us: None,
            counters: Counters {
                ftl_waf: (l == "a").then_some(1.0),
                ftl_gc_relocated_bytes: (l == "a").then_some(0),
                ..Counters::default()
            },
            fs_used_bytes: 0,
            report_file: PathBuf::new(),
        }
    }

    fn tenant(util: &str, tenancy: &str, bench: &str, ops: f64, p99: f64) -> TenantPoint {
        TenantPoint {
            util: util.into(),
            tenancy: tenancy.into(),
            rep: 0,
            benchmark: bench.into(),
            ops_per_s: ops,
            mb_per_s: None,
            p50_us: None,
            p99_us: Some(p99),
            p99_9_us: None,
            capacity_start: Capacity {
                drive_zones: if util == "high" { 0.85 } else { 0.05 },
                a_fs: 0.9,
                ..Capacity::default()
            },
            capacity_end: Capacity::default(),
            bandwidth: Bandwidth {
                utilization: if tenancy == "shared" { 0.4 } else { 0.1 },
                ..Bandwidth::default()
            },
            tenant_a: None,
            fill_s: 0.0,
            counters: Counters::default(),
            report_file: PathBuf::new(),
        }
    }

    fn sample() -> StudyPoints {
        StudyPoints {
            speed: 0.01,
            quick: true,
            levels: vec![
                level("a", "fillseq", 0, 100.0),
                level("a", "fillseq", 1, 300.0),
                level("c", "fillseq", 0, 210.0),
                level("d", "fillseq", 0, 100.0),
                level("a", "overwrite", 0, 200.0),
                level("a", "overwrite", 1, 220.0),
                level("c", "overwrite", 0, 150.0),
                level("c", "overwrite", 1, 250.0),
            ],
            tenants: vec![
                tenant("low", "alone", "fillrandom", 100.0, 50.0),
                tenant("low", "shared", "fillrandom", 95.0, 60.0),
                tenant("high", "alone", "overwrite", 100.0, 50.0),
                tenant("high", "shared", "overwrite", 60.0, 100.0),
            ],
            failures: vec!["level-d-rep1: db_bench failed\nmore".into()],
        }
    }

    #[test]
    fn the_summary_states_the_direction_against_the_study() {
        let rows = summary(&sample());
        let row = |what: &str| {
            rows.iter()
                .find(|r| r.what.starts_with(what))
                .unwrap_or_else(|| panic!("no row {what}"))
        };
        // (a) is the mean of its repetitions: 200
        let c = row("fillseq: (c)");
        assert!((c.ours.unwrap() - 1.05).abs() < 1e-9);
        assert!(
            c.note.contains("5.0 % faster") && c.note.contains("as the study found"),
            "{}",
            c.note
        );
        let d = row("fillseq: (d)");
        assert!(
            d.note.contains("50.0 % slower") && d.note.contains("unlike the study"),
            "{}",
            d.note
        );
        let ow = row("overwrite: (c)");
        assert!(
            ow.note.contains("within the repetitions' spread"),
            "{}",
            ow.note
        );
        assert!(!c.note.contains("spread"), "{}", c.note);
        assert_eq!(row("readseq: (c)").ours, None);
        assert_eq!(row("readseq: (c)").note, "not run");
        let low = row("two tenants, low utilization: B fillrandom with A");
        assert!((low.ours.unwrap() - 0.95).abs() < 1e-9);
        assert!(low.note.contains("as the study found"), "{}", low.note);
        let high = row("two tenants, high utilization: B overwrite with A");
        assert!((high.ours.unwrap() - 0.6).abs() < 1e-9);
        assert!(
            high.note.contains("40.0 % slower") && high.note.contains("as Western Digital"),
            "{}",
            high.note
        );
        let p99 = row("two tenants, high utilization: B overwrite P99");
        assert!((p99.ours.unwrap() - 2.0).abs() < 1e-9);
        let cap = row("high utilization: capacity");
        assert!(cap.note.contains("above 80 %"), "{}", cap.note);
        let bw = row("high utilization: bandwidth");
        assert!((bw.ours.unwrap() - 0.4).abs() < 1e-9);
        assert!(bw.note.contains("above 30 %"), "{}", bw.note);
        let low_cap = row("low utilization: capacity");
        assert!(low_cap.note.contains("below 80 %"), "{}", low_cap.note);
        let md = summary_markdown(&rows);
        assert!(md.starts_with("| measure | study | ours | note |"));
        let fig = figures_markdown(&sample());
        assert!(fig.contains("| a | fillseq | 2 | 200 (100–300) |"), "{fig}");
        assert!(fig.contains("high/shared rep 0"), "{fig}");
        assert!(fig.contains("- level-d-rep1: db_bench failed\n"), "{fig}");
    }

    #[test]
    fn outputs_are_written_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let files = write_outputs(&sample(), dir.path(), false).unwrap();
        assert_eq!(files.len(), 5);
        let back = read_points(dir.path()).unwrap();
        assert_eq!(back.levels.len(), 8);
        assert_eq!(back.tenants[3].ops_per_s, 60.0);
        let csv = std::fs::read_to_string(dir.path().join("levels.csv")).unwrap();
        assert_eq!(csv.lines().count(), 9);
        assert!(csv
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("a,0,fillseq,100.0,1.00,10.00,100.00,,"));
        let csv = std::fs::read_to_string(dir.path().join("tenants.csv")).unwrap();
        assert_eq!(csv.lines().count(), 5);
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        )
        .unwrap();
        assert!(json["findings"].as_array().unwrap().len() > 10);
        assert_eq!(json["scale"]["zones_a"], scale(true).zones_a);
    }
}
