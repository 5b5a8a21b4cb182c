//! The remote store a miss fetches from, as a latency model (ZNCache does
//! not move real data either: a miss sleeps, then writes the chunk).
//!
//! `RemoteLatency::Measured` interpolates the paper's appendix A (S3
//! us-west-2, mean of 100 GETs per size): 64 KiB 40.632 ms, 256 MiB
//! 3.209583 s, 512 MiB 5.413781 s, 1 GiB 11.524248 s. Between two measured
//! sizes the latency is linear in the chunk size (a fixed request cost plus
//! a per-byte transfer cost, fitted per segment); below 64 KiB it stays at
//! the 64 KiB figure (the request round trip dominates); above 1 GiB it
//! continues the last segment's slope. The model gives 8 MiB ≈ 139.5 ms,
//! close to the 127.8 ms that OxCache's generator uses for 8 MiB chunks.
//! With `Measured` every fetch of one size takes the same time (the paper's
//! runs used the mean as a constant sleep). `MeasuredSpread` draws each fetch
//! from a log-normal with appendix A's mean and standard deviation for the
//! size (64 KiB 35.0 ms, 256 MiB 0.862 s, 512 MiB 0.100 s, 1 GiB 0.679 s;
//! interpolated the same way), as S3 itself behaved; it breaks the lockstep
//! that identical sleeps put concurrent misses in.

use std::cell::RefCell;

use rand_distr::{Distribution, LogNormal};
use serde::Serialize;
use zns_sim::SimRng;

/// (chunk bytes, mean latency ns) from the paper's appendix A.
pub const APPENDIX_A: [(u64, u64); 4] = [
    (64 << 10, 40_632_000),
    (256 << 20, 3_209_583_000),
    (512 << 20, 5_413_781_000),
    (1 << 30, 11_524_248_000),
];

/// (chunk bytes, standard deviation ns) from the paper's appendix A.
pub const APPENDIX_A_STD: [(u64, u64); 4] = [
    (64 << 10, 35_049_000),
    (256 << 20, 861_663_000),
    (512 << 20, 100_301_000),
    (1 << 30, 679_328_000),
];

/// How long a miss waits for the remote store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RemoteLatency {
    /// Interpolated from appendix A for the chunk size, the same every fetch.
    Measured,
    /// Log-normal per fetch, with appendix A's mean and standard deviation.
    MeasuredSpread,
    /// A fixed latency per fetch.
    Fixed { ns: u64 },
}

impl RemoteLatency {
    /// Mean latency of one fetch of `chunk_bytes`, in ns.
    pub fn fetch_ns(self, chunk_bytes: u64) -> u64 {
        match self {
            RemoteLatency::Fixed { ns } => ns,
            RemoteLatency::Measured | RemoteLatency::MeasuredSpread => {
                interpolate(&APPENDIX_A, chunk_bytes)
            }
        }
    }

    /// Standard deviation of one fetch's latency, in ns (0: constant).
    pub fn spread_ns(self, chunk_bytes: u64) -> u64 {
        match self {
            RemoteLatency::MeasuredSpread => interpolate(&APPENDIX_A_STD, chunk_bytes),
            RemoteLatency::Fixed { .. } | RemoteLatency::Measured => 0,
        }
    }

    /// `0`, `measured`/`auto`, `measured-spread`, or a duration (`40ms`).
    pub fn parse(s: &str) -> Result<RemoteLatency, crate::CacheError> {
        match s.trim() {
            "measured" | "auto" | "paper" => Ok(RemoteLatency::Measured),
            "measured-spread" => Ok(RemoteLatency::MeasuredSpread),
            other => Ok(RemoteLatency::Fixed {
                ns: crate::units::parse_duration_ns(other)?,
            }),
        }
    }
}

/// Draws each fetch's latency for one run: a constant, or a log-normal with
/// the given mean and standard deviation (its own seeded stream, so a spread
/// does not move any other random number of the run).
pub struct RemoteFetch {
    mean_ns: u64,
    spread: Option<(LogNormal<f64>, RefCell<SimRng>)>,
}

impl RemoteFetch {
    pub fn new(mean_ns: u64, std_ns: u64, seed: u64) -> RemoteFetch {
        let spread = if mean_ns > 0 && std_ns > 0 {
            let (m, s) = (mean_ns as f64, std_ns as f64);
            let sigma2 = (1.0 + (s / m).powi(2)).ln();
            // always valid for a positive mean and spread; if not, constant
            LogNormal::new(m.ln() - sigma2 / 2.0, sigma2.sqrt())
                .ok()
                .map(|dist| (dist, RefCell::new(SimRng::from_seed_u64(seed))))
        } else {
            None
        };
        RemoteFetch { mean_ns, spread }
    }

    /// A constant latency.
    pub fn fixed(ns: u64) -> RemoteFetch {
        RemoteFetch::new(ns, 0, 0)
    }

    /// The next fetch's latency, in ns.
    pub fn next_ns(&self) -> u64 {
        match &self.spread {
            None => self.mean_ns,
            Some((dist, rng)) => {
                let ns: f64 = dist.sample(&mut *rng.borrow_mut());
                ns.round().clamp(0.0, u64::MAX as f64 / 2.0) as u64
            }
        }
    }
}

/// Piecewise-linear interpolation over appendix A's chunk sizes.
fn interpolate(pts: &[(u64, u64); 4], chunk_bytes: u64) -> u64 {
    if chunk_bytes <= pts[0].0 {
        return pts[0].1;
    }
    let seg = pts
        .windows(2)
        .find(|w| chunk_bytes <= w[1].0)
        .unwrap_or(&pts[pts.len() - 2..]);
    let (x0, y0) = (seg[0].0 as f64, seg[0].1 as f64);
    let (x1, y1) = (seg[1].0 as f64, seg[1].1 as f64);
    let y = y0 + (chunk_bytes as f64 - x0) * (y1 - y0) / (x1 - x0);
    y.round().clamp(0.0, u64::MAX as f64 / 2.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_hits_the_measured_points() {
        for (bytes, ns) in APPENDIX_A {
            assert_eq!(RemoteLatency::Measured.fetch_ns(bytes), ns);
        }
        assert_eq!(RemoteLatency::Measured.fetch_ns(4096), 40_632_000);
        let mid = RemoteLatency::Measured.fetch_ns(384 << 20);
        assert!(mid > 3_209_583_000 && mid < 5_413_781_000);
        let eight = RemoteLatency::Measured.fetch_ns(8 << 20);
        assert!((130_000_000..150_000_000).contains(&eight), "{eight}");
        assert!(RemoteLatency::Measured.fetch_ns(2 << 30) > 11_524_248_000);
        assert_eq!(RemoteLatency::parse("0").unwrap().fetch_ns(1 << 30), 0);
        assert_eq!(
            RemoteLatency::parse("40ms").unwrap(),
            RemoteLatency::Fixed { ns: 40_000_000 }
        );
        assert_eq!(RemoteLatency::Measured.spread_ns(256 << 20), 0);
        assert_eq!(
            RemoteLatency::MeasuredSpread.spread_ns(256 << 20),
            861_663_000
        );
    }

    #[test]
    fn spread_fetches_have_the_measured_mean_and_deviation() {
        let r = RemoteLatency::parse("measured-spread").unwrap();
        let (mean, std) = (r.fetch_ns(256 << 20), r.spread_ns(256 << 20));
        let f = RemoteFetch::new(mean, std, 7);
        let xs: Vec<f64> = (0..20_000).map(|_| f.next_ns() as f64).collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!((m / mean as f64 - 1.0).abs() < 0.01, "mean {m}");
        assert!((sd / std as f64 - 1.0).abs() < 0.05, "std {sd}");
        assert!(xs.iter().all(|&x| x > 0.0));
        let g = RemoteFetch::new(mean, std, 7);
        assert_eq!(g.next_ns() as f64, xs[0], "same seed, same draws");
        assert_eq!(RemoteFetch::fixed(5).next_ns(), 5);
    }
}
