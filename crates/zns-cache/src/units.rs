//! Parsing of durations (`40ms`, `1h`, returned in nanoseconds) given on the
//! command line or in experiment definitions, and sizes for humans
//! (`fmt_bytes`). Sizes are parsed by `zns_target::parse_bytes` (fio's rule).

use crate::error::CacheError;

/// Nanoseconds from `N` (seconds), `Nns`, `Nus`, `Nms`, `Ns`, `Nm`, `Nh`.
pub fn parse_duration_ns(s: &str) -> Result<u64, CacheError> {
    let t = s.trim().to_ascii_lowercase();
    let digits_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(digits_end);
    let scale: f64 = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(CacheError::Param(format!(
                "duration `{s}`: unknown unit (use ns, us, ms, s, m or h)"
            )))
        }
    };
    let value: f64 = num
        .parse()
        .map_err(|_| CacheError::Param(format!("duration `{s}`: not a number")))?;
    let ns = (value * scale).round();
    if !ns.is_finite() || ns < 0.0 || ns >= u64::MAX as f64 {
        return Err(CacheError::Param(format!("duration `{s}`: out of range")));
    }
    Ok(ns as u64)
}

/// A byte count for humans: `64 KiB`, `1077 MiB`, `1.5 GiB`.
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    // The largest unit that divides exactly, if the number stays short.
    for i in (0..UNITS.len()).rev() {
        let unit = 1u64 << (10 * i);
        if bytes >= unit && bytes % unit == 0 && bytes / unit < 10_000 {
            return format!("{} {}", bytes / unit, UNITS[i]);
        }
    }
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.2} {}", UNITS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_for_humans() {
        assert_eq!(parse_duration_ns("40ms").unwrap(), 40_000_000);
        assert_eq!(parse_duration_ns("1h").unwrap(), 3_600_000_000_000);
        assert_eq!(parse_duration_ns("2").unwrap(), 2_000_000_000);
        assert!(parse_duration_ns("-1s").is_err());
        assert_eq!(fmt_bytes(65536), "64 KiB");
        assert_eq!(fmt_bytes(1129316352), "1077 MiB");
    }
}
