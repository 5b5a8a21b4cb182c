//! Latency and throughput statistics of one I/O direction, kept the way fio
//! keeps them so reports read the same: a log-linear latency histogram
//! (fio's "plat" scheme: values below 128 ns exact, then 64 buckets per power
//! of two, at most 1/64 relative error), exact min/max/mean/stddev (Welford),
//! fio's latency-distribution buckets (`latency_ns/us/ms`) and per-window
//! bandwidth / IOPS samples (fio's `bw_avg_time`, 500 ms).
//!
//! Memory per direction is about 15 KiB of histogram, whatever the number of
//! I/Os, plus one entry per sample window that saw I/O (idle windows cost
//! nothing: a `thinktime` of hours does not fill memory); merging reports
//! (group_reporting) is a bucket-wise sum.
//! Percentiles are read off the histogram exactly as fio does: the value of
//! the first bucket at which the cumulative count reaches `p/100 × N`, as the
//! bucket's midpoint.

use std::collections::BTreeMap;

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
    /// Completion latency (fio's clat; lat when the engine has no slat).
    clat: Moments,
    hist: Box<[u64]>,
    /// Counts per fio latency bucket: 10 ns-scale, 10 us-scale, 12 ms-scale.
    lat_dist: [u64; 32],
    /// Bytes and I/Os completed per sample window since the measurement
    /// start, for the windows that saw any (idle time costs no memory).
    windows: BTreeMap<u64, (u64, u64)>,
    /// Submission latency (fio's slat) of the I/Os that have one (libaio):
    /// the fields above are then the completion latency (clat), and the
    /// total (lat = slat + clat) is kept apart.
    slat: Moments,
    lat: Moments,
    /// Histogram of lat, only once an I/O had a submission latency (until
    /// then lat = clat and `hist` serves both).
    lat_hist: Option<Box<[u64]>>,
}

/// Count, min, max, mean and Welford sum of squares of a latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moments {
    pub n: u64,
    min_ns: u64,
    max_ns: u64,
    mean_ns: f64,
    m2: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            n: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            mean_ns: 0.0,
            m2: 0.0,
        }
    }
}

impl Moments {
    fn add(&mut self, ns: u64) {
        self.n += 1;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        let x = ns as f64;
        let d = x - self.mean_ns;
        self.mean_ns += d / self.n as f64;
        self.m2 += d * (x - self.mean_ns);
    }
    fn merge(&mut self, o: &Moments) {
        if o.n == 0 {
            return;
        }
        let (na, nb) = (self.n as f64, o.n as f64);
        let n = na + nb;
        let d = o.mean_ns - self.mean_ns;
        self.mean_ns += d * nb / n;
        self.m2 += o.m2 + d * d * na * nb / n;
        self.n += o.n;
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
    }
    pub fn min(&self) -> u64 {
        if self.n == 0 {
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
        if self.n < 2 {
            return 0.0;
        }
        (self.m2 / (self.n - 1) as f64).sqrt()
    }
}

impl Default for DirStats {
    fn default() -> Self {
        DirStats {
            io_bytes: 0,
            total_ios: 0,
            clat: Moments::default(),
            hist: vec![0; PLAT_NR].into_boxed_slice(),
            lat_dist: [0; 32],
            windows: BTreeMap::new(),
            slat: Moments::default(),
            lat: Moments::default(),
            lat_hist: None,
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
        self.add_split(bytes, 0, lat_ns, since_start_ns);
    }

    /// One completed I/O whose `lat_ns` began with `slat_ns` of submission
    /// (fio's slat; 0 = the engine has none): the direction's clat is
    /// `lat_ns − slat_ns`.
    pub fn add_split(&mut self, bytes: u64, slat_ns: u64, lat_ns: u64, since_start_ns: u64) {
        if slat_ns > 0 && self.lat_hist.is_none() {
            // lat was clat so far: the lat histogram starts as a copy
            self.lat_hist = Some(self.hist.clone());
        }
        if slat_ns > 0 {
            self.slat.add(slat_ns);
        }
        self.lat.add(lat_ns);
        if let Some(h) = self.lat_hist.as_mut() {
            h[bucket_of(lat_ns)] += 1;
        }
        let lat_ns = lat_ns - slat_ns.min(lat_ns);
        self.io_bytes += bytes;
        self.total_ios += 1;
        self.clat.add(lat_ns);
        self.hist[bucket_of(lat_ns)] += 1;
        self.lat_dist[lat_dist_index(lat_ns)] += 1;
        let w = self
            .windows
            .entry(since_start_ns / SAMPLE_WINDOW_NS)
            .or_default();
        w.0 += bytes;
        w.1 += 1;
    }

    pub fn min(&self) -> u64 {
        self.clat.min()
    }
    pub fn max(&self) -> u64 {
        self.clat.max()
    }
    pub fn mean(&self) -> f64 {
        self.clat.mean()
    }
    /// Sample standard deviation (n − 1), as fio prints it.
    pub fn stddev(&self) -> f64 {
        self.clat.stddev()
    }

    /// Submission latency (fio's `slat_ns`; n = 0 when the engine has none).
    pub fn slat(&self) -> &Moments {
        &self.slat
    }

    /// Total latency (fio's `lat_ns` = slat + clat).
    pub fn lat(&self) -> &Moments {
        &self.lat
    }

    /// fio's percentile of the total latency (`lat_percentiles=1`).
    pub fn lat_percentile(&self, p: f64) -> u64 {
        Self::hist_percentile(
            self.lat_hist.as_deref().unwrap_or(&self.hist),
            self.total_ios,
            p,
        )
    }

    /// fio's percentile (of clat): the midpoint of the first bucket where the
    /// cumulative count reaches `p`% of the I/Os (0 when there are none).
    pub fn percentile(&self, p: f64) -> u64 {
        Self::hist_percentile(&self.hist, self.total_ios, p)
    }

    fn hist_percentile(hist: &[u64], total_ios: u64, p: f64) -> u64 {
        if total_ios == 0 {
            return 0;
        }
        let want = (p / 100.0) * total_ios as f64;
        let mut sum = 0u64;
        for (i, &n) in hist.iter().enumerate() {
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

    /// Bandwidth (bytes/s) and IOPS over every full sample window of a run
    /// that measured `runtime_ns` (windows without I/O count as 0), without
    /// listing the windows: a run of days costs no memory for its idle time.
    pub fn sample_summaries(&self, runtime_ns: u64) -> (SampleSummary, SampleSummary) {
        let full = runtime_ns / SAMPLE_WINDOW_NS;
        let secs = SAMPLE_WINDOW_NS as f64 / 1e9;
        let busy = || self.windows.range(..full).map(|(_, &v)| v);
        let bw = SampleSummary::of(full, busy().map(|(b, _)| b as f64 / secs));
        let iops = SampleSummary::of(full, busy().map(|(_, n)| n as f64 / secs));
        (bw, iops)
    }

    /// Adds another direction's statistics (group_reporting): counts and
    /// histograms add, windows add element-wise (aggregate bandwidth).
    pub fn merge(&mut self, other: &DirStats) {
        if other.total_ios == 0 {
            return;
        }
        if self.lat_hist.is_some() || other.lat_hist.is_some() {
            // a side without a lat histogram of its own has lat = clat
            let mut mine = self.lat_hist.take().unwrap_or_else(|| self.hist.clone());
            let theirs = other.lat_hist.as_deref().unwrap_or(&other.hist);
            for (a, b) in mine.iter_mut().zip(theirs.iter()) {
                *a += b;
            }
            self.lat_hist = Some(mine);
        }
        self.clat.merge(&other.clat);
        self.io_bytes += other.io_bytes;
        self.total_ios += other.total_ios;
        for (a, b) in self.hist.iter_mut().zip(other.hist.iter()) {
            *a += b;
        }
        for (a, b) in self.lat_dist.iter_mut().zip(other.lat_dist.iter()) {
            *a += b;
        }
        self.slat.merge(&other.slat);
        self.lat.merge(&other.lat);
        for (&w, &(b, n)) in &other.windows {
            let mine = self.windows.entry(w).or_default();
            mine.0 += b;
            mine.1 += n;
        }
    }
}

/// min, max, mean and sample standard deviation of `n` samples (fio's bw
/// and iops statistics; all 0 when there are none).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SampleSummary {
    pub n: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub stddev: f64,
}

impl SampleSummary {
    /// The summary of `n` samples: the `nonzero` ones given, the rest 0.
    pub fn of(n: u64, nonzero: impl Iterator<Item = f64> + Clone) -> SampleSummary {
        if n == 0 {
            return SampleSummary::default();
        }
        let given = nonzero.clone().count() as u64;
        let zeros = n - given.min(n);
        let sum: f64 = nonzero.clone().sum();
        let mean = sum / n as f64;
        let fold = |f: fn(f64, f64) -> f64, zero_start: f64| {
            nonzero
                .clone()
                .fold(if zeros > 0 { 0.0 } else { zero_start }, f)
        };
        let min = fold(f64::min, f64::INFINITY);
        let max = fold(f64::max, f64::NEG_INFINITY);
        let stddev = if n < 2 {
            0.0
        } else {
            let sq: f64 =
                nonzero.map(|x| (x - mean).powi(2)).sum::<f64>() + zeros as f64 * mean * mean;
            (sq / (n - 1) as f64).sqrt()
        };
        SampleSummary {
            n,
            min,
            max,
            mean,
            stddev,
        }
    }

    /// Every value divided by `d` (bytes/s to KiB/s).
    pub fn scaled(self, d: f64) -> SampleSummary {
        SampleSummary {
            min: self.min / d,
            max: self.max / d,
            mean: self.mean / d,
            stddev: self.stddev / d,
            ..self
        }
    }
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
        let (bw, iops) = a.sample_summaries(1_000_000_000);
        assert_eq!((iops.n, iops.min, iops.max), (2, 200.0, 200.0));
        assert_eq!(bw.mean, 200.0 * 4096.0);
    }

    #[test]
    fn sample_summaries_imply_the_idle_windows() {
        // [10, 20, 0, 0, 0]: mean 6, sample stddev sqrt(320 / 4)
        let s = SampleSummary::of(5, [10.0, 20.0].into_iter());
        assert_eq!((s.n, s.min, s.max, s.mean), (5, 0.0, 20.0, 6.0));
        assert!((s.stddev - 80f64.sqrt()).abs() < 1e-9);
        // no idle window: the minimum is a real sample
        let s = SampleSummary::of(2, [10.0, 20.0].into_iter());
        assert_eq!((s.min, s.max, s.mean), (10.0, 20.0, 15.0));
        assert_eq!(
            SampleSummary::of(0, [1.0].into_iter()),
            SampleSummary::default()
        );
        let k = SampleSummary::of(2, [1024.0, 2048.0].into_iter()).scaled(1024.0);
        assert_eq!((k.min, k.max, k.mean), (1.0, 2.0, 1.5));
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
