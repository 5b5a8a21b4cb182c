//! fio's normal (human-readable) output, rendered from fio's JSON layout.
//!
//! [`fio_text`] takes the document `RunReport::to_fio_json()` produces (the
//! layout of `fio --output-format=json`) and prints what `fio` itself prints
//! for the same numbers: the job banner, one block per job (IOPS/BW line,
//! slat/clat/lat lines, percentiles, bw/iops samples, latency distribution,
//! cpu, IO depths), the `Run status group` lines and the disk stats. Units
//! and number formatting follow fio's rules (see `stat.c` and
//! `lib/num2str.c` in fio), so scripts that scrape fio's text output read
//! this too:
//!
//! * counts and rates are printed with at most 4 significant digits and a
//!   unit prefix: `31.2k` IOPS, `1949MiB/s` (1024 base) with the 1000-base
//!   value in parentheses (`2043MB/s`), `118GiB` of I/O;
//! * latency lines switch from nsec to usec when min > 2000 ns, max >
//!   99999 ns and stdev > 1000 ns (to msec with the same thresholds × 1000);
//! * percentile blocks choose nsec/usec/msec from the smallest and largest
//!   percentile, round up when scaling, and print as many per line as fit
//!   in 80 columns.
//!
//! Zone-management operations znskit issues (the `reset`, `finish`, `open`,
//! `close` and `zrwa_flush` objects of a job) are not part of fio; they are
//! printed after the data directions as lines marked `[znskit]`.

use serde_json::Value;

/// What a number counts, for [`num2str`]'s suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    None,
    Byte,
    BytePerSec,
}

/// fio's `num2str`: `num` × `base` with at most `maxlen` digits (counting
/// the decimal point once decimals appear), a k/M/G… (`pow2` = false, 1000
/// base) or Ki/Mi/Gi… (1024 base) prefix and the unit.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, unit: Unit) -> String {
    const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let prefixes = if pow2 { &IEC } else { &SI };
    let unit_str = match unit {
        Unit::None => "",
        Unit::Byte => "B",
        Unit::BytePerSec => "B/s",
    };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post = 0usize;
    let mut b = base;
    while b > 1 {
        b /= thousand;
        post += 1;
    }
    let digits = |n: u64| n.to_string().len();
    let mut num = num;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < prefixes.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    let prefix = |post: usize| prefixes.get(post).copied().unwrap_or("");
    let Some(m) = modulo else {
        return format!("{num}{}{unit_str}", prefix(post));
    };
    let len = digits(num);
    if maxlen <= len + 1 {
        let num = num + u64::from(carry);
        return format!("{num}{}{unit_str}", prefix(post));
    }
    let decimals = maxlen - len - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    // "0.25" -> "25"; fio keeps the digits after "0." (a rounded-up "1.0"
    // keeps its "0", as fio does)
    let frac = frac.get(2..).unwrap_or("");
    format!("{num}.{frac}{}{unit_str}", prefix(post))
}

/// A number of a fio JSON document (0 when absent), as the text reads it.
pub(crate) fn f64_of(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(0.0)
}

/// A count of a fio JSON document (0 when absent or negative).
pub(crate) fn u64_of(v: Option<&Value>) -> u64 {
    match v {
        Some(x) => x
            .as_u64()
            .or_else(|| x.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .or_else(|| x.as_str().and_then(|s| s.trim().parse().ok()))
            .unwrap_or(0),
        None => 0,
    }
}

/// The data directions fio reports, with their run-status labels.
const DDIRS: [(&str, &str); 3] = [
    ("read", "   READ"),
    ("write", "  WRITE"),
    ("trim", "   TRIM"),
];

/// znskit zone-management operations a job may report (not fio).
pub const ZONE_OPS: [&str; 5] = ["reset", "finish", "open", "close", "zrwa_flush"];

/// A job option as a string: the job's own `job options`, then the
/// document's `global options`.
fn option<'a>(doc: &'a Value, job: &'a Value, names: &[&str]) -> Option<&'a str> {
    for scope in [job.get("job options"), doc.get("global options")]
        .into_iter()
        .flatten()
    {
        for n in names {
            if let Some(s) = scope.get(*n).and_then(Value::as_str) {
                return Some(s);
            }
        }
    }
    None
}

fn option_u64(doc: &Value, job: &Value, names: &[&str], default: u64) -> u64 {
    option(doc, job, names)
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

/// fio's boolean option spellings.
fn option_bool(doc: &Value, job: &Value, name: &str) -> bool {
    match option(doc, job, &[name]) {
        Some(s) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "" | "1" | "true" | "yes" | "on"
        ),
        None => false,
    }
}

/// Number of job clones a report entry stands for: znskit's `jobs` member
/// when present, else the `numjobs` option.
fn members(doc: &Value, job: &Value) -> u64 {
    job.get("jobs")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| option_u64(doc, job, &["numjobs"], 1).max(1))
}

/// Renders fio's normal output for a fio JSON document.
pub fn fio_text(doc: &Value) -> String {
    let mut out = String::new();
    let empty = Vec::new();
    let jobs = doc.get("jobs").and_then(Value::as_array).unwrap_or(&empty);
    banner(doc, jobs, &mut out);
    for job in jobs {
        job_status(doc, job, &mut out);
    }
    group_status(jobs, &mut out);
    disk_util(doc, &mut out);
    out
}

/// The lines fio prints before it starts: one per job section (clones shown
/// as `...`), the version and the number of processes.
fn banner(doc: &Value, jobs: &[Value], out: &mut String) {
    if jobs.is_empty() || !jobs.iter().all(|j| j.get("job options").is_some()) {
        return;
    }
    let mut processes = 0u64;
    let mut threads = false;
    let mut prev: Option<(&str, u64)> = None;
    for job in jobs {
        let name = job.get("jobname").and_then(Value::as_str).unwrap_or("");
        let gid = u64_of(job.get("groupid"));
        if prev == Some((name, gid)) {
            continue; // a clone of the section just printed
        }
        prev = Some((name, gid));
        let n = members(doc, job);
        processes += n;
        threads |= option_bool(doc, job, "thread");
        let rw = option(doc, job, &["rw", "readwrite"]).unwrap_or("read");
        let sizes = crate::job::BlockSizes::from_option_texts(
            option(doc, job, &["bs", "blocksize"]),
            option(doc, job, &["bsrange", "blocksize_range"]),
            option(doc, job, &["bssplit"]),
        );
        let range = |d: &crate::job::BlockSizeDist| {
            format!(
                "{}-{}",
                num2str(d.min_bytes(), 4, 1, true, Unit::Byte),
                num2str(d.max_bytes(), 4, 1, true, Unit::Byte)
            )
        };
        let engine = option(doc, job, &["ioengine"]).unwrap_or("psync");
        let depth = option_u64(doc, job, &["iodepth"], 1);
        out.push_str(&format!(
            "{name}: (g={gid}): rw={rw}, bs=(R) {}, (W) {}, (T) {}, ioengine={engine}, iodepth={depth}\n",
            range(&sizes.read),
            range(&sizes.write),
            range(&sizes.trim),
        ));
        if n > 1 {
            out.push_str("...\n");
        }
    }
    if let Some(v) = doc.get("fio version").and_then(Value::as_str) {
        out.push_str(v);
        out.push('\n');
    }
    let what = if threads { "thread" } else { "process" };
    let plural = if processes == 1 {
        ""
    } else if threads {
        "s"
    } else {
        "es"
    };
    out.push_str(&format!("Starting {processes} {what}{plural}\n\n"));
}

fn job_status(doc: &Value, job: &Value, out: &mut String) {
    let name = job.get("jobname").and_then(Value::as_str).unwrap_or("");
    let gid = u64_of(job.get("groupid"));
    let err = job.get("error").and_then(Value::as_i64).unwrap_or(0);
    let time = doc.get("time").and_then(Value::as_str).unwrap_or("");
    let pid = u64_of(job.get("pid"));
    out.push_str(&format!(
        "{name}: (groupid={gid}, jobs={}): err={err:2}: pid={pid}: {time}\n",
        members(doc, job)
    ));
    if let Some(desc) = job.get("desc").and_then(Value::as_str) {
        out.push_str(&format!("  Description  : [{desc}]\n"));
    }
    for (ddir, _) in DDIRS {
        if let Some(d) = job.get(ddir) {
            if u64_of(d.get("io_bytes")) > 0 {
                ddir_status(job, ddir, d, out);
            }
        }
    }
    for op in ZONE_OPS {
        if let Some(d) = job.get(op) {
            if u64_of(d.get("total_ios")) > 0 {
                zone_op_status(op, d, out);
            }
        }
    }
    if let Some(sync) = job.get("sync").filter(|d| u64_of(d.get("total_ios")) > 0) {
        // fio prints the flushes of fsync=/end_fsync this way
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        let lat = sync.get("lat_ns");
        display_lat(
            "sync",
            u64_of(lat.and_then(|l| l.get("min"))),
            u64_of(lat.and_then(|l| l.get("max"))),
            f64_of(lat.and_then(|l| l.get("mean"))),
            f64_of(lat.and_then(|l| l.get("stddev"))),
            out,
        );
    }
    latencies(job, out);
    out.push_str(&format!(
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}\n",
        f64_of(job.get("usr_cpu")),
        f64_of(job.get("sys_cpu")),
        u64_of(job.get("ctx")),
        u64_of(job.get("majf")),
        u64_of(job.get("minf")),
    ));
    let dist = |key: &str, labels: &[&str]| -> String {
        labels
            .iter()
            .map(|l| {
                let v = f64_of(job.get(key).and_then(|m| m.get(l.trim_start_matches('!'))));
                format!("{}={v:3.1}%", l.trim_start_matches('!'))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push_str(&format!(
        "  IO depths    : {}\n",
        dist("iodepth_level", &["1", "2", "4", "8", "16", "32", ">=64"])
    ));
    let sc = ["0", "4", "8", "16", "32", "64", ">=64"];
    out.push_str(&format!(
        "     submit    : {}\n",
        dist("iodepth_submit", &sc)
    ));
    out.push_str(&format!(
        "     complete  : {}\n",
        dist("iodepth_complete", &sc)
    ));
    let per_dir = |key: &str| -> String {
        DDIRS
            .iter()
            .map(|(d, _)| u64_of(job.get(*d).and_then(|x| x.get(key))).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    out.push_str(&format!(
        "     issued rwts: total={},{} short={},0 dropped={},0\n",
        per_dir("total_ios"),
        u64_of(job.get("sync").and_then(|d| d.get("total_ios"))),
        per_dir("short_ios"),
        per_dir("drop_ios")
    ));
    let depth = match job.get("latency_depth").and_then(Value::as_u64) {
        Some(d) => d,
        None => option_u64(doc, job, &["iodepth"], 1),
    };
    out.push_str(&format!(
        "     latency   : target={}, window={}, percentile={:.2}%, depth={depth}\n",
        u64_of(job.get("latency_target")),
        u64_of(job.get("latency_window")),
        job.get("latency_percentile")
            .and_then(Value::as_f64)
            .unwrap_or(100.0),
    ));
}

/// One data direction: the IOPS/BW line, latencies, percentiles, samples.
fn ddir_status(job: &Value, ddir: &str, d: &Value, out: &mut String) {
    let runtime = u64_of(d.get("runtime"));
    if runtime == 0 {
        return;
    }
    let io_bytes = u64_of(d.get("io_bytes"));
    let total = u64_of(d.get("total_ios"));
    let bw = (u128::from(io_bytes) * 1000 / u128::from(runtime)) as u64;
    let iops = (u128::from(total) * 1000 / u128::from(runtime)) as u64;
    let post = match job.get("zone_resets").and_then(Value::as_u64) {
        Some(n) if ddir != "read" => format!("; {n} zone resets"),
        _ => String::new(),
    };
    out.push_str(&format!(
        "  {ddir}: IOPS={}, BW={} ({})({}/{runtime}msec){post}\n",
        num2str(iops, 4, 1, false, Unit::None),
        num2str(bw, 4, 1, true, Unit::BytePerSec),
        num2str(bw, 4, 1, false, Unit::BytePerSec),
        num2str(io_bytes, 4, 1, true, Unit::Byte),
    ));
    lat_lines(d, out);
    samples(d, out);
}

/// A znskit zone-management operation (reset, finish, …): count, rate and
/// latencies, laid out like a data direction.
fn zone_op_status(op: &str, d: &Value, out: &mut String) {
    let runtime = u64_of(d.get("runtime"));
    let total = u64_of(d.get("total_ios"));
    let iops = if runtime == 0 {
        0.0
    } else {
        total as f64 * 1000.0 / runtime as f64
    };
    // zone-management rates are often below 1/s: keep two decimals there
    let iops = if iops < 100.0 {
        format!("{iops:.2}")
    } else {
        num2str(iops as u64, 4, 1, false, Unit::None)
    };
    out.push_str(&format!(
        "  {op}: IOPS={iops}, ops={total} ({runtime}msec) [znskit zone management]\n"
    ));
    lat_lines(d, out);
}

fn lat_lines(d: &Value, out: &mut String) {
    for (key, label) in [("slat_ns", "slat"), ("clat_ns", "clat"), ("lat_ns", " lat")] {
        if let Some(s) = d.get(key) {
            if u64_of(s.get("N")) > 0 {
                display_lat(
                    label,
                    u64_of(s.get("min")),
                    u64_of(s.get("max")),
                    f64_of(s.get("mean")),
                    f64_of(s.get("stddev")),
                    out,
                );
            }
        }
    }
    for (key, label) in [("slat_ns", "slat"), ("clat_ns", "clat"), ("lat_ns", "lat")] {
        if let Some(p) = d.get(key).and_then(|s| s.get("percentile")) {
            percentiles(label, p, out);
        }
    }
}

/// bw and iops sample lines (present when the run logged samples).
fn samples(d: &Value, out: &mut String) {
    let n = u64_of(d.get("bw_samples"));
    if n > 0 {
        let (mut min, mut max) = (u64_of(d.get("bw_min")), u64_of(d.get("bw_max")));
        let (mut mean, mut dev) = (f64_of(d.get("bw_mean")), f64_of(d.get("bw_dev")));
        let mut unit = "KiB";
        if mean > 1024.0 * 1024.0 {
            min /= 1024;
            max /= 1024;
            mean /= 1024.0;
            dev /= 1024.0;
            unit = "MiB";
        }
        let per = d.get("bw_agg").and_then(Value::as_f64).unwrap_or(100.0);
        out.push_str(&format!(
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={n}\n"
        ));
    }
    let n = u64_of(d.get("iops_samples"));
    if n > 0 {
        out.push_str(&format!(
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={n}\n",
            u64_of(d.get("iops_min")),
            u64_of(d.get("iops_max")),
            f64_of(d.get("iops_mean")),
            f64_of(d.get("iops_stddev")),
        ));
    }
}

/// fio's `display_lat`: `    clat (usec): min=42, max=26392, avg=446.53, stdev=274.82`.
fn display_lat(name: &str, min: u64, max: u64, mean: f64, dev: f64, out: &mut String) {
    let (mut min, mut max, mut mean, mut dev) = (min, max, mean, dev);
    let base = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1_000_000.0;
        dev /= 1_000_000.0;
        "(msec)"
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        "(usec)"
    } else {
        "(nsec)"
    };
    out.push_str(&format!(
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}\n",
        num2str(min, 6, 1, false, Unit::None),
        num2str(max, 6, 1, false, Unit::None),
    ));
}

/// Decimals needed to print a percentile key like "99.950000" (→ 2).
fn key_precision(key: &str) -> usize {
    match key.split_once('.') {
        Some((_, frac)) => frac.trim_end_matches('0').len(),
        None => 0,
    }
}

/// fio's percentile block from a `percentile` map (`"99.000000": ns`).
fn percentiles(pre: &str, map: &Value, out: &mut String) {
    let Some(obj) = map.as_object() else {
        return;
    };
    let mut list: Vec<(f64, u64, usize)> = obj
        .iter()
        .filter_map(|(k, v)| {
            let p: f64 = k.trim().parse().ok()?;
            Some((p, u64_of(Some(v)), key_precision(k.trim())))
        })
        .collect();
    if list.is_empty() {
        return;
    }
    list.sort_by(|a, b| a.0.total_cmp(&b.0));
    let precision = list.iter().map(|e| e.2).max().unwrap_or(0).min(6);
    let minv = list.iter().map(|e| e.1).min().unwrap_or(0);
    let maxv = list.iter().map(|e| e.1).max().unwrap_or(0);
    let (scale, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    out.push_str(&format!("    {pre} percentiles ({unit}):\n     |"));
    let scaled_max = maxv / divisor;
    let digits = if scaled_max == 0 {
        0
    } else {
        scaled_max.ilog10() as usize + 1
    };
    let width = digits.max(5);
    let per_line = ((80 - 7) / (precision + 10 + width)).max(1);
    let n = list.len();
    for (j, (p, v, _)) in list.into_iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let mut v = v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let last = j == n - 1;
        out.push_str(&format!(
            " {p:w$.prec$}th=[{v:>width$}]{}",
            if last { '\n' } else { ',' },
            w = precision + 3,
            prec = precision,
        ));
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// The `lat (usec)   : 50=0.01%, 100=4.74%` distribution lines.
fn latencies(job: &Value, out: &mut String) {
    const NU: [&str; 10] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    const M: [&str; 12] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    for (key, unit, labels) in [
        ("latency_ns", "nsec", &NU[..]),
        ("latency_us", "usec", &NU[..]),
        ("latency_ms", "msec", &M[..]),
    ] {
        let Some(map) = job.get(key) else { continue };
        let shown: Vec<String> = labels
            .iter()
            .filter_map(|l| {
                // fio shows a non-zero share of less than 0.01% as 0.01%
                let v = f64_of(map.get(*l));
                (v > 0.0).then(|| format!("{l}={:3.2}%", v.max(0.01)))
            })
            .collect();
        for chunk in shown.chunks(5) {
            out.push_str(&format!("  lat ({unit})   : {}\n", chunk.join(", ")));
        }
    }
}

#[derive(Default, Clone, Copy)]
struct GroupDir {
    min_run: u64,
    max_run: u64,
    min_bw: u64,
    max_bw: u64,
    io_bytes: u64,
}

/// `Run status group G (all jobs):` with one line per direction.
fn group_status(jobs: &[Value], out: &mut String) {
    let mut groups: std::collections::BTreeMap<u64, [Option<GroupDir>; 3]> = Default::default();
    for job in jobs {
        let gid = u64_of(job.get("groupid"));
        let g = groups.entry(gid).or_default();
        for (i, (ddir, _)) in DDIRS.iter().enumerate() {
            let Some(d) = job.get(*ddir) else { continue };
            let runtime = u64_of(d.get("runtime"));
            if runtime == 0 {
                continue;
            }
            let io = u64_of(d.get("io_bytes"));
            let bw = (u128::from(io) * 1000 / u128::from(runtime)) as u64;
            let e = g[i].get_or_insert(GroupDir {
                min_run: runtime,
                max_run: runtime,
                min_bw: bw,
                max_bw: bw,
                io_bytes: 0,
            });
            e.min_run = e.min_run.min(runtime);
            e.max_run = e.max_run.max(runtime);
            e.min_bw = e.min_bw.min(bw);
            e.max_bw = e.max_bw.max(bw);
            e.io_bytes += io;
        }
    }
    for (gid, dirs) in groups {
        out.push_str(&format!("\nRun status group {gid} (all jobs):\n"));
        for (i, d) in dirs.iter().enumerate() {
            let Some(d) = d else { continue };
            let agg = (u128::from(d.io_bytes) * 1000 / u128::from(d.max_run.max(1))) as u64;
            let b = |v: u64, pow2: bool| num2str(v, 4, 1, pow2, Unit::BytePerSec);
            out.push_str(&format!(
                "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec\n",
                DDIRS[i].1,
                b(agg, true),
                b(agg, false),
                b(d.min_bw, true),
                b(d.max_bw, true),
                b(d.min_bw, false),
                b(d.max_bw, false),
                num2str(d.io_bytes, 4, 1, true, Unit::Byte),
                num2str(d.io_bytes, 4, 1, false, Unit::Byte),
                d.min_run,
                d.max_run
            ));
        }
    }
}

/// `Disk stats (read/write):` from the document's `disk_util` array.
fn disk_util(doc: &Value, out: &mut String) {
    let Some(disks) = doc.get("disk_util").and_then(Value::as_array) else {
        return;
    };
    if disks.is_empty() {
        return;
    }
    out.push_str("\nDisk stats (read/write):\n");
    for d in disks {
        let g = |k: &str| u64_of(d.get(k));
        let sectors = if d.get("read_sectors").is_some() {
            format!("sectors={}/{}, ", g("read_sectors"), g("write_sectors"))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  {}: ios={}/{}, {sectors}merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%\n",
            d.get("name").and_then(Value::as_str).unwrap_or("?"),
            g("read_ios"),
            g("write_ios"),
            g("read_merges"),
            g("write_merges"),
            g("read_ticks"),
            g("write_ticks"),
            g("in_queue"),
            f64_of(d.get("util")),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn num2str_matches_fio_samples() {
        // values behind the fio ZNS examples' lines
        assert_eq!(num2str(31249, 4, 1, false, Unit::None), "31.2k");
        assert_eq!(num2str(24014, 4, 1, false, Unit::None), "24.0k");
        assert_eq!(
            num2str(2043 * 1000 * 1000 + 500, 4, 1, true, Unit::BytePerSec),
            "1948MiB/s"
        );
        assert_eq!(
            num2str(2_043_000_000, 4, 1, false, Unit::BytePerSec),
            "2043MB/s"
        );
        assert_eq!(num2str(126_500_000_000, 4, 1, true, Unit::Byte), "118GiB");
        assert_eq!(num2str(126_500_000_000, 4, 1, false, Unit::Byte), "127GB");
        assert_eq!(num2str(20_615_843_020, 4, 1, true, Unit::Byte), "19.2GiB");
        assert_eq!(num2str(65536, 4, 1, true, Unit::Byte), "64.0KiB");
        assert_eq!(num2str(131072, 4, 1, true, Unit::Byte), "128KiB");
        assert_eq!(num2str(4096, 4, 1, true, Unit::Byte), "4096B");
        assert_eq!(num2str(26392, 6, 1, false, Unit::None), "26392");
        assert_eq!(num2str(8_093_504, 6, 1, false, Unit::None), "8093.5k");
        assert_eq!(num2str(4_096_000, 4, 1, false, Unit::None), "4096k");
        assert_eq!(num2str(0, 4, 1, false, Unit::None), "0");
        // 2 digits left for decimals rounds the remainder: 19990 -> 19.99k -> "19.0k"
        // (fio keeps the digits after "0." of the rounded fraction)
        assert_eq!(num2str(19990, 4, 1, false, Unit::None), "19.0k");
        // past the largest prefix (where fio reads out of bounds) no prefix is printed
        assert_eq!(num2str(u64::MAX, 4, 1, false, Unit::None), "18.4");
    }

    #[test]
    fn display_lat_units() {
        let mut s = String::new();
        display_lat("clat", 42_000, 26_392_000, 446_530.0, 274_820.0, &mut s);
        display_lat(" lat", 2485, 66236, 4324.13, 1422.03, &mut s);
        display_lat("slat", 5000, 508_000, 7700.0, 1430.0, &mut s);
        display_lat(
            "clat",
            3_000_000,
            200_000_000,
            9_000_000.0,
            2_000_000.0,
            &mut s,
        );
        assert_eq!(
            s,
            "    clat (usec): min=42, max=26392, avg=446.53, stdev=274.82\n\
             \x20    lat (nsec): min=2485, max=66236, avg=4324.13, stdev=1422.03\n\
             \x20   slat (usec): min=5, max=508, avg= 7.70, stdev= 1.43\n\
             \x20   clat (msec): min=3, max=200, avg= 9.00, stdev= 2.00\n"
        );
    }

    fn default_pcts(vals_us: [u64; 17]) -> Value {
        let keys = [
            1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9,
            99.95, 99.99,
        ];
        let mut m = serde_json::Map::new();
        for (k, v) in keys.iter().zip(vals_us) {
            // fio's buckets are not whole microseconds; scaling rounds up
            m.insert(format!("{k:.6}"), json!(v * 1000 - 300));
        }
        Value::Object(m)
    }

    fn seqwrite_doc() -> Value {
        let pct = default_pcts([
            71, 102, 139, 212, 285, 359, 429, 494, 570, 644, 758, 857, 1123, 1319, 2212, 2573, 6456,
        ]);
        let lat = json!({"min": 42_100, "max": 26_392_500, "mean": 446_530.0, "stddev": 274_820.0, "N": 1_929_984u64, "percentile": pct});
        let tlat = json!({"min": 43_100, "max": 26_393_500, "mean": 447_170.0, "stddev": 274_820.0, "N": 1_929_984u64});
        let io_bytes: u64 = 1_929_984 * 65536;
        json!({
            "fio version": "fio-3.30",
            "time": "Mon Apr 11 13:08:10 2022",
            "global options": {"ioengine": "psync", "direct": "1", "rw": "write", "bs": "64k",
                                "group_reporting": "1", "zonemode": "zbd", "offset_increment": "8z", "size": "8z"},
            "jobs": [{
                "jobname": "seqwrite", "groupid": 0, "error": 0, "pid": 2965287,
                "job options": {"name": "seqwrite", "numjobs": "14"},
                "read": {"io_bytes": 0, "runtime": 0, "total_ios": 0, "short_ios": 0, "drop_ios": 0},
                "write": {
                    "io_bytes": io_bytes, "runtime": 61898, "total_ios": 1_929_984u64,
                    "short_ios": 0, "drop_ios": 0,
                    "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
                    "clat_ns": lat, "lat_ns": tlat,
                    "bw_min": 1_739_776, "bw_max": 2_134_016, "bw_agg": 100.0, "bw_mean": 1_999_943.68,
                    "bw_dev": 6266.88, "bw_samples": 1722,
                    "iops_min": 27188, "iops_max": 33348, "iops_mean": 31249.04, "iops_stddev": 97.85, "iops_samples": 1722
                },
                "trim": {"io_bytes": 0, "runtime": 0, "total_ios": 0, "short_ios": 0, "drop_ios": 0},
                "zone_resets": 0,
                "usr_cpu": 0.67, "sys_cpu": 2.40, "ctx": 1_930_139, "majf": 0, "minf": 196,
                "iodepth_level": {"1": 100.0, "2": 0.0, "4": 0.0, "8": 0.0, "16": 0.0, "32": 0.0, ">=64": 0.0},
                "iodepth_submit": {"0": 0.0, "4": 100.0, "8": 0.0, "16": 0.0, "32": 0.0, "64": 0.0, ">=64": 0.0},
                "iodepth_complete": {"0": 0.0, "4": 100.0, "8": 0.0, "16": 0.0, "32": 0.0, "64": 0.0, ">=64": 0.0},
                "latency_ns": {"2": 0.0, "4": 0.0, "10": 0.0, "20": 0.0, "50": 0.0, "100": 0.0, "250": 0.0, "500": 0.0, "750": 0.0, "1000": 0.0},
                "latency_us": {"2": 0.0, "4": 0.0, "10": 0.0, "20": 0.0, "50": 0.01, "100": 4.74, "250": 20.35, "500": 35.55, "750": 29.06, "1000": 8.39},
                "latency_ms": {"2": 1.75, "4": 0.14, "10": 0.01, "20": 0.01, "50": 0.01, "100": 0.0, "250": 0.0, "500": 0.0, "750": 0.0, "1000": 0.0, "2000": 0.0, ">=2000": 0.0},
                "latency_depth": 1, "latency_target": 0, "latency_percentile": 100.0, "latency_window": 0
            }],
            "disk_util": [{"name": "nvme4n2", "read_ios": 296, "write_ios": 1_929_737, "read_merges": 0, "write_merges": 0,
                            "read_ticks": 49, "write_ticks": 848_309, "in_queue": 848_358, "util": 99.91}]
        })
    }

    /// The page's sequential-write sample, rebuilt from its own numbers:
    /// every line fio prints for them comes out the same.
    #[test]
    fn renders_the_seqwrite_sample() {
        let text = fio_text(&seqwrite_doc());
        let expected = "\
seqwrite: (g=0): rw=write, bs=(R) 64.0KiB-64.0KiB, (W) 64.0KiB-64.0KiB, (T) 64.0KiB-64.0KiB, ioengine=psync, iodepth=1
...
fio-3.30
Starting 14 processes

seqwrite: (groupid=0, jobs=14): err= 0: pid=2965287: Mon Apr 11 13:08:10 2022
  write: IOPS=31.2k, BW=1949MiB/s (2043MB/s)(118GiB/61898msec); 0 zone resets
    clat (usec): min=42, max=26392, avg=446.53, stdev=274.82
     lat (usec): min=43, max=26393, avg=447.17, stdev=274.82
    clat percentiles (usec):
     |  1.00th=[   71],  5.00th=[  102], 10.00th=[  139], 20.00th=[  212],
     | 30.00th=[  285], 40.00th=[  359], 50.00th=[  429], 60.00th=[  494],
     | 70.00th=[  570], 80.00th=[  644], 90.00th=[  758], 95.00th=[  857],
     | 99.00th=[ 1123], 99.50th=[ 1319], 99.90th=[ 2212], 99.95th=[ 2573],
     | 99.99th=[ 6456]
   bw (  MiB/s): min= 1699, max= 2084, per=100.00%, avg=1953.07, stdev= 6.12, samples=1722
   iops        : min=27188, max=33348, avg=31249.04, stdev=97.85, samples=1722
  lat (usec)   : 50=0.01%, 100=4.74%, 250=20.35%, 500=35.55%, 750=29.06%
  lat (usec)   : 1000=8.39%
  lat (msec)   : 2=1.75%, 4=0.14%, 10=0.01%, 20=0.01%, 50=0.01%
  cpu          : usr=0.67%, sys=2.40%, ctx=1930139, majf=0, minf=196
  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%
     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     issued rwts: total=0,1929984,0,0 short=0,0,0,0 dropped=0,0,0,0
     latency   : target=0, window=0, percentile=100.00%, depth=1

Run status group 0 (all jobs):
  WRITE: bw=1949MiB/s (2043MB/s), 1949MiB/s-1949MiB/s (2043MB/s-2043MB/s), io=118GiB (126GB), run=61898-61898msec

Disk stats (read/write):
  nvme4n2: ios=296/1929737, merge=0/0, ticks=49/848309, in_queue=848358, util=99.91%
";
        assert_eq!(text, expected, "got:\n{text}");
    }

    #[test]
    fn read_while_write_groups_and_nsec_slat() {
        let dir = |io: u64, ios: u64, slat: Option<Value>| {
            json!({"io_bytes": io, "runtime": 30001, "total_ios": ios, "short_ios": 0, "drop_ios": 0,
                   "slat_ns": slat.unwrap_or(json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0})),
                   "clat_ns": {"min": 127_000, "max": 3_564_000, "mean": 436_490.0, "stddev": 225_700.0, "N": ios},
                   "lat_ns": {"min": 131_000, "max": 3_570_000, "mean": 440_900.0, "stddev": 225_690.0, "N": ios}})
        };
        let none = json!({"io_bytes": 0, "runtime": 0, "total_ios": 0});
        let doc = json!({"jobs": [
            {"jobname": "write", "groupid": 0, "error": 0, "zone_resets": 11,
             "read": none, "write": dir(628_364 * 32768, 628_364, None), "trim": none},
            {"jobname": "randread", "groupid": 0, "error": 0, "zone_resets": 0,
             "read": dir(2_173_025 * 32768, 2_173_025,
                Some(json!({"min": 2485, "max": 66236, "mean": 4324.13, "stddev": 1422.03, "N": 2_173_025}))),
             "write": none, "trim": none,
             "reset": {"runtime": 30001, "total_ios": 11,
                       "clat_ns": {"min": 3_000_000, "max": 150_000_000, "mean": 9_000_000.0, "stddev": 2_500_000.0, "N": 11}}}
        ]});
        let text = fio_text(&doc);
        assert!(
            text.starts_with("write: (groupid=0, jobs=1): err= 0: pid=0: \n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  write: IOPS=20.9k, BW=655MiB/s (686MB/s)(19.2GiB/30001msec); 11 zone resets\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  read: IOPS=72.4k, BW=2263MiB/s (2373MB/s)(66.3GiB/30001msec)\n"),
            "{text}"
        );
        assert!(
            text.contains("    slat (nsec): min=2485, max=66236, avg=4324.13, stdev=1422.03\n"),
            "{text}"
        );
        assert!(text.contains("  reset: IOPS=0.37, ops=11 (30001msec) [znskit zone management]\n    clat (msec): min=3, max=150, avg= 9.00, stdev= 2.50\n"), "{text}");
        assert!(text.contains("\nRun status group 0 (all jobs):\n   READ: bw=2263MiB/s (2373MB/s), 2263MiB/s-2263MiB/s (2373MB/s-2373MB/s), io=66.3GiB (71.2GB), run=30001-30001msec\n  WRITE: bw=655MiB/s (686MB/s), 655MiB/s-655MiB/s (686MB/s-686MB/s), io=19.2GiB (20.6GB), run=30001-30001msec\n"), "{text}");
        // no job options: no banner, no disk stats
        assert!(!text.contains("Starting"));
        assert!(!text.contains("Disk stats"));
    }

    #[test]
    fn percentile_layouts() {
        let mut s = String::new();
        percentiles(
            "clat",
            &json!({"50.000000": 20, "99.900000": 60, "99.999000": 9792}),
            &mut s,
        );
        percentiles("lat", &json!({"50.000000": 10, "99.000000": 21}), &mut s);
        assert_eq!(
            s,
            "    clat percentiles (nsec):\n     | 50.000th=[   20], 99.900th=[   60], 99.999th=[ 9792]\n\
             \x20   lat percentiles (nsec):\n     |  50th=[   10],  99th=[   21]\n"
        );
        let mut s = String::new();
        percentiles(
            "clat",
            &json!({"1.000000": 3_000_001, "99.000000": 120_000_000}),
            &mut s,
        );
        assert_eq!(
            s,
            "    clat percentiles (msec):\n     |   1th=[    4],  99th=[  120]\n"
        );
    }

    #[test]
    fn kib_bandwidth_samples_and_groups() {
        let d = json!({"bw_samples": 59, "bw_min": 632_256, "bw_max": 681_792, "bw_agg": 100.0,
                       "bw_mean": 670_854.51, "bw_dev": 10_692.34,
                       "iops_samples": 59, "iops_min": 19758, "iops_max": 21306, "iops_mean": 20964.17, "iops_stddev": 334.18});
        let mut s = String::new();
        samples(&d, &mut s);
        assert_eq!(s, "   bw (  KiB/s): min=632256, max=681792, per=100.00%, avg=670854.51, stdev=10692.34, samples=59\n   iops        : min=19758, max=21306, avg=20964.17, stdev=334.18, samples=59\n");
        // two groups, two jobs in one: ranges and aggregate
        let w = |io: u64, rt: u64| json!({"io_bytes": io, "runtime": rt, "total_ios": io / 4096});
        let jobs = vec![
            json!({"groupid": 0, "write": w(1 << 30, 1000)}),
            json!({"groupid": 0, "write": w(1 << 29, 2000)}),
            json!({"groupid": 1, "read": w(1 << 20, 10)}),
        ];
        let mut s = String::new();
        group_status(&jobs, &mut s);
        assert_eq!(s, "\nRun status group 0 (all jobs):\n  WRITE: bw=768MiB/s (805MB/s), 256MiB/s-1024MiB/s (268MB/s-1074MB/s), io=1536MiB (1611MB), run=1000-2000msec\n\nRun status group 1 (all jobs):\n   READ: bw=100MiB/s (105MB/s), 100MiB/s-100MiB/s (105MB/s-105MB/s), io=1024KiB (1049kB), run=10-10msec\n");
    }
}
