//! The values job options take: sizes (bytes, `%`, zones), block sizes
//! and their distributions, rates, durations, zone fills, CPU lists, log
//! names, and the parse of an option's text by its [`OptKind`].

use std::fmt;
use std::time::Duration;

use zns_target::size::parse_bytes;

use super::options::{OptKind, OptionDef};

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
pub(super) fn combine_block_sizes(
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

/// Parse a duration under znskit's one rule (`zns_target::parse_duration_ns`);
/// a plain number is in `default_unit_us` microseconds.
pub fn parse_time(s: &str, default_unit_us: u64) -> Option<Duration> {
    zns_target::parse_duration_ns(s, default_unit_us.checked_mul(1_000)?)
        .ok()
        .map(Duration::from_nanos)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Why a value was rejected: malformed, or well-formed but out of range.
pub(super) enum Reject {
    Bad,
    Range(String),
}

pub(super) fn parse_value(def: &OptionDef, raw: Option<&str>) -> Result<Value, Reject> {
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
