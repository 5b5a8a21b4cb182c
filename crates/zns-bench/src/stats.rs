//! Latency and throughput statistics of one I/O direction, kept the way fio
//! keeps them so reports read the same: a log-linear latency histogram
//! (fio's "plat" scheme: values below 128 ns exact, then 64 buckets per power
//! of two, at most 1/64 relative error), exact min/max/mean/stddev (Welford),
//! fio's latency-distribution buckets (`latency_ns/us/ms`) and per-window
//! bandwidth / IOPS samples (fio's `bw_avg_time`, 500 ms).
//!
//! Memory per direction is fixed (about 15 KiB of histogram), whatever the
//! number of I/Os, and merging reports (group_reporting) is a bucket-wise sum.
//! Percentiles are read off the histogram exactly as fio does: the value of
//! the first bucket at which the cumulative count reaches `p/100 × N`, as the
//! bucket's midpoint.

/// Bits of linear resolution per power of two.
const PLAT_BITS: u32 = 6;
/// Buckets per power of two.
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Powers of two covered (up to ~2^34 ns ≈ 17 s at full resolution; larger
/// values land in the last bucket).
const PLAT_GROUPS: u64 = 29;
/// Number of histogram buckets.
pub const PLAT_NR: usize = (PLAT_GROUPS * PLAT_VAL) as usize;

/// Width of a bandwidth/IOPS sample window (fio's default `bw_avg_time`).
pub const SAMPLE_WINDOW_NS: u64 = 500_000_000;

/// Histogram bucket of a latency in ns.
pub fn bucket_of(ns: u64) -> usize {
    if ns == 0 {
        return 0;
    }
    let msb = 63 - ns.leading_zeros();
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = u64::from(error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (ns >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// Representative value (ns) of a bucket: its midpoint, as fio reports it.
pub fn bucket_value(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    let k = idx % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// fio's latency-distribution bucket upper bounds, per unit.
pub const LAT_BOUNDS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
/// The millisecond scale has two more: 2000 and ">=2000".
pub const LAT_MS_BOUNDS: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// Statistics of one direction (read, write, or one zone-management op).
#[derive(Debug, Clone, PartialEq)]
pub struct DirStats {
    pub io_bytes: u64,
    pub total_ios: u64,
    min_ns: u64,
    max_ns: u64,
    mean_ns: f64,
    /// Welford's running sum of squared deviations.
    m2: f64,
    hist: Box<[u64]>,
    /// Counts per fio latency bucket: 10 ns-scale, 10 us-scale, 12 ms-scale.
    lat_dist: [u64; 32],
    /// Bytes and I/Os completed per sample window since the measurement start.
    window_bytes: Vec<u64>,
    window_ios: Vec<u64>,
}

impl Default for DirStats {
    fn default() -> Self {
        DirStats {
            io_bytes: 0,
            total_ios: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            mean_ns: 0.0,
            m2: 0.0,
            hist: vec![0; PLAT_NR].into_boxed_slice(),
            lat_dist: [0; 32],
            window_bytes: Vec::new(),
            window_ios: Vec::new(),
        }
    }
}

fn lat_dist_index(ns: u64) -> usize {
    let scale = |v: u64| LAT_BOUNDS.iter().position(|&b| v < b).unwrap_or(9);
    if ns < 1_000 {
        scale(ns)
    } else if ns < 1_000_000 {
        10 + scale(ns / 1_000)
    } else {
        let ms = ns / 1_000_000;
        20 + LAT_MS_BOUNDS.iter().position(|&b| ms < b).unwrap_or(11)
    }
}

impl DirStats {
    /// One completed I/O of `bytes` taking `lat_ns`, completing `since_start_ns`
    /// after the measurement started.
    pub fn add(&mut self, bytes: u64, lat_ns: u64, since_start_ns: u64) {
        self.io_bytes += bytes;
        self.total_ios += 1;
        self.min_ns = self.min_ns.min(lat_ns);
        self.max_ns = self.max_ns.max(lat_ns);
        let x = lat_ns as f64;
        let d = x - self.mean_ns;
        self.mean_ns += d / self.total_ios as f64;
        self.m2 += d * (x - self.mean_ns);
        self.hist[bucket_of(lat_ns)] += 1;
        self.lat_dist[lat_dist_index(lat_ns)] += 1;
        let w = (since_start_ns / SAMPLE_WINDOW_NS) as usize;
        if w < (1 << 20) {
            if self.window_bytes.len() <= w {
                self.window_bytes.resize(w + 1, 0);
                self.window_ios.resize(w + 1, 0);
            }
            self.window_bytes[w] += bytes;
            self.window_ios[w] += 1;
        }
    }

    pub fn min(&self) -> u64 {
        if self.total_ios == 0 {
            0
        } else {
            self.min_ns
        }
    }
    pub fn max(&self) -> u64 {
        self.max_ns
    }
    pub fn mean(&self) -> f64 {
        self.mean_ns
    }
    /// Sample standard deviation (n − 1), as fio prints it.
    pub fn stddev(&self) -> f64 {
        if self.total_ios < 2 {
            return 0.0;
        }
        (self.m2 / (self.total_ios - 1) as f64).sqrt()
    }

    /// fio's percentile: the midpoint of the first bucket where the
    /// cumulative count reaches `p`% of the I/Os (0 when there are none).
    pub fn percentile(&self, p: f64) -> u64 {
        if self.total_ios == 0 {
            return 0;
        }
        let want = (p / 100.0) * self.total_ios as f64;
        let mut sum = 0u64;
        for (i, &n) in self.hist.iter().enumerate() {
            sum += n;
            if n > 0 && sum as f64 >= want {
                return bucket_value(i);
            }
        }
        bucket_value(PLAT_NR - 1)
    }

    /// Non-empty histogram buckets as (value ns, count), for fio's json+ `bins`.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.hist
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (bucket_value(i), n))
    }

    /// Counts per fio latency-distribution bucket: (unit, label, count) with
    /// unit "ns", "us" or "ms".
    pub fn latency_distribution(&self) -> Vec<(&'static str, String, u64)> {
        let mut out = Vec::with_capacity(32);
        for (i, b) in LAT_BOUNDS.iter().enumerate() {
            out.push(("ns", b.to_string(), self.lat_dist[i]));
        }
        for (i, b) in LAT_BOUNDS.iter().enumerate() {
            out.push(("us", b.to_string(), self.lat_dist[10 + i]));
        }
        for (i, b) in LAT_MS_BOUNDS.iter().enumerate() {
            out.push(("ms", b.to_string(), self.lat_dist[20 + i]));
        }
        out.push(("ms", ">=2000".to_string(), self.lat_dist[31]));
        out
    }

    /// Bandwidth (bytes/s) and IOPS of every full sample window of a run that
    /// measured `runtime_ns`.
    pub fn samples(&self, runtime_ns: u64) -> (Vec<f64>, Vec<f64>) {
        let full = (runtime_ns / SAMPLE_WINDOW_NS) as usize;
        let secs = SAMPLE_WINDOW_NS as f64 / 1e9;
        let n = full.min(self.window_bytes.len().max(full));
        let get = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0) as f64 / secs;
        (
            (0..n).map(|i| get(&self.window_bytes, i)).collect(),
            (0..n).map(|i| get(&self.window_ios, i)).collect(),
        )
    }

    /// Adds another direction's statistics (group_reporting): counts and
    /// histograms add, windows add element-wise (aggregate bandwidth).
    pub fn merge(&mut self, other: &DirStats) {
        if other.total_ios == 0 {
            return;
        }
        let (na, nb) = (self.total_ios as f64, other.total_ios as f64);
        let n = na + nb;
        let d = other.mean_ns - self.mean_ns;
        self.mean_ns += d * nb / n;
        self.m2 += other.m2 + d * d * na * nb / n;
        self.io_bytes += other.io_bytes;
        self.total_ios += other.total_ios;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        for (a, b) in self.hist.iter_mut().zip(other.hist.iter()) {
            *a += b;
        }
        for (a, b) in self.lat_dist.iter_mut().zip(other.lat_dist.iter()) {
            *a += b;
        }
        if self.window_bytes.len() < other.window_bytes.len() {
            self.window_bytes.resize(other.window_bytes.len(), 0);
            self.window_ios.resize(other.window_ios.len(), 0);
        }
        for (i, (&b, &n)) in other
            .window_bytes
            .iter()
            .zip(other.window_ios.iter())
            .enumerate()
        {
            self.window_bytes[i] += b;
            self.window_ios[i] += n;
        }
    }
}

/// min, max, mean and sample stddev of a list (0s when empty).
pub fn summary(v: &[f64]) -> (f64, f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let sd = if v.len() < 2 {
        0.0
    } else {
        (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
    };
    (min, max, mean, sd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact_and_large_ones_within_one_64th() {
        for v in 0..128u64 {
            assert_eq!(bucket_value(bucket_of(v)), v);
        }
        for &v in &[128u64, 1000, 11_362, 81_410, 16_190_000, 907_510_000] {
            let r = bucket_value(bucket_of(v));
            let err = (r as f64 - v as f64).abs() / v as f64;
            assert!(err <= 1.0 / 64.0, "{v} -> {r}");
        }
        assert_eq!(bucket_of(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_mean_stddev_and_merge() {
        let mut a = DirStats::default();
        for i in 1..=100u64 {
            a.add(4096, i * 1000, 0);
        }
        assert_eq!(a.min(), 1000);
        assert_eq!(a.max(), 100_000);
        assert!((a.mean() - 50_500.0).abs() < 1e-6);
        let sd = a.stddev();
        assert!((sd - 29_011.49).abs() < 1.0, "{sd}");
        let p50 = a.percentile(50.0);
        assert!(
            (p50 as f64 - 50_000.0).abs() / 50_000.0 < 1.0 / 64.0,
            "{p50}"
        );
        let p99 = a.percentile(99.0);
        assert!(
            (p99 as f64 - 99_000.0).abs() / 99_000.0 < 1.0 / 64.0,
            "{p99}"
        );

        let mut b = DirStats::default();
        for i in 101..=200u64 {
            b.add(4096, i * 1000, 600_000_000);
        }
        let mut all = DirStats::default();
        for i in 1..=200u64 {
            all.add(4096, i * 1000, 0);
        }
        a.merge(&b);
        assert_eq!(a.total_ios, 200);
        assert!((a.mean() - all.mean()).abs() < 1e-6);
        assert!((a.stddev() - all.stddev()).abs() < 1e-6);
        assert_eq!(a.percentile(90.0), all.percentile(90.0));
        let (bw, iops) = a.samples(1_000_000_000);
        assert_eq!(iops, vec![200.0, 200.0]);
        assert_eq!(bw[0], 200.0 * 4096.0);
    }

    #[test]
    fn latency_distribution_buckets() {
        let mut a = DirStats::default();
        a.add(1, 1, 0); // ns <2
        a.add(1, 11_000, 0); // us 20
        a.add(1, 3_000_000_000, 0); // ms >=2000
        let d = a.latency_distribution();
        assert_eq!(d[0], ("ns", "2".into(), 1));
        assert_eq!(d[13], ("us", "20".into(), 1));
        assert_eq!(d[31], ("ms", ">=2000".into(), 1));
    }
}
