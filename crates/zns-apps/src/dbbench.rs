//! RocksDB's `db_bench`: the options of a run and the figures its report
//! gives per benchmark — the summary line (`fillseq : 7.640 micros/op
//! 130890 ops/sec 15.3 seconds 2000000 operations; 14.5 MB/s`) and, with
//! `--histogram=1`, the first latency histogram's percentiles after it
//! (`Percentiles: P50: 0.55 P75: … P99: 44.87 P99.9: 74.18 …`, in µs), as
//! `../shared/data/zn540/nvmeb_rocksdb_dbbench.csv` has them.

use serde::Serialize;

use crate::{run, AppError};

/// One benchmark's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchResult {
    pub benchmark: String,
    pub micros_per_op: f64,
    /// db_bench's ops/sec, which it truncates to a whole number (at the
    /// 25 ops/s of a slowed device that is up to 4 %), refined by
    /// operations / seconds where the line has them (see [`refined_rate`]).
    pub ops_per_sec: f64,
    pub seconds: Option<f64>,
    pub operations: Option<u64>,
    pub mb_per_s: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p99_9_us: Option<f64>,
}

/// Runs `db_bench ARGS…` and parses its report.
pub fn run_db_bench(args: &[String]) -> Result<(Vec<BenchResult>, String), AppError> {
    run_db_bench_of("db_bench", args)
}

/// Runs `PROGRAM ARGS…` (the user's db_bench built with ZenFS, or the
/// packaged one) and parses its report.
pub fn run_db_bench_of(
    program: &str,
    args: &[String],
) -> Result<(Vec<BenchResult>, String), AppError> {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(program, &refs, &[])?;
    let results = parse_report(&out);
    if results.is_empty() {
        return Err(AppError::Report {
            program: "db_bench".into(),
            what: format!("no benchmark summary line in its report:\n{out}"),
        });
    }
    Ok((results, out))
}

/// Every benchmark summary in a `db_bench` report, with the percentiles of
/// the first histogram that follows each.
pub fn parse_report(text: &str) -> Vec<BenchResult> {
    let mut results: Vec<BenchResult> = Vec::new();
    let mut want_percentiles = false;
    for line in text.lines() {
        if let Some(r) = parse_summary(line) {
            results.push(r);
            want_percentiles = true;
        } else if want_percentiles && line.trim_start().starts_with("Percentiles:") {
            if let Some(r) = results.last_mut() {
                r.p50_us = percentile(line, "P50:");
                r.p99_us = percentile(line, "P99:");
                r.p99_9_us = percentile(line, "P99.9:");
            }
            want_percentiles = false;
        }
    }
    results
}

/// `NAME : X micros/op Y ops/sec [Z seconds N operations;] [M MB/s]`.
fn parse_summary(line: &str) -> Option<BenchResult> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains(' ') || !rest.contains("micros/op") {
        return None;
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let before = |unit: &str| -> Option<f64> {
        let i = words.iter().position(|w| w.trim_end_matches(';') == unit)?;
        words.get(i.checked_sub(1)?)?.parse().ok()
    };
    let seconds = before("seconds");
    let operations = before("operations").map(|v| v as u64);
    Some(BenchResult {
        benchmark: name.to_string(),
        micros_per_op: before("micros/op")?,
        ops_per_sec: refined_rate(before("ops/sec")?, operations, seconds),
        seconds,
        operations,
        mb_per_s: before("MB/s"),
        p50_us: None,
        p99_us: None,
        p99_9_us: None,
    })
}

/// The rate a summary line gives most precisely: db_bench prints
/// `(long)(operations / elapsed)`, so the rate is in [whole, whole + 1),
/// and the elapsed seconds to the millisecond, so it is in
/// [n / (s + 0.0005), n / (s − 0.0005)]; the middle of where the two
/// intervals meet (the whole number where they do not: a line that
/// contradicts itself keeps db_bench's rate).
pub fn refined_rate(whole: f64, operations: Option<u64>, seconds: Option<f64>) -> f64 {
    const HALF_MS: f64 = 0.0005;
    let (Some(n), Some(s)) = (operations, seconds) else {
        return whole;
    };
    let n = n as f64;
    let lo = whole.max(n / (s + HALF_MS));
    let hi = if s > HALF_MS {
        (whole + 1.0).min(n / (s - HALF_MS))
    } else {
        whole + 1.0
    };
    if n > 0.0 && lo <= hi {
        (lo + hi) / 2.0
    } else {
        whole
    }
}

fn percentile(line: &str, key: &str) -> Option<f64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let i = words.iter().position(|w| *w == key)?;
    words.get(i + 1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "\
RocksDB:    version 7.8.3
Keys:       16 bytes each (+ 0 bytes user-defined timestamp)
------------------------------------------------
DB path: [/mnt/f2fs/db]
fillseq      :      15.123 micros/op 66123 ops/sec 1.512 seconds 100000 operations;    7.3 MB/s
Microseconds per write:
Count: 100000 Average: 15.1200  StdDev: 40.11
Min: 1  Median: 0.5500  Max: 8812
Percentiles: P50: 0.55 P75: 0.81 P99: 44.87 P99.9: 74.18 P99.99: 380.20
------------------------------------------------------
readrandom   :     211.677 micros/op 151163 ops/sec 1800.217 seconds 272130000 operations;  103.2 MB/s (272130000 of 272130000 found)
";

    #[test]
    fn summaries_and_their_percentiles_are_read() {
        let r = parse_report(REPORT);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].benchmark, "fillseq");
        // 66123 ops/sec and 100000 operations in 1.512 s (± 0.5 ms: 66116
        // .. 66159): the rate is in [66123, 66124)
        assert_eq!(r[0].ops_per_sec, 66123.5);
        assert_eq!(r[0].micros_per_op, 15.123);
        assert_eq!(r[0].operations, Some(100000));
        assert_eq!(r[0].mb_per_s, Some(7.3));
        assert_eq!(r[0].p50_us, Some(0.55));
        assert_eq!(r[0].p99_us, Some(44.87));
        assert_eq!(r[0].p99_9_us, Some(74.18));
        assert_eq!(r[1].benchmark, "readrandom");
        // its seconds say 151165 ops/s, its rate 151163: db_bench's rate
        assert_eq!(r[1].ops_per_sec, 151163.0);
        assert_eq!(r[1].mb_per_s, Some(103.2));
        assert_eq!(r[1].p99_us, None);
    }

    #[test]
    fn a_slow_rate_is_not_truncated_to_a_whole_number() {
        // a served device at F = c / 100: 25 ops/sec is 25.267
        let line = "readrandom   :   39576.535 micros/op 25 ops/sec 39.577 seconds 1000 operations;    0.0 MB/s (617 of 1000 found)";
        let r = parse_summary(line).unwrap();
        assert!((r.ops_per_sec - 25.2672).abs() < 1e-3, "{}", r.ops_per_sec);
        // without seconds and operations, db_bench's own figure
        assert_eq!(refined_rate(25.0, None, Some(39.577)), 25.0);
        // a line that contradicts itself keeps it too
        assert_eq!(refined_rate(30.0, Some(1000), Some(39.577)), 30.0);
    }

    #[test]
    fn lines_that_are_not_summaries_are_ignored() {
        assert!(parse_report("Keys: 16 bytes each\nDB path: [/x]\n").is_empty());
        assert!(parse_summary("fillseq : fast").is_none());
    }
}
