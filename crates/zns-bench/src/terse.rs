//! fio's terse output, version 3 (`--output-format=terse`, `--minimal`):
//! one semicolon-separated line per job, made from the same JSON document
//! as the text (`text`), for scripts that parse fio's terse fields by
//! position.
//!
//! The fields, in fio's order (fio(1), "TERSE OUTPUT"): terse version,
//! fio version, job name, group, error; for reads and then writes: KiB, KiB/s,
//! IOPS, runtime ms, submission, completion and total latency (min, max, mean,
//! stdev in µs) with 20 completion-latency percentile fields (`P%=µs`,
//! `0%=0` past the job's list), bandwidth min, max, aggregate %, mean,
//! stdev; CPU (user %, system %, context switches, major and minor faults);
//! I/O depths (≤1 … ≥64, %); latency buckets in µs (≤2 … 1000) and ms (≤2 …
//! ≥2000, %); the job's description when it has one. Version 3 has no trim
//! fields. Emulated devices have no disk statistics, so the disk
//! utilisation fields fio prints for real disks are absent, as fio leaves
//! them out when it has none.

use serde_json::Value;

use crate::text::{f64_of, u64_of};

/// Number of completion-latency percentile fields in every terse line.
const PERCENTILE_FIELDS: usize = 20;

/// The value at `path` in `v` (None when a key is missing).
fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn u64_at(v: &Value, path: &[&str]) -> u64 {
    u64_of(at(v, path))
}

fn f64_at(v: &Value, path: &[&str]) -> f64 {
    f64_of(at(v, path))
}

/// min;max;mean;stdev of a latency object in ns, as fio's terse µs.
fn latency_fields(d: &Value, key: &str, out: &mut Vec<String>) {
    out.push((u64_at(d, &[key, "min"]) / 1000).to_string());
    out.push((u64_at(d, &[key, "max"]) / 1000).to_string());
    out.push(format!("{:.6}", f64_at(d, &[key, "mean"]) / 1000.0));
    out.push(format!("{:.6}", f64_at(d, &[key, "stddev"]) / 1000.0));
}

/// One direction's fields (read or write).
fn direction(d: &Value, out: &mut Vec<String>) {
    let runtime_ms = u64_at(d, &["runtime"]);
    let ios = u64_at(d, &["total_ios"]);
    out.push((u64_at(d, &["io_bytes"]) >> 10).to_string());
    out.push(u64_at(d, &["bw"]).to_string());
    // fio: I/Os × 1000 / runtime in ms, in whole I/Os per second
    out.push(
        ios.saturating_mul(1000)
            .checked_div(runtime_ms)
            .unwrap_or(0)
            .to_string(),
    );
    out.push(runtime_ms.to_string());
    latency_fields(d, "slat_ns", out);
    latency_fields(d, "clat_ns", out);
    let mut pcts: Vec<(f64, &str, u64)> = d
        .get("clat_ns")
        .and_then(|c| c.get("percentile"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, k.as_str(), v.as_u64()?)))
                .collect()
        })
        .unwrap_or_default();
    pcts.sort_by(|a, b| a.0.total_cmp(&b.0));
    for k in 0..PERCENTILE_FIELDS {
        out.push(match pcts.get(k) {
            Some((_, key, ns)) => format!("{key}%={}", ns / 1000),
            None => "0%=0".into(),
        });
    }
    latency_fields(d, "lat_ns", out);
    out.push(u64_at(d, &["bw_min"]).to_string());
    out.push(u64_at(d, &["bw_max"]).to_string());
    out.push(format!("{:.6}%", f64_at(d, &["bw_agg"])));
    out.push(format!("{:.6}", f64_at(d, &["bw_mean"])));
    out.push(format!("{:.6}", f64_at(d, &["bw_dev"])));
}

/// The terse line of one job of a fio JSON document.
pub fn job_line(doc: &Value, job: &Value) -> String {
    let mut f: Vec<String> = vec![
        "3".into(),
        doc.get("fio version")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
        job.get("jobname")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
        u64_at(job, &["groupid"]).to_string(),
        job.get("error")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            .to_string(),
    ];
    for dir in ["read", "write"] {
        direction(job.get(dir).unwrap_or(&Value::Null), &mut f);
    }
    f.push(format!("{:.6}%", f64_at(job, &["usr_cpu"])));
    f.push(format!("{:.6}%", f64_at(job, &["sys_cpu"])));
    for key in ["ctx", "majf", "minf"] {
        f.push(u64_at(job, &[key]).to_string());
    }
    let percents = |f: &mut Vec<String>, map: &str, keys: &[&str], decimals: usize| {
        for k in keys {
            f.push(format!("{:.*}%", decimals, f64_at(job, &[map, k])));
        }
    };
    percents(
        &mut f,
        "iodepth_level",
        &["1", "2", "4", "8", "16", "32", ">=64"],
        1,
    );
    percents(
        &mut f,
        "latency_us",
        &[
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
        ],
        2,
    );
    percents(
        &mut f,
        "latency_ms",
        &[
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
        ],
        2,
    );
    if let Some(desc) = job.get("desc").and_then(Value::as_str) {
        f.push(desc.into());
    }
    f.join(";")
}

/// Every job's terse line, each ending in a newline.
pub fn fio_terse(doc: &Value) -> String {
    doc.get("jobs")
        .and_then(Value::as_array)
        .map(|jobs| jobs.iter().map(|j| job_line(doc, j) + "\n").collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The field names of fio(1)'s terse v3 line up to the latency buckets
    /// (the disk fields need a disk).
    const V3_FIELDS_WITHOUT_DISK: usize = 121;

    #[test]
    fn fields_in_fio_order() {
        let pct: serde_json::Map<String, Value> = [("1.000000", 23_000u64), ("99.000000", 602_000)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let read = json!({
            "io_bytes": 2_031_616, "bw": 64000, "runtime": 31, "total_ios": 496,
            "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0},
            "clat_ns": {"min": 21_000, "max": 2_368_000, "mean": 57_107.442, "stddev": 1000.0,
                        "percentile": pct},
            "lat_ns": {"min": 21_000, "max": 2_368_000, "mean": 57_168.256, "stddev": 1000.0},
            "bw_min": 1, "bw_max": 2, "bw_agg": 100.0, "bw_mean": 1.5, "bw_dev": 0.5,
        });
        let doc = json!({"fio version": "znskit-0.1.0", "jobs": [{
            "jobname": "t", "groupid": 0, "error": 0, "read": read, "write": {},
            "usr_cpu": 0.0, "sys_cpu": 0.0, "ctx": 0, "majf": 0, "minf": 0,
            "iodepth_level": {"1": 100.0}, "latency_us": {"50": 41.21}, "latency_ms": {},
        }]});
        let line = fio_terse(&doc);
        let f: Vec<&str> = line.trim_end().split(';').collect();
        assert_eq!(f.len(), V3_FIELDS_WITHOUT_DISK);
        assert_eq!(
            &f[..9],
            [
                "3",
                "znskit-0.1.0",
                "t",
                "0",
                "0",
                "1984",
                "64000",
                "16000",
                "31"
            ]
        );
        // completion latency, then its percentiles (padded to 20), total latency
        assert_eq!(
            &f[13..19],
            [
                "21",
                "2368",
                "57.107442",
                "1.000000",
                "1.000000%=23",
                "99.000000%=602"
            ]
        );
        assert_eq!(f[19], "0%=0");
        assert_eq!(f[36], "0%=0");
        assert_eq!(&f[37..41], ["21", "2368", "57.168256", "1.000000"]);
        assert_eq!(
            &f[41..46],
            ["1", "2", "100.000000%", "1.500000", "0.500000"]
        );
        // writes: nothing done
        assert_eq!(&f[46..50], ["0", "0", "0", "0"]);
        assert_eq!(f[92], "100.0%");
        assert_eq!(f[103], "41.21%");
        // a description is one more field
        let mut doc = doc;
        doc["jobs"][0]["desc"] = json!("my job");
        let f: Vec<String> = fio_terse(&doc)
            .trim_end()
            .split(';')
            .map(String::from)
            .collect();
        assert_eq!(f.len(), V3_FIELDS_WITHOUT_DISK + 1);
        assert_eq!(f.last().unwrap(), "my job");
    }
}
