//! Text and CSV renderings of a run: the summary table, the time series as
//! CSV, and the files a run writes into an output directory.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::CacheError;
use crate::metrics::{samples_table, LatencySummary};
use crate::run::RunReport;
use crate::units::fmt_bytes;

fn lat_row(s: &mut String, name: &str, l: &LatencySummary) {
    let _ = writeln!(
        s,
        "  {name:<11} {:>10} {:>11.3} {:>11.3} {:>11.3} {:>11.3}",
        l.count, l.mean_ms, l.p50_ms, l.p99_ms, l.p999_ms
    );
}

/// The summary table.
pub fn summary_text(r: &RunReport) -> String {
    let g = &r.geometry;
    let c = &r.counters;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "zncache: {} backend on {} nsid {}, policy {}, {} chunks",
        r.backend.name(),
        r.device,
        r.nsid,
        r.policy.name(),
        fmt_bytes(g.chunk_bytes)
    );
    let _ = writeln!(
        s,
        "  cache      {} zones × {} chunks = {} chunks ({}), {} workers, remote fetch {:.3} ms{} ({})",
        g.zones,
        g.chunks_per_zone,
        g.total_chunks,
        fmt_bytes(g.cache_bytes()),
        r.workers,
        r.remote_fetch_ms,
        if r.remote_fetch_std_ms > 0.0 {
            format!(" ± {:.3} ms (log-normal)", r.remote_fetch_std_ms)
        } else {
            String::new()
        },
        match r.fetch_order {
            crate::cache::FetchOrder::HoldZone => "held zone: at most the active zones fetch at once",
            crate::cache::FetchOrder::FetchFirst => "fetched before taking a zone",
        }
    );
    let _ = writeln!(s, "  workload   {} ({} requests)", r.workload, r.requests);
    let _ = writeln!(s, "  duration   {:.3} s (virtual)", r.duration_s);
    let _ = writeln!(
        s,
        "  gets       {} ({} hits, {} misses, {} waited for an in-flight fetch)",
        c.gets, c.hits, c.misses, c.coalesced
    );
    let steady = r
        .steady_hit_ratio
        .map(|h| {
            format!(
                "{:.4} after the first eviction at {:.1} s",
                h,
                r.first_eviction_s.unwrap_or(0.0)
            )
        })
        .unwrap_or_else(|| "no eviction".into());
    let _ = writeln!(s, "  hit ratio  {:.4} overall, {steady}", r.hit_ratio);
    let _ = writeln!(
        s,
        "  throughput {:.1} gets/s, get {:.4} GiB/s, disk read {:.4} GiB/s, disk write {:.4} GiB/s",
        r.gets_per_s, r.get_gib_s, r.read_gib_s, r.write_gib_s
    );
    let _ = writeln!(
        s,
        "  host GC    {} chunks relocated ({}), {} zone resets, {} chunks evicted, {} foreground eviction rounds",
        c.gc_relocations,
        fmt_bytes(c.gc_relocated_bytes),
        c.zone_resets,
        c.evicted_chunks,
        c.foreground_evictions
    );
    let dev = match r.device_waf {
        Some(w) => format!("{w:.3}"),
        None => "n/a (the device reports no flash-write counters)".into(),
    };
    let _ = writeln!(s, "  WAF        host {:.3}, device {dev}", r.host_waf);
    let _ = writeln!(
        s,
        "  free zones min {} (zones holding nothing and not being written: the zones open for inserts are not free, so a cache with room left can show 0)",
        r.min_free_zones
    );
    if let (Some(m), Some(idle)) = (r.writes_in_flight_mean, r.write_idle_share) {
        let _ = writeln!(
            s,
            "  writes     {m:.2} chunk writes in flight on average, none for {:.1}% of the time (from the first write)",
            idle * 100.0
        );
    }
    let _ = writeln!(
        s,
        "  latency (ms)      count        mean         p50         p99       p99.9"
    );
    lat_row(&mut s, "get", &r.get);
    lat_row(&mut s, "hit", &r.hit);
    lat_row(&mut s, "miss", &r.miss);
    lat_row(&mut s, "disk read", &r.disk_read);
    lat_row(&mut s, "disk write", &r.disk_write);
    s
}

/// The time series as CSV.
pub fn samples_csv(r: &RunReport) -> String {
    samples_table(&r.samples).to_csv()
}

/// Writes `bytes` to `path`; a `CacheError::File` naming it.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
    std::fs::write(path, bytes).map_err(|e| CacheError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Writes `PREFIX.csv` (time series), `PREFIX-summary.txt`, `PREFIX.json`
/// and the PNG plots of one run into `dir`. Returns the files written.
pub fn write_run_outputs(
    r: &RunReport,
    dir: &Path,
    prefix: &str,
) -> Result<Vec<String>, CacheError> {
    std::fs::create_dir_all(dir).map_err(|e| CacheError::File {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let mut files = Vec::new();
    let mut put = |name: String, bytes: &[u8]| -> Result<(), CacheError> {
        let p = dir.join(&name);
        write_file(&p, bytes)?;
        files.push(p.display().to_string());
        Ok(())
    };
    put(format!("{prefix}.csv"), samples_csv(r).as_bytes())?;
    put(format!("{prefix}-summary.txt"), summary_text(r).as_bytes())?;
    let json = serde_json::to_string_pretty(r).map_err(|e| CacheError::Internal(e.to_string()))?;
    put(format!("{prefix}.json"), json.as_bytes())?;
    for (name, png) in crate::plot::run_plots(r, &format!("{prefix}: "))? {
        let p = dir.join(format!("{prefix}-{name}.png"));
        crate::plot::draw(&png, &p)?;
        files.push(p.display().to_string());
    }
    Ok(files)
}
