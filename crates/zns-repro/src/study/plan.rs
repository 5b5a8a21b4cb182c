//! The study's plan and its records: the experiments and their levels,
//! utilizations and tenancies, the options and scale, the runs in order,
//! the points each run measures and the served drive's counters, and the
//! helpers the runs share (the served drive's devices, mount points).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use zns_apps::fio::FioResult;
use zns_apps::served::{ServedDevice, Server};
use zns_apps::AppError;

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
    /// The seconds between the two reads of the counters (A's start to
    /// B's end, on the kernel's clock: the guest's instruction clock in
    /// the guest), and device seconds (× the speed factor).
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

pub(super) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

pub(super) fn io(e: impl std::fmt::Display) -> AppError {
    AppError::Io(e.to_string())
}

/// A mount point of this process (off the work directory, which may be a
/// shared folder in the guest).
pub(super) fn mount_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zns-study-{}-{name}", std::process::id()))
}

pub(super) fn serve_args(target: &str, speed: f64) -> Vec<String> {
    vec![target.to_string(), "--speed".into(), speed.to_string()]
}

pub(super) fn conventional(server: &Server) -> Result<String, AppError> {
    server
        .devices
        .iter()
        .find(|d| !d.zoned)
        .map(|d| d.path.clone())
        .ok_or_else(|| io("the drive has no conventional namespace"))
}

pub(super) fn zoned_targets(server: &Server) -> Vec<String> {
    zoned(server).iter().map(|d| d.target.clone()).collect()
}

pub(super) fn zoned(server: &Server) -> Vec<&ServedDevice> {
    server.devices.iter().filter(|d| d.zoned).collect()
}
