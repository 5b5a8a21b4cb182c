//! What a run measures: latency histograms (log-linear buckets, 1/64
//! relative precision, exact mean), request and byte counters, and the time
//! series sampled every interval of virtual time.

use serde::Serialize;
use zns_plot::table::{Cell, Table};

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize) * SUB as usize + 2 * SUB as usize;

/// Latency histogram in ns.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            n: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

fn bucket_of(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    (SUB as usize) * shift as usize + (v >> shift) as usize
}

/// The middle of bucket `b`.
fn bucket_value(b: usize) -> u64 {
    if b < 2 * SUB as usize {
        return b as u64;
    }
    let shift = (b / SUB as usize - 1) as u32;
    let base = (b as u64 - SUB * u64::from(shift)) << shift;
    base + (1u64 << shift) / 2
}

impl Histogram {
    pub fn record(&mut self, ns: u64) {
        self.counts[bucket_of(ns)] += 1;
        self.n += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// The sum of the recorded values, ns.
    pub fn total_ns(&self) -> u128 {
        self.sum_ns
    }

    pub fn mean_ns(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.n as f64
        }
    }

    /// The `p`-th percentile (0..=100), ns (bucket middle; 0 when empty).
    pub fn percentile_ns(&self, p: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_value(b).min(self.max_ns);
            }
        }
        self.max_ns
    }

    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.n,
            mean_ms: self.mean_ns() / 1e6,
            p50_ms: self.percentile_ns(50.0) as f64 / 1e6,
            p99_ms: self.percentile_ns(99.0) as f64 / 1e6,
            p999_ms: self.percentile_ns(99.9) as f64 / 1e6,
            max_ms: self.max_ns as f64 / 1e6,
        }
    }
}

/// Mean and percentiles of one latency, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

/// Cumulative counters of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub gets: u64,
    pub hits: u64,
    pub misses: u64,
    /// Gets that found another request fetching the same key and waited for it.
    pub coalesced: u64,
    /// Bytes returned to clients (chunk size per get).
    pub get_bytes: u64,
    /// Bytes read from / written to the device by the cache.
    pub disk_read_bytes: u64,
    pub disk_write_bytes: u64,
    /// Bytes written for new chunks (misses).
    pub insert_bytes: u64,
    /// Host GC: chunks relocated and their bytes.
    pub gc_relocations: u64,
    pub gc_relocated_bytes: u64,
    /// Zones (regions) reclaimed: ZPLRU evictions and CLRU GC victims.
    pub zone_resets: u64,
    /// Chunks evicted (removed from the map).
    pub evicted_chunks: u64,
    /// Eviction rounds run by a worker because the background task fell behind.
    pub foreground_evictions: u64,
}

impl Counters {
    pub fn hit_ratio(&self) -> f64 {
        if self.gets == 0 {
            0.0
        } else {
            self.hits as f64 / self.gets as f64
        }
    }
    /// Host write amplification: device bytes written by the cache ÷ bytes inserted.
    pub fn host_waf(&self) -> f64 {
        if self.insert_bytes == 0 {
            1.0
        } else {
            self.disk_write_bytes as f64 / self.insert_bytes as f64
        }
    }
}

/// Device-side write counters (an FTL device's host and flash page writes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FlashCounters {
    pub host_write_bytes: u64,
    pub flash_write_bytes: u64,
}

impl FlashCounters {
    /// The bytes written since `earlier` (a snapshot of the same device).
    pub fn since(&self, earlier: &FlashCounters) -> FlashCounters {
        FlashCounters {
            host_write_bytes: self.host_write_bytes - earlier.host_write_bytes,
            flash_write_bytes: self.flash_write_bytes - earlier.flash_write_bytes,
        }
    }

    pub fn waf(&self) -> Option<f64> {
        (self.host_write_bytes > 0)
            .then(|| self.flash_write_bytes as f64 / self.host_write_bytes as f64)
    }
}

/// One point of the time series (values over the interval ending at `t_s`,
/// cumulative where named so).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub t_s: f64,
    /// Cumulative hit ratio since the start (ZNCache's HITRATIO).
    pub hit_ratio: f64,
    /// Hit ratio of the requests completed in this interval.
    pub hit_ratio_window: f64,
    pub gets_per_s: f64,
    pub get_gib_s: f64,
    pub read_gib_s: f64,
    pub write_gib_s: f64,
    pub get_mean_ms: f64,
    /// Mean latency of the chunk reads (hits) and chunk writes (inserts)
    /// completed in this interval, ms (`None`: none completed).
    pub disk_read_mean_ms: Option<f64>,
    pub disk_write_mean_ms: Option<f64>,
    pub free_zones: u32,
    pub used_bytes: u64,
    pub gc_relocations: u64,
    pub host_waf: f64,
    /// FTL device: flash ÷ host bytes written since the run started.
    pub device_waf: Option<f64>,
    /// FTL device: flash ÷ host bytes written over the last
    /// `run::DEVICE_WAF_WINDOW_INTERVALS` intervals, this one included
    /// (`None`: no host write, or no FTL): the device's GC phases.
    pub device_waf_window: Option<f64>,
}

/// A CSV cell: 4 decimals, empty for `None`.
fn opt4(v: Option<f64>) -> Cell {
    Cell::opt(v, |x| format!("{x:.4}"))
}

/// The time series as a table: a row per sample.
pub(crate) fn samples_table(samples: &[Sample]) -> Table {
    let mut t = Table::new([
        "t_s",
        "hit_ratio",
        "hit_ratio_window",
        "gets_per_s",
        "get_gib_s",
        "read_gib_s",
        "write_gib_s",
        "get_mean_ms",
        "disk_read_mean_ms",
        "disk_write_mean_ms",
        "free_zones",
        "used_bytes",
        "gc_relocations",
        "host_waf",
        "device_waf",
        "device_waf_window",
    ]);
    for x in samples {
        t.push([
            Cell::fixed(x.t_s, 3),
            Cell::fixed(x.hit_ratio, 6),
            Cell::fixed(x.hit_ratio_window, 6),
            Cell::fixed(x.gets_per_s, 3),
            Cell::fixed(x.get_gib_s, 6),
            Cell::fixed(x.read_gib_s, 6),
            Cell::fixed(x.write_gib_s, 6),
            Cell::fixed(x.get_mean_ms, 4),
            opt4(x.disk_read_mean_ms),
            opt4(x.disk_write_mean_ms),
            Cell::text(x.free_zones.to_string()),
            Cell::text(x.used_bytes.to_string()),
            Cell::text(x.gc_relocations.to_string()),
            Cell::fixed(x.host_waf, 4),
            opt4(x.device_waf),
            opt4(x.device_waf_window),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_close() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        let p50 = h.percentile_ns(50.0) as f64;
        assert!((p50 / 50_000_000.0 - 1.0).abs() < 0.02, "{p50}");
        let p999 = h.percentile_ns(99.9) as f64;
        assert!((p999 / 99_900_000.0 - 1.0).abs() < 0.02, "{p999}");
        assert!((h.mean_ns() - 50_000_500.0).abs() < 1.0);
        for b in [0usize, 5, 127, 128, 500, 3000] {
            assert_eq!(bucket_of(bucket_value(b)), b);
        }
        assert_eq!(Histogram::default().percentile_ns(99.0), 0);
        h.record(u64::MAX);
    }
}
