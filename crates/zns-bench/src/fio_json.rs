//! fio's `--output-format=json` and `json+` layouts of a [`RunReport`]: the
//! same field names and units as fio 3.x (bw in KiB/s, runtime in ms,
//! latencies in ns, percentile keys like `"99.000000"`, json+ `bins` keyed by
//! histogram bucket value), so scripts that parse fio output read znskit's.
//! znskit's timed zone-management commands appear as extra direction-shaped
//! objects (`reset`, `finish`, `open`, `close`, `zrwa_flush`) in a job, only
//! when the job issued them.

use serde_json::{json, Map, Value as Json};

use crate::run::{JobReport, RunReport};
use crate::stats::DirStats;

/// fio's `lat_ns` (slat + clat): its moments, and percentiles with
/// `lat_percentiles=1`.
fn total_lat_json(d: &DirStats, pcts: Option<&[f64]>) -> Json {
    let m = d.lat();
    let mut o = Map::new();
    o.insert("min".into(), json!(m.min()));
    o.insert("max".into(), json!(m.max()));
    o.insert("mean".into(), json!(m.mean()));
    o.insert("stddev".into(), json!(m.stddev()));
    o.insert("N".into(), json!(m.n));
    if let Some(pcts) = pcts {
        if d.total_ios > 0 {
            let mut p = Map::new();
            for &q in pcts {
                p.insert(format!("{q:.6}"), json!(d.lat_percentile(q)));
            }
            o.insert("percentile".into(), Json::Object(p));
        }
    }
    Json::Object(o)
}

fn lat_json(d: &DirStats, pcts: Option<&[f64]>, bins: bool) -> Json {
    let mut o = Map::new();
    o.insert("min".into(), json!(d.min()));
    o.insert("max".into(), json!(d.max()));
    o.insert("mean".into(), json!(d.mean()));
    o.insert("stddev".into(), json!(d.stddev()));
    o.insert("N".into(), json!(d.total_ios));
    if let Some(pcts) = pcts {
        if d.total_ios > 0 {
            let mut p = Map::new();
            for &q in pcts {
                p.insert(format!("{q:.6}"), json!(d.percentile(q)));
            }
            o.insert("percentile".into(), Json::Object(p));
        }
    }
    if bins && d.total_ios > 0 {
        let b: Map<String, Json> = d.bins().map(|(v, n)| (v.to_string(), json!(n))).collect();
        o.insert("bins".into(), Json::Object(b));
    }
    Json::Object(o)
}

fn dir_json(d: &DirStats, j: &JobReport, bins: bool) -> Json {
    let runtime_ns = j.runtime_ns;
    let secs = runtime_ns as f64 / 1e9;
    let (bw_bytes, iops) = if runtime_ns == 0 {
        (0, 0.0)
    } else {
        ((d.io_bytes as f64 / secs) as u64, d.total_ios as f64 / secs)
    };
    let runtime_ms = if d.total_ios == 0 {
        0
    } else {
        runtime_ns.div_ceil(1_000_000)
    };
    let (bw, iops_s) = d.sample_summaries(runtime_ns);
    let bw = bw.scaled(1024.0);
    let clat = j.clat_percentiles.then_some(j.percentile_list.as_slice());
    let lat = j.lat_percentiles.then_some(j.percentile_list.as_slice());
    json!({
        "io_bytes": d.io_bytes,
        "io_kbytes": d.io_bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": iops,
        "runtime": runtime_ms,
        "total_ios": d.total_ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": {"min": d.slat().min(), "max": d.slat().max(), "mean": d.slat().mean(), "stddev": d.slat().stddev(), "N": d.slat().n},
        "clat_ns": lat_json(d, clat, bins),
        "lat_ns": if d.slat().n == 0 { lat_json(d, lat, bins && j.lat_percentiles) } else { total_lat_json(d, lat) },
        "bw_min": bw.min as u64,
        "bw_max": bw.max as u64,
        "bw_agg": if d.total_ios > 0 { 100.0 } else { 0.0 },
        "bw_mean": bw.mean,
        "bw_dev": bw.stddev,
        "bw_samples": bw.n,
        "iops_min": iops_s.min as u64,
        "iops_max": iops_s.max as u64,
        "iops_mean": iops_s.mean,
        "iops_stddev": iops_s.stddev,
        "iops_samples": iops_s.n,
    })
}

fn latency_maps(j: &JobReport) -> (Json, Json, Json) {
    let mut all = DirStats::default();
    all.merge(&j.read);
    all.merge(&j.write);
    all.merge(&j.trim);
    let total = all.total_ios.max(1) as f64;
    let (mut ns, mut us, mut ms) = (Map::new(), Map::new(), Map::new());
    for (unit, label, n) in all.latency_distribution() {
        let pct = json!(n as f64 * 100.0 / total);
        match unit {
            "ns" => ns.insert(label, pct),
            "us" => us.insert(label, pct),
            _ => ms.insert(label, pct),
        };
    }
    (Json::Object(ns), Json::Object(us), Json::Object(ms))
}

fn job_json(j: &JobReport, bins: bool) -> Json {
    let (lat_ns, lat_us, lat_ms) = latency_maps(j);
    let mut o = Map::new();
    o.insert("jobname".into(), json!(j.name));
    o.insert("groupid".into(), json!(j.groupid));
    o.insert("jobs".into(), json!(j.jobs));
    o.insert("job_start".into(), json!(0));
    o.insert(
        "error".into(),
        json!(j.error.as_ref().map_or(0, |f| f.errno)),
    );
    o.insert("eta".into(), json!(0));
    o.insert(
        "elapsed".into(),
        json!(j.runtime_ns.div_ceil(1_000_000_000)),
    );
    // as fio: the job's name first, then its options in the order given
    let opts: Map<String, Json> = std::iter::once(("name".to_string(), json!(j.name)))
        .chain(
            j.options
                .iter()
                .filter(|(k, _)| k.as_str() != "name")
                .map(|(k, v)| (k.clone(), json!(v))),
        )
        .collect();
    o.insert("job options".into(), Json::Object(opts));
    o.insert("read".into(), dir_json(&j.read, j, bins));
    o.insert("write".into(), dir_json(&j.write, j, bins));
    o.insert("trim".into(), dir_json(&j.trim, j, bins));
    o.insert("sync".into(), sync_json(&j.sync));
    for (k, d) in &j.zone_ops {
        o.insert((*k).into(), dir_json(d, j, bins));
    }
    o.insert("zone_resets".into(), json!(j.zone_resets));
    o.insert("job_runtime".into(), json!(j.runtime_ns / 1_000_000));
    o.insert("usr_cpu".into(), json!(0.0));
    o.insert("sys_cpu".into(), json!(0.0));
    o.insert("ctx".into(), json!(0));
    o.insert("majf".into(), json!(0));
    o.insert("minf".into(), json!(0));
    let depth_key = match j.iodepth {
        1 => "1",
        2 => "2",
        3..=4 => "4",
        5..=8 => "8",
        9..=16 => "16",
        17..=32 => "32",
        _ => ">=64",
    };
    let mut levels = Map::new();
    for k in ["1", "2", "4", "8", "16", "32", ">=64"] {
        levels.insert(k.into(), json!(if k == depth_key { 100.0 } else { 0.0 }));
    }
    o.insert("iodepth_level".into(), Json::Object(levels));
    // I/Os are submitted and completed one at a time (no batching): fio's
    // "1-4" bucket, as fio 3.33 prints for psync, libaio and io_uring alike
    // (only its null engine counts none)
    let mut one_at_a_time = Map::new();
    for k in ["0", "4", "8", "16", "32", "64", ">=64"] {
        one_at_a_time.insert(k.into(), json!(if k == "4" { 100.0 } else { 0.0 }));
    }
    o.insert("iodepth_submit".into(), Json::Object(one_at_a_time.clone()));
    o.insert("iodepth_complete".into(), Json::Object(one_at_a_time));
    o.insert("latency_ns".into(), lat_ns);
    o.insert("latency_us".into(), lat_us);
    o.insert("latency_ms".into(), lat_ms);
    o.insert("latency_depth".into(), json!(j.iodepth));
    o.insert("latency_target".into(), json!(0));
    o.insert("latency_percentile".into(), json!(100.0));
    o.insert("latency_window".into(), json!(0));
    Json::Object(o)
}

impl RunReport {
    /// fio's `--output-format=json` layout.
    pub fn to_fio_json(&self) -> Json {
        self.fio_json(false)
    }

    /// fio's `--output-format=json+`: json plus latency histogram `bins`.
    pub fn to_fio_json_plus(&self) -> Json {
        self.fio_json(true)
    }

    fn fio_json(&self, bins: bool) -> Json {
        let jobs: Vec<Json> = self.jobs.iter().map(|j| job_json(j, bins)).collect();
        let mut doc = json!({
            "fio version": concat!("znskit-", env!("CARGO_PKG_VERSION")),
            "timestamp": 0,
            "timestamp_ms": 0,
            "time": "virtual",
            "global options": {"randseed": self.seed.to_string()},
            "jobs": jobs,
            "disk_util": [],
            "znskit": {
                "seed": self.seed,
                "virtual_ns": self.virtual_ns,
            },
        });
        // (only when there are some: a run without notes prints what it did)
        if !self.notes.is_empty() {
            doc["znskit"]["notes"] = json!(self.notes);
        }
        doc
    }
}

/// fio's `sync` object: the flushes of fsync=/end_fsync and their latency.
fn sync_json(d: &DirStats) -> Json {
    let n = d.total_ios;
    let (min, max) = if n > 0 { (d.min(), d.max()) } else { (0, 0) };
    json!({
        "total_ios": n,
        "lat_ns": {"min": min, "max": max, "mean": d.mean(), "stddev": d.stddev(), "N": n},
    })
}
