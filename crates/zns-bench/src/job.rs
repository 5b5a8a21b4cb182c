//! fio job descriptions: INI job files and fio-style `--name=… --rw=…`
//! command lines, parsed into fully resolved, typed [`JobSpec`]s.
//!
//! Every option znskit understands is one row of [`OPTIONS`] (name, aliases,
//! kind, default, help, whether it is a znskit extension). Parsing is driven
//! by that table: a value is checked against the row's [`OptKind`], defaults
//! are parsed by the same code as user input, and the typed [`JobSpec`] is
//! extracted at the end. Unknown options, malformed values and out-of-range
//! values are errors that name the option and where it was given; nothing is
//! silently ignored, and no input makes the parser panic.
//!
//! Sizes follow fio's default `kb_base=1024`: `k`/`K`/`KB` mean 1024 and, as
//! fio documents for that default, the IEC-looking `Ki`/`KiB` mean 1000
//! (fio keeps the prefixes "opposite" to the standards for old scripts).
//! `%` and the `z` (zones) suffix are kept symbolic in [`SizeSpec`] and
//! resolved later against a device.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use thiserror::Error;
use zns_target::size::{parse_bytes, split_number};

use crate::distribution::RandomDistribution;

// ---------------------------------------------------------------------------
// Option table
// ---------------------------------------------------------------------------

/// What values an option accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptKind {
    /// Free text.
    Str,
    /// One of a fixed set of words.
    Enum(&'static [&'static str]),
    /// Block sizes per direction, `read[,write[,trim]]` as fio's `bs`: each
    /// bytes with k/m/g/t suffixes, a positive multiple of 512; one value
    /// applies to every direction, an empty side keeps the default.
    BlockSize,
    /// fio's `bsrange`: `min-max` per direction (`1k-4k,2k-8k`).
    BlockSizeRange,
    /// fio's `bssplit`: `size/percent:size/percent…` per direction.
    BlockSizeSplit,
    /// A size: bytes with suffixes, a percentage of the device (`50%`) or a
    /// number of zones (`8z`).
    Size,
    /// Boolean: `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`; a bare
    /// option name means true.
    Bool,
    /// Integer in an inclusive range.
    Int { min: i64, max: i64 },
    /// Floating-point number in an inclusive range.
    Float { min: f64, max: f64 },
    /// Duration: a number with `us`, `ms`, `s`, `m`, `h` or `d` suffix; a
    /// plain number is in `default_unit_us` microseconds.
    Time { default_unit_us: u64 },
    /// Per-direction rate `read[,write]`, each a size with suffixes (bytes/s
    /// for `rate`, I/Os per second for `rate_iops`); an empty side means
    /// "no limit"; a single value applies to both.
    Rate,
    /// Colon-separated percentiles, each in (0, 100], at most 20.
    PercentileList,
    /// Occupancy of a zone: `P%` of its capacity, a size (`4k`), or
    /// `P%-SIZE` (e.g. `100%-4k`: all but the last 4 KiB).
    ZoneFill,
    /// A log file name prefix; the bare option means the job's name.
    LogPrefix,
}

impl OptKind {
    /// What a value of this kind looks like, for error messages.
    pub fn expected(&self) -> String {
        match self {
            OptKind::Str => "a string".into(),
            OptKind::Enum(words) => format!("one of {}", words.join(", ")),
            OptKind::BlockSize => {
                "block sizes `read[,write[,trim]]`, each bytes with optional k/m/g suffix, a multiple of 512 (e.g. 4k, 4k,64k)".into()
            }
            OptKind::BlockSizeRange => {
                "block size ranges `min-max[,min-max[,min-max]]` for read, write, trim (e.g. 4k-64k)".into()
            }
            OptKind::BlockSizeSplit => {
                "weighted block sizes `size/percent:size/percent…[,…]` for read, write, trim (e.g. 4k/10:64k/90; an empty percent shares what is left)".into()
            }
            OptKind::Size => {
                "a size: bytes with optional k/m/g/t/p suffix, a percentage (50%) or zones (8z)"
                    .into()
            }
            OptKind::Bool => "a boolean (0/1, true/false, yes/no, on/off)".into(),
            OptKind::Int { min, max } => format!("an integer in {min}..={max}"),
            OptKind::Float { min, max } => format!("a number in {min}..={max}"),
            OptKind::Time { .. } => {
                "a duration: integer with optional us/ms/s/m/h/d suffix (e.g. 30, 500ms, 2m)".into()
            }
            OptKind::Rate => "a rate `read[,write]`, each with optional k/m/g suffix".into(),
            OptKind::PercentileList => {
                "colon-separated percentiles in (0,100], at most 20 (e.g. 50:99:99.9)".into()
            }
            OptKind::ZoneFill => {
                "a zone occupancy: P% of the zone capacity, a size (4k, 64m), or P%-SIZE (100%-4k)"
                    .into()
            }
            OptKind::LogPrefix => "a log file name prefix (bare: the job's name)".into(),
        }
    }
}

/// One row of the option table.
#[derive(Debug, Clone, Copy)]
pub struct OptionDef {
    pub name: &'static str,
    /// Other spellings fio accepts for the same option.
    pub aliases: &'static [&'static str],
    pub kind: OptKind,
    /// Default, written as a user would write it; `None` = unset.
    pub default: Option<&'static str>,
    pub help: &'static str,
    /// A znskit extension (not a stock fio option).
    pub extension: bool,
}

const SECS: u64 = 1_000_000;

/// A stock fio option.
const fn opt(
    name: &'static str,
    kind: OptKind,
    default: Option<&'static str>,
    help: &'static str,
) -> OptionDef {
    OptionDef {
        name,
        aliases: &[],
        kind,
        default,
        help,
        extension: false,
    }
}

/// A znskit extension: a stock row marked as one.
const fn ext(
    name: &'static str,
    kind: OptKind,
    default: Option<&'static str>,
    help: &'static str,
) -> OptionDef {
    let mut d = opt(name, kind, default, help);
    d.extension = true;
    d
}

const fn aliased(mut d: OptionDef, aliases: &'static [&'static str]) -> OptionDef {
    d.aliases = aliases;
    d
}

const U32_MAX: i64 = u32::MAX as i64;

/// Default clat percentiles, as fio prints them.
pub const DEFAULT_PERCENTILES: &str = "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99";

/// Every option znskit accepts. Anything else is an error.
pub static OPTIONS: &[OptionDef] = &[
    opt("name", OptKind::Str, None,
        "Job name. On the command line each --name starts a new job; in a job file the section name is used unless the section sets name."),
    opt("filename", OptKind::Str, None,
        "Target device (required): a built-in profile (e.g. zn540), a profile TOML file, a device image, raid:… or a real zoned device /dev/… (docs/targets.md)."),
    aliased(opt("rw", OptKind::Enum(&["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim", "trimwrite"]), Some("read"),
        "I/O pattern: read, write, randread, randwrite, rw/readwrite (sequential mixed), randrw (random mixed), trim/randtrim (Dataset Management deallocate, sequential or random, on conventional namespaces; with zonemode=zbd a zone reset per trim, as fio), trimwrite (sequential: each block deallocated, then written; conventional namespaces)."), &["readwrite"]),
    opt("rwmixread", OptKind::Int { min: 0, max: 100 }, Some("50"),
        "Percentage of a mixed workload that is reads."),
    opt("rwmixwrite", OptKind::Int { min: 0, max: 100 }, Some("50"),
        "Percentage of a mixed workload that is writes."),
    aliased(opt("bs", OptKind::BlockSize, Some("4k"),
        "Block size of each I/O (multiple of 512 bytes); `read,write` sizes apart as in fio (bs=4k,64k)."), &["blocksize"]),
    aliased(opt("bsrange", OptKind::BlockSizeRange, None,
        "Block sizes drawn from a range per I/O, `min-max` (per direction `r,w`): multiples of min when min is a power of two, as fio; overrides bs."), &["blocksize_range"]),
    opt("bssplit", OptKind::BlockSizeSplit, None,
        "Weighted block sizes per I/O, `size/percent:size/percent` (per direction `r,w`; an empty percent shares the rest equally, more than 100 % in all is an error); overrides bs and bsrange."),
    opt("iodepth", OptKind::Int { min: 1, max: 65535 }, Some("1"),
        "Number of I/Os kept in flight (async engines: libaio, io_uring; psync/sync/pvsync issue one at a time)."),
    opt("numjobs", OptKind::Int { min: 1, max: 4096 }, Some("1"),
        "Number of clones of this job."),
    opt("size", OptKind::Size, None,
        "Bytes of I/O per job (bytes, % of the device, or zones with the z suffix); unset = from offset to the end of the device."),
    opt("offset", OptKind::Size, Some("0"),
        "Start of the job's I/O range (bytes, %, or zones)."),
    opt("offset_increment", OptKind::Size, Some("0"),
        "Added to offset for each numjobs clone: clone n starts at offset + n * offset_increment."),
    opt("zonemode", OptKind::Enum(&["none", "zbd"]), Some("none"),
        "none: ignore zones; zbd: honour zoned block device rules (sequential writes, open-zone limits, zone resets)."),
    opt("max_open_zones", OptKind::Int { min: 0, max: U32_MAX }, Some("0"),
        "Maximum zones open for writing across all jobs (0 = device limit)."),
    opt("job_max_open_zones", OptKind::Int { min: 0, max: U32_MAX }, Some("0"),
        "Maximum zones open for writing by one job (0 = no per-job limit)."),
    opt("zone_reset_threshold", OptKind::Float { min: 0.0, max: 1.0 }, Some("0"),
        "Fraction of the I/O range written above which zones are reset as zone_reset_frequency says."),
    opt("zone_reset_frequency", OptKind::Float { min: 0.0, max: 1.0 }, Some("0"),
        "Once over zone_reset_threshold, reset a zone every 1/zone_reset_frequency writes (0 = never)."),
    opt("ioengine", OptKind::Enum(&["psync", "sync", "libaio", "io_uring", "pvsync", "spdk"]), Some("psync"),
        "I/O engine: psync/sync/pvsync = one synchronous I/O per job; libaio/io_uring = iodepth I/Os outstanding through the kernel (host_stack io-uring-none unless set); spdk (fio's SPDK plugin) = iodepth outstanding through a user-space polled driver (host_stack spdk)."),
    opt("cpus_allowed", OptKind::Str, None,
        "CPUs the job's threads may run on, a list of numbers and ranges (`0-9`, `10-19,30`). Polled jobs (ioengine=spdk) are always runnable: when more of them share a set than it has CPUs, they time-share (docs/bench.md). Unset: enough CPUs."),
    opt("direct", OptKind::Bool, Some("0"),
        "Use non-buffered (O_DIRECT) I/O; required for writes with zonemode=zbd."),
    opt("time_based", OptKind::Bool, Some("0"),
        "Run for runtime even when size is done, wrapping around the I/O range (needs a runtime)."),
    aliased(opt("runtime", OptKind::Time { default_unit_us: SECS }, None,
        "Limit the run to this long (plain number = seconds; 0 = no limit, as in fio)."), &["timeout"]),
    opt("ramp_time", OptKind::Time { default_unit_us: SECS }, Some("0"),
        "Run this long before starting to log statistics (plain number = seconds)."),
    opt("startdelay", OptKind::Time { default_unit_us: SECS }, Some("0"),
        "Delay the start of the job by this long after its group starts (plain number = seconds)."),
    opt("thinktime", OptKind::Time { default_unit_us: 1 }, Some("0"),
        "Stall this long after each I/O completes before issuing the next (plain number = microseconds)."),
    aliased(opt("io_size", OptKind::Size, None,
        "Total bytes of I/O to do, if different from size (the range stays size)."), &["io_limit"]),
    opt("loops", OptKind::Int { min: 1, max: 1_000_000 }, Some("1"),
        "Run the job this many times over its range, as fio does (the I/O amount is size x loops; sequential jobs start over at the range's start, on zoned devices resetting the zones they refill)."),
    opt("number_ios", OptKind::Int { min: 0, max: i64::MAX }, Some("0"),
        "Stop after this many I/Os (0 = no limit)."),
    opt("flow", OptKind::Int { min: -1000, max: 1000 }, Some("0"),
        "Flow-control weight (fio >= 3.23 semantics): the jobs of one flow_id are throttled so each job's share of the group's I/O count stays at most its share of the weights. The weight is |flow| (older fio used the sign to pick a side; a negative value is taken as its magnitude)."),
    opt("flow_id", OptKind::Int { min: 0, max: U32_MAX }, Some("0"),
        "Flow group the job's flow weight belongs to."),
    opt("rate", OptKind::Rate, None,
        "Bandwidth cap in bytes/s, read[,write] (e.g. 100m, ,50m)."),
    opt("rate_iops", OptKind::Rate, None,
        "IOPS cap, read[,write]."),
    opt("group_reporting", OptKind::Bool, Some("0"),
        "Report the jobs of a group (numjobs clones, stonewall groups) together."),
    opt("percentile_list", OptKind::PercentileList, Some(DEFAULT_PERCENTILES),
        "Completion/total latency percentiles to report."),
    opt("lat_percentiles", OptKind::Bool, Some("0"),
        "Report percentiles of total latency (submission + completion)."),
    opt("clat_percentiles", OptKind::Bool, Some("1"),
        "Report percentiles of completion latency."),
    opt("randrepeat", OptKind::Bool, Some("1"),
        "Seed the random generators predictably so runs repeat."),
    opt("randseed", OptKind::Int { min: 0, max: i64::MAX }, None,
        "Seed for the random generators (unset = znskit's fixed default seed)."),
    opt("norandommap", OptKind::Bool, Some("0"),
        "Random I/O need not cover every block exactly once."),
    opt("random_distribution", OptKind::Str, Some("random"),
        "Where random I/O falls: random (uniform), zipf:THETA[:CENTER], pareto:H[:CENTER] (pareto:0.2 = 80 % of the I/O on 20 % of the blocks), normal:DEV[:CENTER] (DEV % of the range), zoned:A/R:… (A % of the I/O on the next R % of the range). Without CENTER the hot blocks of zipf/pareto are spread over the range as fio's hashing spreads them; non-uniform distributions use no random map. zonemode=zbd: random reads only (docs/bench.md)."),
    opt("fsync", OptKind::Int { min: 0, max: i64::MAX }, Some("0"),
        "Every this many writes, wait for the job's I/O in flight and issue a flush (NVMe Flush, what fsync of a block device sends); its latency is reported as sync. 0 = never."),
    opt("fdatasync", OptKind::Int { min: 0, max: i64::MAX }, Some("0"),
        "As fsync (a block device has no metadata to leave out: the same NVMe Flush)."),
    opt("end_fsync", OptKind::Bool, Some("0"),
        "Flush once when the job's I/O is done (timed, reported as sync)."),
    opt("fsync_on_close", OptKind::Bool, Some("0"),
        "As end_fsync: the job's one file is closed when its I/O is done."),
    opt("exitall", OptKind::Bool, Some("0"),
        "When this job finishes, stop every other running job (their reports cover what they did until then)."),
    aliased(opt("stonewall", OptKind::Bool, Some("0"),
        "Wait for all earlier jobs to finish before starting; starts a new reporting group."), &["wait_for_previous"]),
    opt("verify", OptKind::Enum(&["0", "none", "crc32c", "crc32c-intel", "md5"]), Some("0"),
        "Write blocks that can be checked (a header with the block's offset and a crc32c or md5 checksum) and check them: a write job reads back what it wrote when its writes are done (do_verify), a read job checks every block it reads (docs/bench.md, Verify). The devices keep their data in memory for the run."),
    opt("do_verify", OptKind::Bool, Some("1"),
        "With verify=, a write job reads back and checks what it wrote once its writes are done."),
    opt("verify_fatal", OptKind::Bool, Some("0"),
        "Accepted as fio's: here, as fio does without continue_on_error, the first bad block ends the job (error 84, EILSEQ) whether it is set or not."),
    opt("write_lat_log", OptKind::LogPrefix, None,
        "Write every I/O's latencies as fio does: PREFIX_lat.N.log, PREFIX_clat.N.log, PREFIX_slat.N.log (N = the job's number, from 1), lines `msec, nsec, direction, bytes[, offset], prio` (docs/bench.md)."),
    opt("write_bw_log", OptKind::LogPrefix, None,
        "Write bandwidth samples as fio does: PREFIX_bw.N.log (per I/O: bytes x 10^6 / clat ns, as fio 3.33 logs; with log_avg_msec: KiB/s per window)."),
    opt("write_iops_log", OptKind::LogPrefix, None,
        "Write IOPS samples as fio does: PREFIX_iops.N.log (per I/O: 1; with log_avg_msec: I/Os per second per window)."),
    opt("log_avg_msec", OptKind::Int { min: 0, max: 86_400_000 }, Some("0"),
        "Average the log samples over windows of this many milliseconds (0 = one line per I/O)."),
    opt("log_offset", OptKind::Bool, Some("0"),
        "Add each I/O's byte offset to the per-I/O log lines."),
    opt("description", OptKind::Str, None,
        "Text describing the job, as in fio (kept in the report's job options; no effect on the run)."),
    opt("kb_base", OptKind::Enum(&["1024"]), Some("1024"),
        "fio's unit base; 1024 only, fio's default (k, K and KB are 1024; KiB is 1000, as fio reads it with this base): kb_base=1000 is not supported."),
    opt("thread", OptKind::Bool, Some("0"),
        "Accepted for compatibility (fio threads vs processes); no effect in znskit."),
    ext("zone_append", OptKind::Bool, Some("0"),
        "znskit extension (also the name used by fio's SPDK/xNVMe plugins): issue writes as NVMe Zone Append commands; the device picks the LBA, so iodepth>1 may target one zone."),
    ext("host_stack", OptKind::Enum(&HostStack::NAMES), None,
        "znskit extension: host I/O path to model: spdk (user-space polled), io-uring-none (kernel, none scheduler), io-uring-mq-deadline (kernel, mq-deadline serializes writes per zone). Unset = derived from ioengine."),
    ext("zone_op", OptKind::Enum(&["reset", "finish", "open", "close"]), None,
        "znskit extension: instead of data I/O, issue one timed zone-management command per zone of the job's range (iodepth at a time), after writing the zone to zone_fill if given; latencies are reported under the op's name. An open or a close is followed by a reset (a closed zone stays active), so the device stays within its open/active limits; the resets are reported under their own name."),
    ext("precondition", OptKind::Enum(&["none", "fill", "cold"]), Some("none"),
        "znskit extension: device state before the group's timed part: none (as is), fill (write the job's range first: every zone to zone_fill, a conventional range in full), cold (fill, flush, and wait until all of it is programmed to flash so nothing is served from the write buffer)."),
    ext("zone_fill", OptKind::ZoneFill, Some("100%"),
        "znskit extension: occupancy each zone is written to by precondition and, with zone_op, before each zone-management command (an empty zone is first opened explicitly, as the characterisation benchmarks do): P% of capacity, a size, or P%-SIZE (100%-4k = all but one 4 KiB block)."),
    ext("zone_write_limit", OptKind::Size, None,
        "znskit extension: zonemode=zbd sequential writes put at most this many bytes in a zone, then finish it (the finish is timed and reported) and move to the next zone; e.g. bs=4k zone_write_limit=4k makes every write the implicit open of an empty zone."),
    ext("zrwa", OptKind::Bool, Some("0"),
        "znskit extension: zonemode=zbd writes open each zone explicitly with a Zone Random Write Area; with rw=randwrite they land at random offsets inside the ZRWA window above the write pointer (in-place overwrites)."),
    ext("zrwa_flush_bytes", OptKind::Size, None,
        "znskit extension: with zrwa=1 sequential writes, issue an explicit ZRWA flush after every this many bytes of a zone (timed and reported as zrwa_flush)."),
    ext("untimed", OptKind::Bool, Some("0"),
        "znskit extension: preconditioning — the job's writes (its own offsets and sizes; numjobs clones interleaved one I/O at a time) change the device's state (data, an FTL's page map, invalidations and GC decisions) at no virtual time and with no die, bus or controller time: the job reports its bytes and I/Os, no latencies. Write-only jobs on an emulated conventional namespace, without time_based, rate or rate_iops."),
    ext("nsid", OptKind::Int { min: 1, max: U32_MAX }, None,
        "znskit extension: namespace of a multi-namespace profile to use (default: the first zoned namespace, else namespace 1)."),
];

/// Look an option up by name or alias (exact, case-sensitive like fio).
pub fn find_option(name: &str) -> Option<&'static OptionDef> {
    OPTIONS
        .iter()
        .find(|d| d.name == name || d.aliases.contains(&name))
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The known option name closest to `name`, if any is reasonably close.
pub fn suggest_option(name: &str) -> Option<&'static str> {
    if name.len() > 64 {
        return None; // no option is that long; keep the edit distance cheap
    }
    let lower = name.to_ascii_lowercase();
    let mut best: Option<(usize, &'static str)> = None;
    for d in OPTIONS {
        for cand in std::iter::once(&d.name).chain(d.aliases.iter()) {
            let dist = levenshtein(&lower, cand);
            if best.map_or(true, |(b, _)| dist < b) {
                best = Some((dist, d.name));
            }
        }
    }
    let limit = (name.chars().count() / 3).max(2);
    best.filter(|(d, _)| *d <= limit).map(|(_, n)| n)
}

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

/// A size as written: resolved against a device later.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeSpec {
    Bytes(u64),
    /// Percent of the device capacity, in (0, 100].
    Percent(f64),
    /// A number of zones (`8z`).
    Zones(u64),
}

impl SizeSpec {
    /// Bytes on a device of `capacity` bytes with zones of `zone_size`
    /// bytes. Percentages round down to a multiple of `align` (use the block
    /// size, or 1). Saturates instead of overflowing.
    pub fn resolve(&self, capacity: u64, zone_size: u64, align: u64) -> u64 {
        match *self {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Zones(z) => z.saturating_mul(zone_size),
            SizeSpec::Percent(p) => {
                let raw = (capacity as f64 * p / 100.0) as u64;
                let align = align.max(1);
                raw - raw % align
            }
        }
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeSpec::Bytes(b) => write!(f, "{b}"),
            SizeSpec::Percent(p) => write!(f, "{p}%"),
            SizeSpec::Zones(z) => write!(f, "{z}z"),
        }
    }
}

/// Per-direction limit; `None` = unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateSpec {
    pub read: Option<u64>,
    pub write: Option<u64>,
}

/// A parsed option value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    /// The canonical word from the option's [`OptKind::Enum`] list.
    Enum(&'static str),
    Bool(bool),
    Int(i64),
    Float(f64),
    Size(SizeSpec),
    Time(Duration),
    Rate(RateSpec),
    List(Vec<f64>),
    Fill(ZoneFill),
    /// Block sizes per direction: read, write, trim (`None` = default).
    Sizes([Option<BlockSizeDist>; 3]),
}

/// How a job picks each I/O's size in one direction (fio's `bs`,
/// `bsrange` and `bssplit`).
#[derive(Debug, Clone, PartialEq)]
pub enum BlockSizeDist {
    Fixed(u64),
    /// Uniform in `min..=max`, in steps of `min` when it is a power of two
    /// (fio without `bs_unaligned`), else of 512 bytes.
    Range {
        min: u64,
        max: u64,
    },
    /// (bytes, percent) sorted by size; the percents add up to 100 (what a
    /// split leaves unassigned goes to its largest size, as in fio).
    Split(Vec<(u64, f64)>),
}

impl BlockSizeDist {
    pub fn min_bytes(&self) -> u64 {
        match self {
            BlockSizeDist::Fixed(b) => *b,
            BlockSizeDist::Range { min, .. } => *min,
            BlockSizeDist::Split(v) => v.iter().map(|e| e.0).min().unwrap_or(4096),
        }
    }

    pub fn max_bytes(&self) -> u64 {
        match self {
            BlockSizeDist::Fixed(b) => *b,
            BlockSizeDist::Range { max, .. } => *max,
            BlockSizeDist::Split(v) => v.iter().map(|e| e.0).max().unwrap_or(4096),
        }
    }

    /// Step of a range's sizes.
    pub fn range_step_bytes(min: u64) -> u64 {
        if min.is_power_of_two() {
            min
        } else {
            512
        }
    }

    /// Every size this distribution can give (a range: its smallest and
    /// largest, plus the step that separates them), for checks against a
    /// device's block size and transfer limit.
    pub fn sizes_to_check(&self) -> Vec<u64> {
        match self {
            BlockSizeDist::Fixed(b) => vec![*b],
            BlockSizeDist::Range { min, max } => {
                let step = Self::range_step_bytes(*min);
                let largest = max - (max - min) % step;
                vec![*min, step, largest]
            }
            BlockSizeDist::Split(v) => v.iter().map(|e| e.0).collect(),
        }
    }

    /// The next I/O's size. `uniform_below(n)` draws uniformly from `0..n`;
    /// a fixed size draws nothing, so plain `bs` jobs keep their random
    /// sequence.
    pub fn pick(&self, mut uniform_below: impl FnMut(u64) -> u64) -> u64 {
        match self {
            BlockSizeDist::Fixed(b) => *b,
            BlockSizeDist::Range { min, max } => {
                let step = Self::range_step_bytes(*min);
                min + uniform_below((max - min) / step + 1) * step
            }
            BlockSizeDist::Split(v) => {
                // percent in 1/10000ths, so 33.33 % splits stay exact enough
                let draw = uniform_below(1_000_000) as f64 / 10_000.0;
                let mut acc = 0.0;
                for (bytes, pct) in v {
                    acc += pct;
                    if draw < acc {
                        return *bytes;
                    }
                }
                v.last().map_or(4096, |e| e.0)
            }
        }
    }
}

/// Which fio logs a job writes: each a file name prefix (the job's name
/// when the option was given bare).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LogSpec {
    pub lat: Option<String>,
    pub bw: Option<String>,
    pub iops: Option<String>,
    /// Window of averaged samples, ms (0: one line per I/O).
    pub avg_msec: u64,
    /// Per-I/O lines carry the I/O's byte offset.
    pub offset: bool,
}

impl LogSpec {
    pub fn any(&self) -> bool {
        self.lat.is_some() || self.bw.is_some() || self.iops.is_some()
    }
}

/// The block size distributions of a job, per direction.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockSizes {
    pub read: BlockSizeDist,
    pub write: BlockSizeDist,
    /// Of `rw=trim`/`randtrim` jobs.
    pub trim: BlockSizeDist,
}

/// An I/O's direction, as fio counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ddir {
    Read,
    Write,
    Trim,
}

impl Ddir {
    /// fio's number for the direction (its log files' third column).
    pub fn fio_index(self) -> u8 {
        match self {
            Ddir::Read => 0,
            Ddir::Write => 1,
            Ddir::Trim => 2,
        }
    }
}

impl BlockSizes {
    pub fn for_dir(&self, dir: Ddir) -> &BlockSizeDist {
        match dir {
            Ddir::Read => &self.read,
            Ddir::Write => &self.write,
            Ddir::Trim => &self.trim,
        }
    }

    /// The block sizes of `bs`, `bsrange` and `bssplit` option texts (fio's
    /// precedence: bssplit over bsrange over bs, per direction): for
    /// reports, which have the options as text.
    pub fn from_option_texts(
        bs: Option<&str>,
        bsrange: Option<&str>,
        bssplit: Option<&str>,
    ) -> BlockSizes {
        let parse =
            |kind: OptKind, text: Option<&str>| match text.map(|t| parse_block_sizes(kind, t)) {
                Some(Ok(v)) => v,
                _ => [None, None, None],
            };
        combine_block_sizes(
            &parse(OptKind::BlockSize, bs),
            &parse(OptKind::BlockSizeRange, bsrange),
            &parse(OptKind::BlockSizeSplit, bssplit),
        )
    }
}

/// Per direction: bssplit, else bsrange, else bs, else 4 KiB.
fn combine_block_sizes(
    bs: &[Option<BlockSizeDist>; 3],
    range: &[Option<BlockSizeDist>; 3],
    split: &[Option<BlockSizeDist>; 3],
) -> BlockSizes {
    let dir = |i: usize| {
        split[i]
            .clone()
            .or_else(|| range[i].clone())
            .or_else(|| bs[i].clone())
            .unwrap_or(BlockSizeDist::Fixed(4096))
    };
    BlockSizes {
        read: dir(0),
        write: dir(1),
        trim: dir(2),
    }
}

fn checked_block_size(text: &str) -> Result<u64, Reject> {
    let b = parse_bytes(text.trim()).map_err(|_| Reject::Bad)?;
    if b == 0 || b % 512 != 0 {
        // fio's kb_base=1024 reads the IEC-looking `KiB` as 1000
        let hint = if text.to_ascii_lowercase().contains("ib") {
            " (fio reads KiB/MiB as powers of 1000 with its default kb_base=1024: write 4k for 4096 bytes)"
        } else {
            ""
        };
        return Err(Reject::Range(format!(
            "block size {b} bytes is not a positive multiple of 512{hint}"
        )));
    }
    Ok(b)
}

/// fio's per-direction lists: `r[,w[,t]]`; a single value applies to all
/// three, a list's last value to the directions after it unless the list
/// ends with a comma, an empty side keeps the default.
fn parse_block_sizes(kind: OptKind, text: &str) -> Result<[Option<BlockSizeDist>; 3], Reject> {
    let sides: Vec<&str> = text.split(',').collect();
    if sides.len() > 3 {
        return Err(Reject::Bad);
    }
    let one = |side: &str| -> Result<Option<BlockSizeDist>, Reject> {
        let side = side.trim();
        if side.is_empty() {
            return Ok(None);
        }
        Ok(Some(match kind {
            OptKind::BlockSizeRange => {
                let (a, b) = side.split_once('-').ok_or(Reject::Bad)?;
                let (min, max) = (checked_block_size(a)?, checked_block_size(b)?);
                if min > max {
                    return Err(Reject::Range(format!("range {side}: {min} > {max} bytes")));
                }
                if min == max {
                    BlockSizeDist::Fixed(min)
                } else {
                    BlockSizeDist::Range { min, max }
                }
            }
            OptKind::BlockSizeSplit => parse_split(side)?,
            _ => BlockSizeDist::Fixed(checked_block_size(side)?),
        }))
    };
    let mut out = [None, None, None];
    for (i, side) in sides.iter().enumerate() {
        out[i] = one(side)?;
    }
    // the last given value carries on to later directions, unless the text
    // ended with a comma (that direction then keeps its default)
    if sides.len() < 3 {
        let last = out[sides.len() - 1].clone();
        for slot in out.iter_mut().skip(sides.len()) {
            *slot = last.clone();
        }
    }
    Ok(out)
}

fn parse_split(text: &str) -> Result<BlockSizeDist, Reject> {
    let mut given: Vec<(u64, Option<f64>)> = Vec::new();
    for entry in text.split(':') {
        let (size, pct) = match entry.split_once('/') {
            Some((s, p)) => (s, Some(p.trim())),
            None => (entry, None),
        };
        let bytes = checked_block_size(size)?;
        let pct = match pct {
            None | Some("") => None,
            Some(p) => {
                let x: f64 = p.parse().map_err(|_| Reject::Bad)?;
                if !(x.is_finite() && (0.0..=100.0).contains(&x)) {
                    return Err(Reject::Range(format!("percentage {x} is not in 0..=100")));
                }
                Some(x)
            }
        };
        given.push((bytes, pct));
    }
    let assigned: f64 = given.iter().filter_map(|e| e.1).sum();
    if assigned > 100.0 + 1e-9 {
        return Err(Reject::Range(format!(
            "the percentages add up to {assigned} (more than 100)"
        )));
    }
    let open = given.iter().filter(|e| e.1.is_none()).count();
    let share = if open > 0 {
        (100.0 - assigned) / open as f64
    } else {
        0.0
    };
    let mut v: Vec<(u64, f64)> = given
        .into_iter()
        .map(|(b, p)| (b, p.unwrap_or(share)))
        .collect();
    v.sort_by_key(|e| e.0);
    let total: f64 = v.iter().map(|e| e.1).sum();
    if total <= 0.0 {
        return Err(Reject::Range("every percentage is 0".into()));
    }
    if let Some(last) = v.last_mut() {
        // what the split leaves unassigned goes to the largest size
        last.1 += 100.0 - total;
    }
    Ok(BlockSizeDist::Split(v))
}

/// Occupancy of a zone (`zone_fill`): `percent`% of the zone capacity minus
/// `minus_bytes`, or exactly `bytes`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZoneFill {
    Percent { percent: f64, minus_bytes: u64 },
    Bytes(u64),
}

impl ZoneFill {
    /// Bytes to write in a zone of `cap_bytes` capacity, rounded down to
    /// whole `lba` blocks and capped at the capacity.
    pub fn resolve(&self, cap_bytes: u64, lba: u64) -> u64 {
        let raw = match *self {
            ZoneFill::Bytes(b) => b,
            ZoneFill::Percent {
                percent,
                minus_bytes,
            } => ((cap_bytes as f64 * percent / 100.0) as u64).saturating_sub(minus_bytes),
        };
        let raw = raw.min(cap_bytes);
        raw - raw % lba.max(1)
    }
}

/// Parse a `zone_fill` value: `P%`, a size, or `P%-SIZE`.
pub fn parse_zone_fill(s: &str) -> Option<ZoneFill> {
    let s = s.trim();
    if let Some((p, rest)) = s.split_once('%') {
        let percent: f64 = p.trim().parse().ok()?;
        if !(percent.is_finite() && (0.0..=100.0).contains(&percent)) {
            return None;
        }
        let rest = rest.trim();
        let minus_bytes = match rest.strip_prefix('-') {
            Some(m) => parse_bytes(m).ok()?,
            None if rest.is_empty() => 0,
            None => return None,
        };
        return Some(ZoneFill::Percent {
            percent,
            minus_bytes,
        });
    }
    parse_bytes(s).ok().map(ZoneFill::Bytes)
}

/// Parse a size: bytes, `N%` or `Nz`.
pub fn parse_size(s: &str) -> Option<SizeSpec> {
    let s = s.trim();
    if let Some(p) = s.strip_suffix('%') {
        let p: f64 = p.trim().parse().ok()?;
        return (p.is_finite() && p > 0.0 && p <= 100.0).then_some(SizeSpec::Percent(p));
    }
    if let Some(z) = s.strip_suffix('z').or_else(|| s.strip_suffix('Z')) {
        let z = z.trim();
        if !z.is_empty() && z.chars().all(|c| c.is_ascii_digit()) {
            return z.parse().ok().map(SizeSpec::Zones);
        }
        return None;
    }
    parse_bytes(s).ok().map(SizeSpec::Bytes)
}

/// Parse a duration; a plain number is in `default_unit_us` microseconds.
pub fn parse_time(s: &str, default_unit_us: u64) -> Option<Duration> {
    let s = s.trim();
    let (num, suffix) = split_number(s);
    if num.is_empty() {
        return None;
    }
    let n: u64 = num.parse().ok()?;
    let unit_us: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" => default_unit_us,
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" | "sec" => SECS,
        "m" | "min" => 60 * SECS,
        "h" => 3600 * SECS,
        "d" => 86_400 * SECS,
        _ => return None,
    };
    n.checked_mul(unit_us).map(Duration::from_micros)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Why a value was rejected: malformed, or well-formed but out of range.
enum Reject {
    Bad,
    Range(String),
}

fn parse_value(def: &OptionDef, raw: Option<&str>) -> Result<Value, Reject> {
    let s = match raw {
        None if def.kind == OptKind::Bool => return Ok(Value::Bool(true)),
        // a bare log option: named after the job
        None if def.kind == OptKind::LogPrefix => return Ok(Value::Str(String::new())),
        None => return Err(Reject::Bad),
        Some(s) => s.trim(),
    };
    match def.kind {
        OptKind::LogPrefix => Ok(Value::Str(s.to_string())),
        OptKind::Str => {
            if s.is_empty() {
                Err(Reject::Bad)
            } else {
                Ok(Value::Str(s.to_string()))
            }
        }
        OptKind::Enum(words) => words
            .iter()
            .find(|w| **w == s)
            .map(|w| Value::Enum(w))
            .ok_or(Reject::Bad),
        OptKind::Bool => parse_bool(s).map(Value::Bool).ok_or(Reject::Bad),
        OptKind::BlockSize | OptKind::BlockSizeRange | OptKind::BlockSizeSplit => {
            parse_block_sizes(def.kind, s).map(Value::Sizes)
        }
        OptKind::Size => {
            if let Some(p) = s.strip_suffix('%') {
                if let Ok(p) = p.trim().parse::<f64>() {
                    if !(p.is_finite() && p > 0.0 && p <= 100.0) {
                        return Err(Reject::Range(format!("percentage {p} is not in (0, 100]")));
                    }
                }
            }
            parse_size(s).map(Value::Size).ok_or(Reject::Bad)
        }
        OptKind::Int { min, max } => {
            let n: i64 = s.parse().map_err(|_| Reject::Bad)?;
            if n < min || n > max {
                return Err(Reject::Range(format!("{n} is not in {min}..={max}")));
            }
            Ok(Value::Int(n))
        }
        OptKind::Float { min, max } => {
            let x: f64 = s.parse().map_err(|_| Reject::Bad)?;
            if !x.is_finite() {
                return Err(Reject::Bad);
            }
            if x < min || x > max {
                return Err(Reject::Range(format!("{x} is not in {min}..={max}")));
            }
            Ok(Value::Float(x))
        }
        OptKind::Time { default_unit_us } => parse_time(s, default_unit_us)
            .map(Value::Time)
            .ok_or(Reject::Bad),
        OptKind::Rate => {
            let mut parts = s.split(',');
            let side = |p: Option<&str>| -> Result<Option<u64>, Reject> {
                match p.map(str::trim) {
                    None | Some("") => Ok(None),
                    Some(p) => parse_bytes(p).map(Some).map_err(|_| Reject::Bad),
                }
            };
            let first = parts.next();
            let second = parts.next();
            if parts.next().is_some() {
                return Err(Reject::Bad);
            }
            let read = side(first)?;
            let rate = match second {
                None => RateSpec { read, write: read },
                Some(_) => RateSpec {
                    read,
                    write: side(second)?,
                },
            };
            if rate.read.is_none() && rate.write.is_none() {
                return Err(Reject::Bad);
            }
            Ok(Value::Rate(rate))
        }
        OptKind::ZoneFill => parse_zone_fill(s).map(Value::Fill).ok_or(Reject::Bad),
        OptKind::PercentileList => {
            let mut out = Vec::new();
            for p in s.split(':') {
                let x: f64 = p.trim().parse().map_err(|_| Reject::Bad)?;
                if !(x.is_finite() && x > 0.0 && x <= 100.0) {
                    return Err(Reject::Range(format!("percentile {x} is not in (0, 100]")));
                }
                out.push(x);
            }
            if out.len() > 20 {
                return Err(Reject::Range(format!(
                    "{} percentiles given, at most 20 allowed",
                    out.len()
                )));
            }
            Ok(Value::List(out))
        }
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Where an option came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// Line of a job file (1-based).
    Line { file: String, line: usize },
    /// Command-line argument (0-based index among the parsed args).
    Arg { index: usize, arg: String },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line { file, line } => write!(f, "{file}:{line}"),
            Location::Arg { index, arg } => write!(f, "argument {index} `{arg}`"),
        }
    }
}

fn did_you_mean(s: &Option<&'static str>) -> String {
    match s {
        Some(n) => format!(" (did you mean `{n}`?)"),
        None => String::new(),
    }
}

/// User text quoted in an error, cut to 80 characters: a 10 MB option
/// name must not make a 10 MB message.
fn clip(text: &str) -> String {
    const MAX_CHARS: usize = 80;
    match text.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
        None => text.to_string(),
    }
}

#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum JobError {
    #[error("{at}: unknown option `{}`{}", clip(.option), did_you_mean(.suggestion))]
    UnknownOption {
        at: Location,
        option: String,
        suggestion: Option<&'static str>,
    },
    #[error("{at}: bad value `{}` for option `{option}`: expected {expected}", clip(.value))]
    BadValue {
        at: Location,
        option: String,
        value: String,
        expected: String,
    },
    #[error("{at}: value `{}` out of range for option `{option}`: {reason}", clip(.value))]
    OutOfRange {
        at: Location,
        option: String,
        value: String,
        reason: String,
    },
    #[error("{at}: duplicate job section `{}`", clip(.section))]
    DuplicateSection { at: Location, section: String },
    #[error("{at}: option `{}` appears before any [section]", clip(.option))]
    OutsideSection { at: Location, option: String },
    #[error("{at}: cannot parse `{}`: {reason}", clip(.text))]
    Syntax {
        at: Location,
        text: String,
        reason: String,
    },
    #[error("{at}: job `{}`: {reason}", clip(.job))]
    Conflict {
        at: Location,
        job: String,
        reason: String,
    },
    #[error("no jobs defined{}", .0.as_ref().map(|f| format!(" in {f}")).unwrap_or_default())]
    NoJobs(Option<String>),
}

// ---------------------------------------------------------------------------
// Typed job
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// Options of one job (or of the running global set), keyed by canonical
/// option name.
#[derive(Debug, Clone, Default)]
struct OptSet {
    values: HashMap<&'static str, Value>,
    /// The text each option was given as (bare flags as "1"), for reports,
    /// in the order given (fio's `job options` keep it).
    raw: indexmap::IndexMap<&'static str, String>,
    /// `name=` was given in this job's own section (not inherited).
    name_set_locally: bool,
}

impl OptSet {
    fn set(&mut self, name: &str, raw: Option<&str>, at: &Location) -> Result<(), JobError> {
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

struct Section {
    name: String,
    at: Location,
    opts: OptSet,
}

/// Collects sections in order, applying each `[global]` to later jobs only.
#[derive(Default)]
struct Builder {
    global: OptSet,
    jobs: Vec<Section>,
    in_global: bool,
}

impl Builder {
    fn start_job(&mut self, name: &str, at: Location) -> Result<(), JobError> {
        if self.jobs.iter().any(|j| j.name == name) {
            return Err(JobError::DuplicateSection {
                at,
                section: name.to_string(),
            });
        }
        self.in_global = false;
        let mut opts = self.global.clone();
        opts.name_set_locally = false;
        self.jobs.push(Section {
            name: name.to_string(),
            at,
            opts,
        });
        Ok(())
    }

    fn current(&mut self) -> Option<&mut OptSet> {
        if self.in_global {
            Some(&mut self.global)
        } else {
            self.jobs.last_mut().map(|j| &mut j.opts)
        }
    }

    fn finish(self, file: Option<&str>) -> Result<Vec<JobSpec>, JobError> {
        if self.jobs.is_empty() {
            return Err(JobError::NoJobs(file.map(str::to_string)));
        }
        let mut out = Vec::with_capacity(self.jobs.len());
        let mut group = 0u32;
        for (i, s) in self.jobs.into_iter().enumerate() {
            let spec = resolve(&s, group)?;
            if spec.stonewall && i > 0 {
                group = group.saturating_add(1);
            }
            let spec = JobSpec { group, ..spec };
            out.push(spec);
        }
        Ok(out)
    }
}

/// Parse an INI fio job file. `file` is used in error messages.
pub fn parse_job_file(text: &str, file: &str) -> Result<Vec<JobSpec>, JobError> {
    parse_job_file_with_args(text, file, &[] as &[&str])
}

/// Parse an INI fio job file with command-line job options given before it
/// (`fio --filename=/dev/nvme0n2 job.fio`): those `--option=value`
/// arguments act as an initial `[global]` section, so the file's own
/// `[global]` and job sections override them.
pub fn parse_job_file_with_args<S: AsRef<str>>(
    text: &str,
    file: &str,
    cli_globals: &[S],
) -> Result<Vec<JobSpec>, JobError> {
    let mut b = Builder::default();
    for (index, arg) in cli_globals.iter().enumerate() {
        let arg = arg.as_ref();
        let at = Location::Arg {
            index,
            arg: arg.to_string(),
        };
        let (key, value) = split_arg(arg, &at)?;
        if key == "name" {
            return Err(JobError::Syntax {
                at,
                text: arg.to_string(),
                reason: "--name cannot be combined with a job file".into(),
            });
        }
        b.global.set(key, value, &at)?;
    }
    let mut have_section = false;
    for (idx, raw_line) in text.lines().enumerate() {
        let at = Location::Line {
            file: file.to_string(),
            line: idx + 1,
        };
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            // (a comment may follow the header: `[job] ; why`, as fio allows)
            let rest = strip_trailing_comment(rest);
            let Some(name) = rest.strip_suffix(']') else {
                return Err(JobError::Syntax {
                    at,
                    text: line.to_string(),
                    reason: "section header is missing `]`".into(),
                });
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(JobError::Syntax {
                    at,
                    text: line.to_string(),
                    reason: "empty section name".into(),
                });
            }
            have_section = true;
            if name == "global" {
                b.in_global = true;
            } else {
                b.start_job(name, at)?;
            }
            continue;
        }
        // strip a trailing comment introduced by whitespace + ; or #
        let line = strip_trailing_comment(line);
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (line.trim(), None),
        };
        if key.is_empty() {
            return Err(JobError::Syntax {
                at,
                text: line.to_string(),
                reason: "missing option name before `=`".into(),
            });
        }
        if !have_section {
            return Err(JobError::OutsideSection {
                at,
                option: key.to_string(),
            });
        }
        match b.current() {
            Some(set) => set.set(key, value, &at)?,
            None => {
                return Err(JobError::OutsideSection {
                    at,
                    option: key.to_string(),
                })
            }
        }
    }
    b.finish(Some(file))
}

fn strip_trailing_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        if (c == b';' || c == b'#') && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            return line[..i].trim_end();
        }
    }
    line
}

/// Parse fio-style command-line job options (`--name=a --rw=write …`). Each
/// `--name` starts a new job; options before the first `--name` are global.
/// Only job options are accepted here (the caller handles `--output-format`
/// and job-file paths).
pub fn parse_args<I, S>(args: I) -> Result<Vec<JobSpec>, JobError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut b = Builder {
        in_global: true,
        ..Builder::default()
    };
    for (index, arg) in args.into_iter().enumerate() {
        let arg = arg.as_ref();
        let at = Location::Arg {
            index,
            arg: arg.to_string(),
        };
        let (key, value) = split_arg(arg, &at)?;
        if key == "name" {
            let name = value.map(str::trim).unwrap_or("");
            if name.is_empty() {
                return Err(JobError::BadValue {
                    at,
                    option: "name".into(),
                    value: String::new(),
                    expected: OptKind::Str.expected(),
                });
            }
            b.start_job(name, at)?;
            continue;
        }
        match b.current() {
            Some(set) => set.set(key, value, &at)?,
            None => {
                return Err(JobError::OutsideSection {
                    at,
                    option: key.to_string(),
                })
            }
        }
    }
    b.finish(None)
}

/// Split `--key[=value]`.
fn split_arg<'a>(arg: &'a str, at: &Location) -> Result<(&'a str, Option<&'a str>), JobError> {
    let syntax = |reason: &str| JobError::Syntax {
        at: at.clone(),
        text: arg.to_string(),
        reason: reason.into(),
    };
    let body = arg
        .strip_prefix("--")
        .ok_or_else(|| syntax("expected `--option=value`"))?;
    let (key, value) = match body.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v)),
        None => (body.trim(), None),
    };
    if key.is_empty() {
        return Err(syntax("missing option name"));
    }
    Ok((key, value))
}

/// One line per option (like `fio --cmdhelp`): name, aliases, default,
/// expected values, help; znskit extensions are marked.
pub fn option_help() -> String {
    let mut out = String::new();
    for d in OPTIONS {
        let mut head = d.name.to_string();
        if !d.aliases.is_empty() {
            head.push_str(&format!(" (alias {})", d.aliases.join(", ")));
        }
        if d.extension {
            head.push_str(" [znskit]");
        }
        let default = d
            .default
            .map(|v| format!(" Default: {v}."))
            .unwrap_or_default();
        out.push_str(&format!(
            "{head:<36} {} Takes {}.{default}\n",
            d.help,
            d.kind.expected()
        ));
    }
    out
}

/// fio's CPU list: numbers and `a-b` ranges separated by commas, sorted
/// and deduplicated (at most 4096 CPUs).
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    const MAX_CPUS: u32 = 4096;
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n < MAX_CPUS)
                .ok_or_else(|| format!("`{t}` is not a CPU number below {MAX_CPUS}"))
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        if a > b {
            return Err(format!("range `{part}` runs backwards"));
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        return Err("no CPU named".into());
    }
    Ok(cpus)
}

fn resolve(s: &Section, group: u32) -> Result<JobSpec, JobError> {
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

/// Jobs of several job files run one after another, as fio runs them:
/// each file's groups follow the previous file's (so every file starts a new
/// reporting group, as if its first job had `stonewall`), on the same
/// devices, so a read file can follow the file that writes its data.
pub fn chain_files(files: impl IntoIterator<Item = Vec<JobSpec>>) -> Vec<JobSpec> {
    let mut all: Vec<JobSpec> = Vec::new();
    for mut jobs in files {
        let base = all.last().map_or(0, |j| j.group + 1);
        for j in &mut jobs {
            j.group += base;
        }
        all.extend(jobs);
    }
    all
}

/// True when the job's `name` value was inherited from the global options
/// rather than set by the job itself.
fn global_name_only(s: &Section) -> bool {
    !s.opts.name_set_locally
}
