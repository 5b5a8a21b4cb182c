//! The option table: every job option znskit understands as one row of
//! [`OPTIONS`] (name, aliases, kind, default, help, whether it is a znskit
//! extension), the look-ups by name with a "did you mean", and the
//! `--cmdhelp` listing.

use zns_sim::timing::HostStack;

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

/// Microseconds in a second (durations are parsed in µs).
pub(super) const SECS: u64 = 1_000_000;
pub(super) const U32_MAX: i64 = u32::MAX as i64;

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
        "Where random I/O falls: random (uniform), zipf:THETA[:CENTER], pareto:H[:CENTER] (pareto:0.2 = 80 % of the I/O on 20 % of the blocks), normal:DEV[:CENTER] (DEV % of the range), zoned:A/R:… (A % of the I/O on the next R % of the range), zoned_abs:A/SIZE:… (the same with zones of SIZE bytes from the range's start, e.g. zoned_abs:60/20g:40/100g). Without CENTER the hot blocks of zipf/pareto are spread over the range as fio's hashing spreads them; non-uniform distributions use no random map. zonemode=zbd: random reads only (docs/bench.md)."),
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
