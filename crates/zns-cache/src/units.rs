//! Durations (`40ms`, `1h`, in nanoseconds) read by znskit's one duration
//! rule (`zns_target::parse_duration_ns`, a plain number in seconds), and
//! sizes for humans (`fmt_bytes`). Sizes are parsed by
//! `zns_target::parse_bytes` (fio's rule).

use crate::error::CacheError;

/// Nanoseconds from a duration under znskit's one rule
/// (`zns_target::parse_duration_ns`), a plain number in seconds; a
/// duration that does not read is a parameter error.
pub fn parse_duration_ns(s: &str) -> Result<u64, CacheError> {
    zns_target::parse_duration_ns(s, 1_000_000_000).map_err(|e| CacheError::Param(e.to_string()))
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
