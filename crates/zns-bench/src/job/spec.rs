//! A job's options as given (`OptSet`, each value checked against its row
//! of the table as it is set; `Section`, one job of a file or command line)
//! and the typed job: [`JobSpec`] and its enums (`rw`, `zonemode`,
//! `ioengine`, `zone_op`, `precondition`), extracted from a job's options
//! once its section is complete (defaults from the table, then the job's
//! values, then the checks between options).

use std::collections::HashMap;
use std::time::Duration;

use super::error::{JobError, Location};
use super::options::{find_option, suggest_option, OPTIONS, U32_MAX};
use super::value::{
    combine_block_sizes, parse_cpu_list, parse_value, BlockSizes, LogSpec, RateSpec, Reject,
    SizeSpec, Value, ZoneFill,
};
use crate::distribution::RandomDistribution;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// `rw` / `readwrite`: sequential mixed.
    ReadWrite,
    RandRw,
    /// `trim`: sequential deallocates (Dataset Management).
    Trim,
    RandTrim,
    /// `trimwrite`: sequential; each block deallocated, then written.
    TrimWrite,
}

impl Rw {
    pub fn has_reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::ReadWrite | Rw::RandRw)
    }
    pub fn has_writes(self) -> bool {
        matches!(
            self,
            Rw::Write | Rw::RandWrite | Rw::ReadWrite | Rw::RandRw | Rw::TrimWrite
        )
    }
    /// Issues deallocates (trim, randtrim, trimwrite).
    pub fn is_trim(self) -> bool {
        matches!(self, Rw::Trim | Rw::RandTrim | Rw::TrimWrite)
    }
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim
        )
    }
    /// fio's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::ReadWrite => "rw",
            Rw::RandRw => "randrw",
            Rw::Trim => "trim",
            Rw::RandTrim => "randtrim",
            Rw::TrimWrite => "trimwrite",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneMode {
    None,
    Zbd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoEngine {
    Psync,
    Sync,
    Libaio,
    IoUring,
    Pvsync,
    /// fio's SPDK plugin: asynchronous, user-space polled driver.
    Spdk,
}

impl IoEngine {
    /// Keeps `iodepth` I/Os outstanding (otherwise one at a time).
    pub fn is_async(self) -> bool {
        matches!(self, IoEngine::Libaio | IoEngine::IoUring | IoEngine::Spdk)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            IoEngine::Psync => "psync",
            IoEngine::Sync => "sync",
            IoEngine::Libaio => "libaio",
            IoEngine::IoUring => "io_uring",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Spdk => "spdk",
        }
    }
}

/// znskit extension `host_stack`: the timing model's own type.
pub use zns_sim::timing::HostStack;

/// znskit extension `zone_op`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneOp {
    Reset,
    Finish,
    Open,
    Close,
}

/// znskit extension `precondition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    None,
    Fill,
    Cold,
}

/// One fully resolved job (`[global]` + its section, or the command-line
/// global options + its `--name` group). `numjobs` clones are not expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub name: String,
    /// Reporting group: 0, incremented at each job with `stonewall`.
    pub group: u32,
    pub filename: Option<String>,
    pub rw: Rw,
    /// Read share of mixed workloads, 0..=100 (from rwmixread or
    /// 100 - rwmixwrite).
    pub rwmixread: u8,
    /// The smallest I/O size of the directions the job does: random offsets
    /// are multiples of it (fio's `blockalign` default).
    pub bs: u64,
    /// Each I/O's size, per direction (`bs`, `bsrange`, `bssplit`).
    pub block_sizes: BlockSizes,
    /// `verify=`: the checksum the job's blocks carry (`None`: no verify).
    pub verify: Option<crate::verify::VerifyKind>,
    pub do_verify: bool,
    /// fio's per-I/O logs (`write_lat_log`, `write_bw_log`,
    /// `write_iops_log`, `log_avg_msec`, `log_offset`).
    pub logs: LogSpec,
    pub iodepth: u32,
    pub numjobs: u32,
    pub size: Option<SizeSpec>,
    pub offset: SizeSpec,
    pub offset_increment: SizeSpec,
    pub zonemode: ZoneMode,
    pub max_open_zones: u32,
    pub job_max_open_zones: u32,
    pub zone_reset_threshold: f64,
    pub zone_reset_frequency: f64,
    pub ioengine: IoEngine,
    pub direct: bool,
    pub time_based: bool,
    pub runtime: Option<Duration>,
    pub ramp_time: Duration,
    pub flow: i32,
    pub rate: Option<RateSpec>,
    pub rate_iops: Option<RateSpec>,
    pub group_reporting: bool,
    pub percentile_list: Vec<f64>,
    pub lat_percentiles: bool,
    pub clat_percentiles: bool,
    pub randrepeat: bool,
    pub randseed: Option<u64>,
    pub norandommap: bool,
    /// `random_distribution`: where random offsets fall.
    pub random_distribution: RandomDistribution,
    /// `fsync`/`fdatasync`: a flush after every this many writes (0 = none).
    pub fsync: u64,
    /// `end_fsync`/`fsync_on_close`: a flush when the job's I/O is done.
    pub end_fsync: bool,
    /// `exitall`: when this job finishes, the rest of its group stops.
    pub exitall: bool,
    pub stonewall: bool,
    pub thread: bool,
    pub zone_append: bool,
    pub host_stack: Option<HostStack>,
    pub zone_op: Option<ZoneOp>,
    pub precondition: Precondition,
    pub flow_id: u32,
    pub startdelay: Duration,
    pub thinktime: Duration,
    /// `cpus_allowed`: the CPUs the job's threads may run on (sorted,
    /// distinct); None = as many as needed.
    pub cpus_allowed: Option<Vec<u32>>,
    pub io_size: Option<SizeSpec>,
    /// 0 = no limit.
    pub number_ios: u64,
    /// fio's `loops`: passes over the range (1 = one).
    pub loops: u32,
    pub zone_fill: ZoneFill,
    pub zone_write_limit: Option<SizeSpec>,
    pub zrwa: bool,
    pub zrwa_flush_bytes: Option<SizeSpec>,
    /// znskit extension `untimed`: the writes change the device state only.
    pub untimed: bool,
    pub nsid: Option<u32>,
    /// The options as given (global and the job's own), canonical name →
    /// text, for fio's `job options` output.
    pub options: indexmap::IndexMap<String, String>,
}

impl JobSpec {
    /// I/Os this job keeps in flight: iodepth for async engines, else 1.
    pub fn effective_iodepth(&self) -> u32 {
        if self.ioengine.is_async() {
            self.iodepth
        } else {
            1
        }
    }
}

/// Options of one job (or of the running global set), keyed by canonical
/// option name.
#[derive(Debug, Clone, Default)]
pub(super) struct OptSet {
    pub(super) values: HashMap<&'static str, Value>,
    /// The text each option was given as (bare flags as "1"), for reports,
    /// in the order given (fio's `job options` keep it).
    pub(super) raw: indexmap::IndexMap<&'static str, String>,
    /// `name=` was given in this job's own section (not inherited).
    pub(super) name_set_locally: bool,
}

impl OptSet {
    pub(super) fn set(
        &mut self,
        name: &str,
        raw: Option<&str>,
        at: &Location,
    ) -> Result<(), JobError> {
        let name = name.trim();
        let def = find_option(name).ok_or_else(|| JobError::UnknownOption {
            at: at.clone(),
            option: name.to_string(),
            suggestion: suggest_option(name),
        })?;
        let v = parse_value(def, raw).map_err(|r| match r {
            Reject::Bad => JobError::BadValue {
                at: at.clone(),
                option: def.name.to_string(),
                value: raw.unwrap_or("").trim().to_string(),
                expected: def.kind.expected(),
            },
            Reject::Range(reason) => JobError::OutOfRange {
                at: at.clone(),
                option: def.name.to_string(),
                value: raw.unwrap_or("").trim().to_string(),
                reason,
            },
        })?;
        if def.name == "name" {
            self.name_set_locally = true;
        }
        self.values.insert(def.name, v);
        self.raw.insert(
            def.name,
            raw.map_or_else(|| "1".to_string(), |r| r.trim().to_string()),
        );
        Ok(())
    }
}

pub(super) struct Section {
    pub(super) name: String,
    pub(super) at: Location,
    pub(super) opts: OptSet,
}

pub(super) fn resolve(s: &Section, group: u32) -> Result<JobSpec, JobError> {
    // defaults from the table, then the job's values
    let mut v: HashMap<&'static str, Value> = HashMap::new();
    for d in OPTIONS {
        if let Some(def) = d.default {
            if let Ok(x) = parse_value(d, Some(def)) {
                v.insert(d.name, x);
            }
        }
    }
    for (k, x) in &s.opts.values {
        v.insert(k, x.clone());
    }
    let g = |k: &str| v.get(k);
    let b = |k: &str| matches!(g(k), Some(Value::Bool(true)));
    let int = |k: &str, dflt: i64| match g(k) {
        Some(Value::Int(n)) => *n,
        _ => dflt,
    };
    let float = |k: &str| match g(k) {
        Some(Value::Float(x)) => *x,
        _ => 0.0,
    };
    let word = |k: &str| match g(k) {
        Some(Value::Enum(w)) => Some(*w),
        _ => None,
    };
    let size = |k: &str| match g(k) {
        Some(Value::Size(sz)) => Some(*sz),
        _ => None,
    };
    let time = |k: &str| match g(k) {
        Some(Value::Time(t)) => Some(*t),
        _ => None,
    };
    let rate = |k: &str| match g(k) {
        Some(Value::Rate(r)) => Some(*r),
        _ => None,
    };
    let conflict = |reason: String| JobError::Conflict {
        at: s.at.clone(),
        job: s.name.clone(),
        reason,
    };

    let name = match s.opts.values.get("name") {
        // a `name=` inside the job's own section overrides the section name;
        // one inherited from [global] does not (fio prints section names)
        Some(Value::Str(n)) if !global_name_only(s) => n.clone(),
        _ => s.name.clone(),
    };

    let rw = match word("rw") {
        Some("write") => Rw::Write,
        Some("randread") => Rw::RandRead,
        Some("randwrite") => Rw::RandWrite,
        Some("rw") | Some("readwrite") => Rw::ReadWrite,
        Some("randrw") => Rw::RandRw,
        Some("trim") => Rw::Trim,
        Some("randtrim") => Rw::RandTrim,
        Some("trimwrite") => Rw::TrimWrite,
        _ => Rw::Read,
    };
    let has_r = s.opts.values.contains_key("rwmixread");
    let has_w = s.opts.values.contains_key("rwmixwrite");
    let mixr = int("rwmixread", 50);
    let mixw = int("rwmixwrite", 50);
    let rwmixread = match (has_r, has_w) {
        (true, true) if mixr + mixw != 100 => {
            return Err(conflict(format!(
                "rwmixread={mixr} and rwmixwrite={mixw} do not add up to 100"
            )))
        }
        (false, true) => 100 - mixw,
        _ => mixr,
    };
    let zonemode = match word("zonemode") {
        Some("zbd") => ZoneMode::Zbd,
        _ => ZoneMode::None,
    };
    let ioengine = match word("ioengine") {
        Some("sync") => IoEngine::Sync,
        Some("libaio") => IoEngine::Libaio,
        Some("io_uring") => IoEngine::IoUring,
        Some("pvsync") => IoEngine::Pvsync,
        Some("spdk") => IoEngine::Spdk,
        _ => IoEngine::Psync,
    };
    let cpus_allowed = match g("cpus_allowed") {
        Some(Value::Str(list)) => {
            Some(parse_cpu_list(list).map_err(|e| conflict(format!("cpus_allowed={list}: {e}")))?)
        }
        _ => None,
    };
    let direct = b("direct");
    if zonemode == ZoneMode::Zbd && rw.has_writes() && !direct && word("zone_op").is_none() {
        return Err(conflict(
            "zonemode=zbd with writes requires direct=1 (buffered writes cannot keep zone write order)"
                .into(),
        ));
    }
    let sizes = |k: &str| match g(k) {
        Some(Value::Sizes(v)) => v.clone(),
        _ => [None, None, None],
    };
    let block_sizes = combine_block_sizes(&sizes("bs"), &sizes("bsrange"), &sizes("bssplit"));
    let bs = match (rw.has_reads(), rw.has_writes()) {
        // (trimwrite deallocates each block it then writes)
        _ if rw == Rw::TrimWrite => block_sizes.write.min_bytes(),
        _ if rw.is_trim() => block_sizes.trim.min_bytes(),
        (true, false) => block_sizes.read.min_bytes(),
        (false, true) => block_sizes.write.min_bytes(),
        _ => block_sizes
            .read
            .min_bytes()
            .min(block_sizes.write.min_bytes()),
    };
    let prefix = |k: &str| match g(k) {
        Some(Value::Str(p)) if p.is_empty() => Some(name.clone()),
        Some(Value::Str(p)) => Some(p.clone()),
        _ => None,
    };
    let logs = LogSpec {
        lat: prefix("write_lat_log"),
        bw: prefix("write_bw_log"),
        iops: prefix("write_iops_log"),
        avg_msec: int("log_avg_msec", 0).max(0) as u64,
        offset: b("log_offset"),
    };
    let verify = match word("verify") {
        Some("crc32c") | Some("crc32c-intel") => Some(crate::verify::VerifyKind::Crc32c),
        Some("md5") => Some(crate::verify::VerifyKind::Md5),
        _ => None,
    };
    let random_distribution = match g("random_distribution") {
        Some(Value::Str(text)) => RandomDistribution::parse(text)
            .map_err(|e| conflict(format!("random_distribution={text}: {e}")))?,
        _ => RandomDistribution::Uniform,
    };
    // (fsync and fdatasync both send an NVMe Flush: the more frequent wins)
    let fsync = [int("fsync", 0), int("fdatasync", 0)]
        .into_iter()
        .filter(|&n| n > 0)
        .min()
        .unwrap_or(0) as u64;
    let spec = JobSpec {
        random_distribution,
        fsync,
        end_fsync: b("end_fsync") || b("fsync_on_close"),
        exitall: b("exitall"),
        verify,
        do_verify: b("do_verify"),
        name,
        group,
        filename: match g("filename") {
            Some(Value::Str(f)) => Some(f.clone()),
            _ => None,
        },
        rw,
        rwmixread: rwmixread.clamp(0, 100) as u8,
        bs,
        block_sizes,
        logs,
        iodepth: int("iodepth", 1).clamp(1, u32::MAX as i64) as u32,
        numjobs: int("numjobs", 1).clamp(1, u32::MAX as i64) as u32,
        size: size("size"),
        offset: size("offset").unwrap_or(SizeSpec::Bytes(0)),
        offset_increment: size("offset_increment").unwrap_or(SizeSpec::Bytes(0)),
        zonemode,
        max_open_zones: int("max_open_zones", 0).clamp(0, U32_MAX) as u32,
        job_max_open_zones: int("job_max_open_zones", 0).clamp(0, U32_MAX) as u32,
        zone_reset_threshold: float("zone_reset_threshold"),
        zone_reset_frequency: float("zone_reset_frequency"),
        ioengine,
        direct,
        time_based: b("time_based"),
        // runtime=0 is no limit, as in fio
        runtime: time("runtime").filter(|d| !d.is_zero()),
        ramp_time: time("ramp_time").unwrap_or_default(),
        flow: int("flow", 0).clamp(i32::MIN as i64, i32::MAX as i64) as i32,
        rate: rate("rate"),
        rate_iops: rate("rate_iops"),
        group_reporting: b("group_reporting"),
        percentile_list: match g("percentile_list") {
            Some(Value::List(l)) => l.clone(),
            _ => Vec::new(),
        },
        lat_percentiles: b("lat_percentiles"),
        clat_percentiles: b("clat_percentiles"),
        randrepeat: b("randrepeat"),
        randseed: match g("randseed") {
            Some(Value::Int(n)) => Some((*n).max(0) as u64),
            _ => None,
        },
        norandommap: b("norandommap"),
        stonewall: b("stonewall"),
        thread: b("thread"),
        zone_append: b("zone_append"),
        host_stack: word("host_stack").and_then(|w| w.parse().ok()),
        zone_op: match word("zone_op") {
            Some("reset") => Some(ZoneOp::Reset),
            Some("finish") => Some(ZoneOp::Finish),
            Some("open") => Some(ZoneOp::Open),
            Some("close") => Some(ZoneOp::Close),
            _ => None,
        },
        precondition: match word("precondition") {
            Some("fill") => Precondition::Fill,
            Some("cold") => Precondition::Cold,
            _ => Precondition::None,
        },
        flow_id: int("flow_id", 0).clamp(0, U32_MAX) as u32,
        startdelay: time("startdelay").unwrap_or_default(),
        thinktime: time("thinktime").unwrap_or_default(),
        cpus_allowed,
        io_size: size("io_size"),
        number_ios: int("number_ios", 0).max(0) as u64,
        loops: int("loops", 1).clamp(1, 1_000_000) as u32,
        zone_fill: match g("zone_fill") {
            Some(Value::Fill(f)) => *f,
            _ => ZoneFill::Percent {
                percent: 100.0,
                minus_bytes: 0,
            },
        },
        zone_write_limit: size("zone_write_limit"),
        zrwa: b("zrwa"),
        untimed: b("untimed"),
        zrwa_flush_bytes: size("zrwa_flush_bytes"),
        nsid: match g("nsid") {
            Some(Value::Int(n)) => Some((*n).clamp(1, U32_MAX) as u32),
            _ => None,
        },
        options: s
            .opts
            .raw
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    };
    Ok(spec)
}
/// True when the job's `name` value was inherited from the global options
/// rather than set by the job itself.
fn global_name_only(s: &Section) -> bool {
    !s.opts.name_set_locally
}
