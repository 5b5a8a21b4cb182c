//! Parsing of sizes (`64k`, `512MiB`, `1g`) and durations (`40ms`, `1h`)
//! given on the command line or in experiment definitions. Sizes are
//! binary (k = 1024); durations are returned in nanoseconds.

use crate::error::CacheError;

/// Bytes from `N`, `Nk`, `NKiB`, `Nm`, `NMiB`, `Ng`, `NGiB`, `Nt` (binary units).
pub fn parse_bytes(s: &str) -> Result<u64, CacheError> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(digits_end);
    let shift = match unit.trim() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(CacheError::Param(format!(
                "size `{s}`: unknown unit (use k, m, g or t, binary)"
            )))
        }
    };
    let value: f64 = num
        .parse()
        .map_err(|_| CacheError::Param(format!("size `{s}`: not a number")))?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 || bytes.fract() != 0.0 {
        return Err(CacheError::Param(format!(
            "size `{s}`: not a whole number of bytes"
        )));
    }
    Ok(bytes as u64)
}

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
    fn sizes_and_durations() {
        assert_eq!(parse_bytes("64k").unwrap(), 65536);
        assert_eq!(parse_bytes("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("1g").unwrap(), 1 << 30);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert!(parse_bytes("12q").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("0.3k").is_err());
        assert_eq!(parse_duration_ns("40ms").unwrap(), 40_000_000);
        assert_eq!(parse_duration_ns("1h").unwrap(), 3_600_000_000_000);
        assert_eq!(parse_duration_ns("2").unwrap(), 2_000_000_000);
        assert!(parse_duration_ns("-1s").is_err());
        assert_eq!(fmt_bytes(65536), "64 KiB");
        assert_eq!(fmt_bytes(1129316352), "1077 MiB");
    }
}
