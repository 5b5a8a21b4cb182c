//! The one size rule and the one duration rule of znskit. zns-target
//! re-exports both (`zns_target::size`, `zns_target::duration`), where the
//! front ends reach them; they live here, at the bottom, so that the
//! libraries' parameter structs (a crash test's chunk in zns-raid) use them
//! too.
//!
//! Sizes follow fio's rule (`kb_base=1024`, its default). Every size in a
//! device name, a job file or a command-line option is parsed here.
//!
//! | suffix | bytes |
//! |---|---|
//! | none, `b` | 1 |
//! | `k`, `K`, `kb`, `KB` | 1024 |
//! | `KiB`, `ki` | 1000 |
//! | `m`, `MB` / `MiB` | 1024² / 1000² (and so on for `g`, `t`, `p`) |
//! | `0x…` | hexadecimal bytes |
//!
//! The binary-looking `KiB` meaning 1000 is fio's compatibility mode, kept
//! so that job files mean what they mean under fio. A size that comes out
//! as a decimal count where whole blocks are needed (`64KiB` = 64000) is
//! refused by [`check_whole_blocks`], which says why and suggests `64k`.

/// A size that does not read under fio's rule, or is not whole blocks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    #[error("size {text:?}: not a hexadecimal number")]
    NotHex { text: String },
    #[error("size {text:?}: not a whole number of bytes with an optional unit (k, m, g, t, p)")]
    NotANumber { text: String },
    #[error("size {text:?}: unknown unit (fio's: k/KB = 1024, KiB = 1000, and m, g, t, p alike)")]
    UnknownUnit { text: String },
    #[error("size {text:?}: too large")]
    TooLarge { text: String },
    /// `bytes` given for `what` is not a non-zero multiple of the block;
    /// `did_you_mean` is the binary spelling of a decimal size (`64k` for
    /// `64KiB` = 64000 bytes).
    #[error("{what} of {bytes} bytes is not a non-zero multiple of the {block_bytes}-byte block{}",
        match did_you_mean {
            Some(s) => format!(" (sizes follow fio's rule: KiB, MiB, … are powers of 1000, k, KB, m, MB, … powers of 1024; did you mean {s}?)"),
            None => String::new(),
        })]
    NotWholeBlocks {
        what: String,
        bytes: u64,
        block_bytes: u64,
        did_you_mean: Option<String>,
    },
}

/// A duration that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    #[error("duration `{text}`: not a number")]
    NotANumber { text: String },
    #[error("duration `{text}`: unknown unit (use ns, us, ms, s, m, h or d)")]
    UnknownUnit { text: String },
    #[error("duration `{text}`: out of range")]
    OutOfRange { text: String },
}

/// Nanoseconds per unit of a duration suffix (lower case), `None` if
/// unknown; `default_ns` for none.
fn ns_per_unit(suffix: &str, default_ns: u64) -> Option<u64> {
    const S: u64 = 1_000_000_000;
    Some(match suffix {
        "" => default_ns,
        "ns" | "nsec" => 1,
        "us" | "usec" | "µs" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => S,
        "m" | "min" => 60 * S,
        "h" => 3600 * S,
        "d" => 86_400 * S,
        _ => return None,
    })
}

/// Nanoseconds from a duration: a number (whole, or with a fraction:
/// `1.5s`) with an optional unit (`ns`, `us`/`usec`/`µs`, `ms`/`msec`,
/// `s`/`sec`, `m`/`min`, `h`, `d`; case-insensitive); a plain number is in
/// `default_ns` nanoseconds (fio's time options: microseconds or seconds;
/// the cache's: seconds). Whole numbers are exact; a fraction is rounded to
/// the nearest nanosecond.
pub fn parse_duration_ns(text: &str, default_ns: u64) -> Result<u64, DurationError> {
    let t = text.trim().to_ascii_lowercase();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let scale = ns_per_unit(unit.trim(), default_ns).ok_or_else(|| DurationError::UnknownUnit {
        text: text.to_string(),
    })?;
    let not_a_number = || DurationError::NotANumber {
        text: text.to_string(),
    };
    let out_of_range = || DurationError::OutOfRange {
        text: text.to_string(),
    };
    if !num.contains('.') {
        let n: u64 = num.parse().map_err(|_| not_a_number())?;
        return n.checked_mul(scale).ok_or_else(out_of_range);
    }
    let value: f64 = num.parse().map_err(|_| not_a_number())?;
    let ns = (value * scale as f64).round();
    if !ns.is_finite() || ns < 0.0 || ns >= u64::MAX as f64 {
        return Err(out_of_range());
    }
    Ok(ns as u64)
}

/// Splits `s` into its leading decimal digits and the rest.
pub fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .char_indices()
        .find(|(_, c)| !c.is_ascii_digit())
        .map_or(s.len(), |(i, _)| i);
    s.split_at(end)
}

/// Bytes per unit of a size suffix (case-insensitive), `None` if unknown.
fn bytes_per_unit(suffix: &str) -> Option<u64> {
    // kb_base=1024 (fio's default): k/kb = 1024^n; ki/kib = 1000^n.
    let s = suffix.to_ascii_lowercase();
    let s = s.as_str();
    let (letter, rest) = match s.chars().next() {
        None => return Some(1),
        Some(c) => (c, &s[c.len_utf8()..]),
    };
    if letter == 'b' && rest.is_empty() {
        return Some(1);
    }
    let pow = match letter {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return None,
    };
    let base: u64 = match rest {
        "" | "b" => 1024,
        "i" | "ib" => 1000,
        _ => return None,
    };
    base.checked_pow(pow)
}

/// Bytes from a size under fio's rule: a whole number with an optional
/// suffix (`64k` = 65536, `64KiB` = 64000, `1g`), or `0x` hexadecimal.
/// The error says what is wrong with `text`.
pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    let s = text.trim();
    let text = || text.to_string();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| SizeError::NotHex { text: text() });
    }
    let (digits, suffix) = split_number(s);
    if digits.is_empty() {
        return Err(SizeError::NotANumber { text: text() });
    }
    let unit =
        bytes_per_unit(suffix.trim()).ok_or_else(|| SizeError::UnknownUnit { text: text() })?;
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| SizeError::TooLarge { text: text() })
}

/// Checks that `bytes`, the size given for `what`, is a non-zero whole
/// number of `block_bytes`-byte blocks. The error says why, and for a size
/// that is a whole number of decimal units (fio's `KiB` = 1000) suggests
/// the binary spelling: `64KiB` is 64000 bytes, `64k` is 65536.
pub fn check_whole_blocks(what: &str, bytes: u64, block_bytes: u64) -> Result<(), SizeError> {
    if block_bytes == 0 || (bytes > 0 && bytes % block_bytes == 0) {
        return Ok(());
    }
    let did_you_mean = [
        (1_000_000_000_000u64, 't'),
        (1_000_000_000, 'g'),
        (1_000_000, 'm'),
        (1000, 'k'),
    ]
    .into_iter()
    .find(|&(unit, _)| bytes > 0 && bytes % unit == 0)
    .map(|(unit, letter)| format!("{}{letter}", bytes / unit));
    Err(SizeError::NotWholeBlocks {
        what: what.to_string(),
        bytes,
        block_bytes,
        did_you_mean,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_whole_and_fractional_numbers_in_every_unit() {
        use super::{parse_duration_ns, DurationError};
        assert_eq!(parse_duration_ns("100ms", 1), Ok(100_000_000));
        assert_eq!(parse_duration_ns("1.5s", 1), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("2", 1_000), Ok(2_000));
        assert_eq!(parse_duration_ns("1d", 1), Ok(86_400_000_000_000));
        assert_eq!(parse_duration_ns("40.6ms", 1), Ok(40_600_000));
        assert_eq!(parse_duration_ns("0", 1), Ok(0));
        assert!(matches!(
            parse_duration_ns("5 parsecs", 1),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_duration_ns("ms", 1),
            Err(DurationError::NotANumber { .. })
        ));
        assert!(matches!(
            parse_duration_ns("99999999999999999999d", 1),
            Err(DurationError::NotANumber { .. } | DurationError::OutOfRange { .. })
        ));
    }

    use super::*;

    #[test]
    fn fio_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64k"), Ok(65536));
        assert_eq!(parse_bytes("64K"), Ok(65536));
        assert_eq!(parse_bytes("64KB"), Ok(65536));
        assert_eq!(parse_bytes("64KiB"), Ok(64000));
        assert_eq!(parse_bytes("1MiB"), Ok(1_000_000));
        assert_eq!(parse_bytes("2g"), Ok(2 << 30));
        assert_eq!(parse_bytes("0x1000"), Ok(4096));
        assert_eq!(parse_bytes(" 8 k "), Ok(8192));
        for bad in ["", "k", "12q", "0.3k", "99999999999t", "-1k"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_decimal_size_that_is_not_whole_blocks_suggests_the_binary_one() {
        assert_eq!(check_whole_blocks("chunk", 65536, 4096), Ok(()));
        let e = check_whole_blocks("chunk", parse_bytes("64KiB").unwrap(), 4096)
            .unwrap_err()
            .to_string();
        assert!(e.contains("64000 bytes"), "{e}");
        assert!(e.contains("4096-byte block"), "{e}");
        assert!(e.contains("did you mean 64k?"), "{e}");
        let e = check_whole_blocks("chunk", 100, 4096)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("did you mean"), "{e}");
        assert!(check_whole_blocks("chunk", 0, 4096).is_err());
    }
}
