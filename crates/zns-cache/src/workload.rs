//! Request streams: YCSB's Zipfian generator (its exact formula, seeded),
//! uniform ids, and workload files in ZNCache's format (a flat array of
//! little-endian `u32` chunk ids, no header), plus text traces of real keys.
//!
//! The id space follows ZNCache's generator: `ids = cache chunks × ratio`
//! (ratio = working set ÷ cache size, e.g. 2 or 10); id 0 is the most
//! popular under Zipf (the unscrambled generator, as ZNCache uses).

use std::collections::HashMap;
use std::path::Path;

use rand::RngCore;
use serde::Serialize;
use zns_sim::SimRng;

use crate::error::CacheError;

/// YCSB's Zipfian constant θ.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// Popularity distribution of generated ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// YCSB `ZipfianGenerator` (θ = 0.99, unscrambled: id 0 hottest).
    Zipfian,
    Uniform,
}

impl Distribution {
    pub fn parse(s: &str) -> Result<Distribution, CacheError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zipf" | "zipfian" => Ok(Distribution::Zipfian),
            "uniform" | "unif" => Ok(Distribution::Uniform),
            other => Err(CacheError::Param(format!(
                "distribution `{other}`: expected zipf or uniform"
            ))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Zipfian => "zipf",
            Distribution::Uniform => "uniform",
        }
    }
}

/// A uniform double in [0, 1) from 53 random bits (as Java's `nextDouble`).
fn unit_f64(rng: &mut SimRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// YCSB's `ZipfianGenerator` over `[0, items)` (Gray et al., SIGMOD '94):
/// `zetan = Σ_{i=1..n} 1/i^θ`, `eta = (1 − (2/n)^(1−θ)) / (1 − zeta2θ/zetan)`,
/// `alpha = 1/(1−θ)`; a draw `u` gives 0 if `u·zetan < 1`, 1 if
/// `u·zetan < 1 + 0.5^θ`, else `⌊n·(eta·u − eta + 1)^alpha⌋`.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    zetan: f64,
    eta: f64,
    alpha: f64,
    half_pow_theta: f64,
}

impl Zipfian {
    pub fn new(items: u64, theta: f64) -> Result<Zipfian, CacheError> {
        if items == 0 {
            return Err(CacheError::Param("zipfian: no items".into()));
        }
        if !(theta > 0.0 && theta < 1.0) {
            return Err(CacheError::Param(format!(
                "zipfian: theta {theta} must be in (0, 1) (YCSB's formula divides by 1 − θ)"
            )));
        }
        // zetastatic: the sum in increasing i, as YCSB adds it.
        let mut zetan = 0.0f64;
        for i in 0..items {
            zetan += 1.0 / ((i + 1) as f64).powf(theta);
        }
        let zeta2theta = 1.0 + 1.0 / 2f64.powf(theta);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan);
        Ok(Zipfian {
            items,
            theta,
            zetan,
            eta,
            alpha,
            half_pow_theta: 0.5f64.powf(theta),
        })
    }

    pub fn items(&self) -> u64 {
        self.items
    }
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// The value for a uniform draw `u` in [0, 1).
    pub fn value_for(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1.min(self.items - 1);
        }
        let v = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(self.items - 1)
    }

    pub fn next(&self, rng: &mut SimRng) -> u64 {
        self.value_for(unit_f64(rng))
    }
}

/// A sequence of chunk ids to request, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub ids: Vec<u32>,
    /// Where it came from (for reports).
    pub origin: String,
}

impl Workload {
    /// `requests` ids over `[0, id_count)` drawn from `dist` with `seed`.
    pub fn generate(
        dist: Distribution,
        id_count: u64,
        requests: u64,
        seed: u64,
    ) -> Result<Workload, CacheError> {
        if id_count == 0 {
            return Err(CacheError::Param("workload: the id space is empty".into()));
        }
        if id_count > u64::from(u32::MAX) + 1 {
            return Err(CacheError::Param(format!(
                "workload: {id_count} ids do not fit the u32 ids of ZNCache's workload format"
            )));
        }
        if requests == 0 {
            return Err(CacheError::Param("workload: 0 requests".into()));
        }
        if requests > 1 << 32 {
            return Err(CacheError::Param(format!(
                "workload: {requests} requests is more than a workload holds (2^32)"
            )));
        }
        let mut rng = SimRng::from_seed_u64(seed);
        let mut ids = Vec::with_capacity(requests as usize);
        match dist {
            Distribution::Uniform => {
                for _ in 0..requests {
                    ids.push(rng.below_u64(id_count) as u32);
                }
            }
            Distribution::Zipfian => {
                let z = Zipfian::new(id_count, ZIPFIAN_CONSTANT)?;
                for _ in 0..requests {
                    ids.push(z.next(&mut rng) as u32);
                }
            }
        }
        Ok(Workload {
            ids,
            origin: format!("{} over {id_count} ids, seed {seed}", dist.name()),
        })
    }

    /// ZNCache's binary format: the ids as little-endian u32, nothing else.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.ids.len() * 4);
        for id in &self.ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
        out
    }

    pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<Workload, CacheError> {
        if bytes.is_empty() {
            return Err(CacheError::Workload(format!("{origin}: the file is empty")));
        }
        if bytes.len() % 4 != 0 {
            return Err(CacheError::Workload(format!(
                "{origin}: {} bytes is not a whole number of little-endian u32 ids",
                bytes.len()
            )));
        }
        let ids = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(Workload {
            ids,
            origin: origin.to_string(),
        })
    }

    pub fn save(&self, path: &Path) -> Result<(), CacheError> {
        std::fs::write(path, self.to_bytes()).map_err(|e| CacheError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// A binary workload file (ZNCache's format).
    pub fn load(path: &Path) -> Result<Workload, CacheError> {
        let bytes = std::fs::read(path).map_err(|e| CacheError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Workload::from_bytes(&bytes, &path.display().to_string())
    }

    /// A text trace: one request per line, the key is the line's first field
    /// (separated by a comma, tab or space; `#` lines and blank lines are
    /// skipped). Keys that are all numbers below 2^32 are used as ids if every
    /// key is; otherwise each distinct key gets the next dense id in order of
    /// first appearance.
    pub fn from_text_trace(text: &str, origin: &str) -> Result<Workload, CacheError> {
        let keys: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| l.split([',', '\t', ' ']).next().unwrap_or("").trim())
            .collect();
        if keys.is_empty() {
            return Err(CacheError::Workload(format!(
                "{origin}: no requests in the trace"
            )));
        }
        if keys.iter().any(|k| k.is_empty()) {
            return Err(CacheError::Workload(format!(
                "{origin}: a line has an empty key"
            )));
        }
        let numeric: Option<Vec<u32>> = keys.iter().map(|k| k.parse::<u32>().ok()).collect();
        let ids = match numeric {
            Some(ids) => ids,
            None => {
                let mut dense: HashMap<&str, u32> = HashMap::new();
                let mut ids = Vec::with_capacity(keys.len());
                for k in &keys {
                    let next = dense.len();
                    if next > u32::MAX as usize {
                        return Err(CacheError::Workload(format!(
                            "{origin}: more than 2^32 distinct keys"
                        )));
                    }
                    ids.push(*dense.entry(k).or_insert(next as u32));
                }
                ids
            }
        };
        Ok(Workload {
            ids,
            origin: origin.to_string(),
        })
    }

    /// A trace file: `.bin` (or anything not valid UTF-8) is read as the
    /// binary format, other files as a text trace.
    pub fn load_trace(path: &Path) -> Result<Workload, CacheError> {
        let bytes = std::fs::read(path).map_err(|e| CacheError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let origin = path.display().to_string();
        let is_bin = path.extension().is_some_and(|e| e == "bin");
        match (is_bin, std::str::from_utf8(&bytes)) {
            (false, Ok(text)) => Workload::from_text_trace(text, &origin),
            _ => Workload::from_bytes(&bytes, &origin),
        }
    }

    /// The number of distinct ids (the working set, in chunks).
    pub fn distinct_ids(&self) -> u64 {
        let mut v = self.ids.clone();
        v.sort_unstable();
        v.dedup();
        v.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipfian_matches_ycsb_constants() {
        let z = Zipfian::new(1000, 0.99).unwrap();
        assert!((z.alpha - 100.0).abs() < 1e-9);
        // rank 0 for u·zetan < 1, rank 1 just above
        assert_eq!(z.value_for(0.0), 0);
        assert_eq!(z.value_for(0.999 / z.zetan), 0);
        assert_eq!(z.value_for(1.001 / z.zetan), 1);
        assert!(z.value_for(0.999_999) < 1000);
        // popularity decreases with the rank
        let w = Workload::generate(Distribution::Zipfian, 1000, 200_000, 7).unwrap();
        let mut counts = vec![0u32; 1000];
        for id in &w.ids {
            counts[*id as usize] += 1;
        }
        assert!(counts[0] > counts[1] && counts[1] > counts[10] && counts[10] > counts[500]);
        // P(0) = 1/zetan
        let p0 = counts[0] as f64 / 200_000.0;
        assert!(
            (p0 - 1.0 / z.zetan).abs() < 0.01,
            "{p0} vs {}",
            1.0 / z.zetan
        );
    }

    #[test]
    fn generation_is_seeded_and_files_round_trip() {
        let a = Workload::generate(Distribution::Uniform, 50, 100, 3).unwrap();
        let b = Workload::generate(Distribution::Uniform, 50, 100, 3).unwrap();
        assert_eq!(a.ids, b.ids);
        assert!(a.ids.iter().all(|&i| i < 50));
        let back = Workload::from_bytes(&a.to_bytes(), "x").unwrap();
        assert_eq!(back.ids, a.ids);
        assert_eq!(&a.to_bytes()[..4], &a.ids[0].to_le_bytes());
        assert!(Workload::from_bytes(&[], "e").is_err());
        assert!(Workload::from_bytes(&[1, 2, 3], "e").is_err());
        assert!(Workload::generate(Distribution::Zipfian, 0, 10, 1).is_err());
    }

    #[test]
    fn text_traces() {
        let w = Workload::from_text_trace("# t\n5,a\n7\n5\n", "t").unwrap();
        assert_eq!(w.ids, vec![5, 7, 5]);
        let w = Workload::from_text_trace("k1,1\nk2\nk1\n", "t").unwrap();
        assert_eq!(w.ids, vec![0, 1, 0]);
        assert!(Workload::from_text_trace("\n# only\n", "t").is_err());
    }
}
