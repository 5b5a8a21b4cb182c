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
//! Every fetch of one size takes the same time (the paper's runs used the
//! mean as a constant sleep).

use serde::Serialize;

/// (chunk bytes, mean latency ns) from the paper's appendix A.
pub const APPENDIX_A: [(u64, u64); 4] = [
    (64 << 10, 40_632_000),
    (256 << 20, 3_209_583_000),
    (512 << 20, 5_413_781_000),
    (1 << 30, 11_524_248_000),
];

/// How long a miss waits for the remote store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RemoteLatency {
    /// Interpolated from appendix A for the chunk size.
    Measured,
    /// A fixed latency per fetch.
    Fixed { ns: u64 },
}

impl RemoteLatency {
    /// Latency of one fetch of `chunk_bytes`, in ns.
    pub fn fetch_ns(self, chunk_bytes: u64) -> u64 {
        match self {
            RemoteLatency::Fixed { ns } => ns,
            RemoteLatency::Measured => measured_ns(chunk_bytes),
        }
    }

    /// `0`, `measured`/`auto`, or a duration (`40ms`).
    pub fn parse(s: &str) -> Result<RemoteLatency, crate::CacheError> {
        match s.trim() {
            "measured" | "auto" | "paper" => Ok(RemoteLatency::Measured),
            other => Ok(RemoteLatency::Fixed {
                ns: crate::units::parse_duration_ns(other)?,
            }),
        }
    }
}

fn measured_ns(chunk_bytes: u64) -> u64 {
    let pts = APPENDIX_A;
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
    }
}
