//! fio's `random_distribution`: where the next block of a random job falls.
//!
//! - `random` (the default): uniform, with fio's random map unless
//!   `norandommap=1` (`randmap`).
//! - `zipf:THETA[:CENTER]` and `pareto:H[:CENTER]`: a few blocks are hot.
//!   A rank is drawn (Zipf: P(rank k) ∝ 1/k^THETA over the range's blocks;
//!   Pareto: rank = (n − 1) · u^(ln H / ln(1 − H)) for u uniform in [0, 1),
//!   so `pareto:0.2` sends 80 % of the I/O to 20 % of the blocks) and mapped
//!   to a block: without CENTER through a keyed permutation of the range, so
//!   the hot blocks are spread over it as fio's hashing spreads them; with
//!   CENTER in [0, 1] the hottest block is at CENTER of the range and the
//!   next hottest follow it, wrapping at the end (fio's "base of the
//!   distribution").
//! - `normal:DEV[:CENTER]`: Gaussian around CENTER (default 0.5) of the
//!   range with a standard deviation of DEV % of the range; a draw outside
//!   the range is drawn again.
//! - `zoned:A/R:A/R…`: A % of the I/Os go to the next R % of the range, the
//!   zones in order from the range's start; both columns add up to 100.
//! - `zoned_abs:A/SIZE:A/SIZE…`: the same with the zones' sizes in bytes
//!   (`60/20g:40/100g`); the accesses add up to 100 and the zones must fit
//!   in the job's range ([`RandomDistribution::span_bytes`]).
//!
//! As in fio, a non-uniform distribution uses no random map (blocks repeat).
//! Draws come from the job's seeded stream, so runs repeat.

use std::fmt;

use rand_distr::{Distribution as _, Normal, Zipf};
use zns_sim::SimRng;

use crate::randmap::BlockPermutation;
use zns_target::size::parse_bytes;

/// A parsed `random_distribution` value.
#[derive(Debug, Clone, PartialEq)]
pub enum RandomDistribution {
    Uniform,
    Zipf {
        theta: f64,
        center: Option<f64>,
    },
    Pareto {
        h: f64,
        center: Option<f64>,
    },
    Normal {
        dev_percent: f64,
        center: f64,
    },
    /// (access %, range %) per zone of the range, in order.
    Zoned(Vec<(f64, f64)>),
    /// (access %, bytes) per zone from the range's start, in order.
    ZonedAbs(Vec<(f64, u64)>),
}

impl RandomDistribution {
    /// Parses fio's syntax; the error says what was expected.
    pub fn parse(text: &str) -> Result<RandomDistribution, String> {
        let text = text.trim();
        if text.contains(',') {
            return Err(format!(
                "'{text}': per-direction lists (one distribution per direction, separated by ',') are not supported: give one distribution for every direction"
            ));
        }
        let (kind, rest) = match text.split_once(':') {
            Some((k, r)) => (k.trim(), Some(r.trim())),
            None => (text, None),
        };
        let number = |s: &str, what: &str| -> Result<f64, String> {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("{kind}: {what} '{s}' is not a number"))
        };
        let value_and_center = |what: &str| -> Result<(f64, Option<f64>), String> {
            let rest =
                rest.ok_or_else(|| format!("{kind} needs a value: {kind}:{what}[:CENTER]"))?;
            let (v, c) = match rest.split_once(':') {
                Some((v, c)) => (v, Some(c)),
                None => (rest, None),
            };
            let v = number(v, what)?;
            let c = match c {
                Some(c) => {
                    let c = number(c, "center")?;
                    if !(0.0..=1.0).contains(&c) {
                        return Err(format!("{kind}: center {c} is outside [0, 1]"));
                    }
                    Some(c)
                }
                None => None,
            };
            Ok((v, c))
        };
        match kind {
            "random" if rest.is_none() => Ok(RandomDistribution::Uniform),
            "zipf" => {
                let (theta, center) = value_and_center("THETA")?;
                if theta <= 0.0 {
                    return Err(format!("zipf: theta {theta} must be > 0"));
                }
                Ok(RandomDistribution::Zipf { theta, center })
            }
            "pareto" => {
                let (h, center) = value_and_center("H")?;
                if !(h > 0.0 && h < 1.0) {
                    return Err(format!("pareto: H {h} must be in (0, 1) (0.2: 80 % of the I/O on 20 % of the blocks)"));
                }
                Ok(RandomDistribution::Pareto { h, center })
            }
            "normal" => {
                let (dev_percent, center) = value_and_center("DEV")?;
                if !(dev_percent > 0.0 && dev_percent <= 100.0) {
                    return Err(format!(
                        "normal: deviation {dev_percent} must be a percentage of the range in (0, 100]"
                    ));
                }
                Ok(RandomDistribution::Normal {
                    dev_percent,
                    center: center.unwrap_or(0.5),
                })
            }
            "zoned" => {
                let zones = zone_list(kind, rest, "RANGE%", "zoned:60/10:30/20:10/70", |r| {
                    number(r, "range %").and_then(|r| {
                        if r > 0.0 && r <= 100.0 {
                            Ok(r)
                        } else {
                            Err(format!("zoned: range {r} % is not in (0, 100]"))
                        }
                    })
                })?;
                let sr: f64 = zones.iter().map(|z| z.1).sum();
                if (sr - 100.0).abs() > 1e-6 {
                    return Err(format!("zoned: the ranges add up to {sr} %; they must add up to 100"));
                }
                Ok(RandomDistribution::Zoned(zones))
            }
            "zoned_abs" => {
                let zones = zone_list(kind, rest, "SIZE", "zoned_abs:60/20g:40/100g", |r| {
                    parse_bytes(r)
                        .ok()
                        .filter(|&b| b > 0)
                        .ok_or_else(|| format!("zoned_abs: size '{r}' is not a size in bytes (e.g. 20g)"))
                })?;
                Ok(RandomDistribution::ZonedAbs(zones))
            }
            _ => Err(format!(
                "'{text}': expected random, zipf:THETA[:CENTER], pareto:H[:CENTER], normal:DEV[:CENTER], zoned:A/R:… or zoned_abs:A/SIZE:…"
            )),
        }
    }

    pub fn is_uniform(&self) -> bool {
        *self == RandomDistribution::Uniform
    }

    /// The bytes from the range's start that `zoned_abs` zones cover (a job
    /// whose range is shorter is refused); `None` for other distributions.
    pub fn span_bytes(&self) -> Option<u64> {
        match self {
            RandomDistribution::ZonedAbs(zones) => {
                Some(zones.iter().fold(0u64, |s, z| s.saturating_add(z.1)))
            }
            _ => None,
        }
    }
}

/// The zones of `zoned` and `zoned_abs` (`kind`): `ACCESS%/SIZE` parts
/// separated by `:`, each size read by `size` (`what` and `example` for the
/// messages); the accesses add up to 100.
fn zone_list<T>(
    kind: &str,
    rest: Option<&str>,
    what: &str,
    example: &str,
    size: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<(f64, T)>, String> {
    let rest = rest
        .ok_or_else(|| format!("{kind} needs zones: {kind}:ACCESS%/{what}:… (e.g. {example})"))?;
    let mut zones = Vec::new();
    let mut access_sum = 0.0;
    for part in rest.split(':') {
        let (a, r) = part
            .split_once('/')
            .ok_or_else(|| format!("{kind}: '{part}' is not ACCESS%/{what}"))?;
        let a = a
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|a| (0.0..=100.0).contains(a))
            .ok_or_else(|| format!("{kind}: access '{a}' is not a percentage in [0, 100]"))?;
        access_sum += a;
        zones.push((a, size(r.trim())?));
    }
    if (access_sum - 100.0).abs() > 1e-6 {
        return Err(format!(
            "{kind}: the accesses add up to {access_sum} %; they must add up to 100"
        ));
    }
    Ok(zones)
}

impl fmt::Display for RandomDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let center = |c: &Option<f64>| c.map(|c| format!(":{c}")).unwrap_or_default();
        match self {
            RandomDistribution::Uniform => write!(f, "random"),
            RandomDistribution::Zipf { theta, center: c } => write!(f, "zipf:{theta}{}", center(c)),
            RandomDistribution::Pareto { h, center: c } => write!(f, "pareto:{h}{}", center(c)),
            RandomDistribution::Normal {
                dev_percent,
                center,
            } => {
                write!(f, "normal:{dev_percent}:{center}")
            }
            RandomDistribution::Zoned(zones) => {
                let parts: Vec<String> = zones.iter().map(|(a, r)| format!("{a}/{r}")).collect();
                write!(f, "zoned:{}", parts.join(":"))
            }
            RandomDistribution::ZonedAbs(zones) => {
                let parts: Vec<String> = zones.iter().map(|(a, b)| format!("{a}/{b}")).collect();
                write!(f, "zoned_abs:{}", parts.join(":"))
            }
        }
    }
}

/// How ranks become blocks.
#[derive(Debug, Clone)]
enum Placement {
    /// Spread over the range by a keyed permutation.
    Spread(BlockPermutation),
    /// The hottest at this block, the next ones after it (wrapping).
    From(u64),
}

#[derive(Debug, Clone)]
enum Draw {
    Zipf(Zipf<f64>),
    /// ln H / ln(1 − H).
    Pareto(f64),
    Normal(Normal<f64>),
    /// Cumulative access fraction and the first block of each zone, plus
    /// the block after the last.
    Zoned(Vec<(f64, u64)>),
}

/// The draw of zones with these accesses (percent) ending at these blocks
/// (the last zone ends at `n` for `zoned`, at or before it for `zoned_abs`).
fn zoned_draw<T>(zones: &[(f64, T)], ends: impl Iterator<Item = u64>, n: u64) -> Draw {
    let mut cum = Vec::with_capacity(zones.len() + 1);
    let (mut access, mut first) = (0.0, 0);
    for (&(a, _), end) in zones.iter().zip(ends) {
        cum.push((access / 100.0, first));
        access += a;
        first = end.min(n);
    }
    cum.push((1.0, first));
    Draw::Zoned(cum)
}

/// Draws blocks `0..n` as a non-uniform [`RandomDistribution`] says.
#[derive(Debug, Clone)]
pub struct BlockSampler {
    n: u64,
    draw: Draw,
    place: Placement,
}

impl BlockSampler {
    /// A sampler over `n` blocks (n ≥ 1) of `block_bytes`, keyed from
    /// `rng`; None for the uniform distribution, which the caller draws
    /// itself.
    pub fn new(
        dist: &RandomDistribution,
        n: u64,
        block_bytes: u64,
        rng: &mut SimRng,
    ) -> Option<BlockSampler> {
        let n = n.max(1);
        let place = |center: Option<f64>, rng: &mut SimRng| match center {
            Some(c) => Placement::From(((c * n as f64) as u64).min(n - 1)),
            None => Placement::Spread(BlockPermutation::new(n, rng)),
        };
        let (draw, place) = match dist {
            RandomDistribution::Uniform => return None,
            RandomDistribution::Zipf { theta, center } => (
                // (n ≥ 1 and theta > 0: the parser checked; Zipf cannot fail)
                Draw::Zipf(Zipf::new(n, *theta).ok()?),
                place(*center, rng),
            ),
            RandomDistribution::Pareto { h, center } => {
                (Draw::Pareto(h.ln() / (1.0 - h).ln()), place(*center, rng))
            }
            RandomDistribution::Normal {
                dev_percent,
                center,
            } => {
                let sd = (dev_percent / 100.0 * n as f64).max(f64::MIN_POSITIVE);
                (
                    Draw::Normal(Normal::new(center * n as f64, sd).ok()?),
                    Placement::From(0),
                )
            }
            RandomDistribution::Zoned(zones) => {
                let ends = zones.iter().scan(0.0, |range, &(_, r)| {
                    *range += r;
                    Some(((*range / 100.0) * n as f64) as u64)
                });
                (zoned_draw(zones, ends, n), Placement::From(0))
            }
            RandomDistribution::ZonedAbs(zones) => {
                let block_bytes = block_bytes.max(1);
                let ends = zones.iter().scan(0u64, |bytes, &(_, b)| {
                    *bytes = bytes.saturating_add(b);
                    Some((*bytes / block_bytes).min(n))
                });
                (zoned_draw(zones, ends, n), Placement::From(0))
            }
        };
        Some(BlockSampler { n, draw, place })
    }

    /// The next block, in `0..n`.
    pub fn next(&mut self, rng: &mut SimRng) -> u64 {
        let n = self.n;
        let rank = match &self.draw {
            // Zipf draws ranks 1..=n
            Draw::Zipf(z) => (z.sample(rng) as u64).clamp(1, n) - 1,
            Draw::Pareto(pow) => {
                let u: f64 = rand::Rng::gen(rng);
                (((n - 1) as f64 * u.powf(*pow)) as u64).min(n - 1)
            }
            Draw::Normal(normal) => {
                let mut x = normal.sample(rng);
                for _ in 0..64 {
                    if x >= 0.0 && x < n as f64 {
                        break;
                    }
                    x = normal.sample(rng);
                }
                return (x.max(0.0) as u64).min(n - 1);
            }
            Draw::Zoned(cum) => {
                let u: f64 = rand::Rng::gen(rng);
                // the zone whose cumulative access share covers u
                let k = cum[1..]
                    .iter()
                    .position(|&(c, _)| u < c)
                    .unwrap_or(cum.len() - 2);
                let (from, to) = (cum[k].1, cum[k + 1].1.max(cum[k].1 + 1));
                return (from + rng.below_u64(to - from)).min(n - 1);
            }
        };
        match &self.place {
            Placement::Spread(p) => p.map(rank),
            Placement::From(first) => (first + rank) % n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(dist: &str, n: u64, draws: usize) -> Vec<u64> {
        let d = RandomDistribution::parse(dist).unwrap();
        let mut rng = SimRng::from_seed_u64(7);
        let mut s = BlockSampler::new(&d, n, 4096, &mut rng).unwrap();
        let mut h = vec![0u64; n as usize];
        for _ in 0..draws {
            let b = s.next(&mut rng);
            assert!(b < n);
            h[b as usize] += 1;
        }
        h
    }

    /// The share of the draws that went to the hottest `fraction` of blocks.
    fn hot_share(h: &[u64], fraction: f64) -> f64 {
        let mut v = h.to_vec();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let k = (v.len() as f64 * fraction) as usize;
        v[..k].iter().sum::<u64>() as f64 / v.iter().sum::<u64>() as f64
    }

    #[test]
    fn parses_fio_syntax_and_refuses_nonsense() {
        assert_eq!(
            RandomDistribution::parse("random"),
            Ok(RandomDistribution::Uniform)
        );
        assert_eq!(
            RandomDistribution::parse("zipf:1.2"),
            Ok(RandomDistribution::Zipf {
                theta: 1.2,
                center: None
            })
        );
        assert_eq!(
            RandomDistribution::parse("pareto:0.2:0.5"),
            Ok(RandomDistribution::Pareto {
                h: 0.2,
                center: Some(0.5)
            })
        );
        assert_eq!(
            RandomDistribution::parse("normal:10").map(|d| d.to_string()),
            Ok("normal:10:0.5".to_string())
        );
        assert!(RandomDistribution::parse("zoned:60/10:40/90").is_ok());
        for bad in [
            "zipf",
            "zipf:x",
            "zipf:0",
            "zipf:1.2:2",
            "pareto:1",
            "pareto:0",
            "normal:0",
            "normal:101",
            "zoned:60/10:30/90",
            "zoned:60:40",
            "gauss:1",
            "zoned:50/50,50/50",
            "zipf:1.2,pareto:0.3",
            "zoned_abs:60/20g:30/1g",
            "zoned_abs:60/x:40/1g",
            "zoned_abs:100/0",
            "zoned_abs",
            "",
        ] {
            assert!(
                RandomDistribution::parse(bad).is_err(),
                "{bad} was accepted"
            );
        }
    }

    #[test]
    fn pareto_02_puts_about_80_percent_on_20_percent_of_the_blocks() {
        let h = histogram("pareto:0.2", 1000, 200_000);
        let share = hot_share(&h, 0.2);
        assert!((0.77..0.83).contains(&share), "pareto:0.2: {share}");
    }

    #[test]
    fn zipf_is_skewed_and_centered_zipf_starts_at_its_center() {
        let h = histogram("zipf:1.2", 1000, 100_000);
        assert!(hot_share(&h, 0.01) > 0.5, "{}", hot_share(&h, 0.01));
        // spread: the hottest block is not simply block 0
        let centered = histogram("zipf:1.2:0.5", 1000, 100_000);
        let hottest = (0..1000).max_by_key(|&i| centered[i]).unwrap();
        assert_eq!(hottest, 500);
        assert!(centered[501] > centered[700]);
    }

    #[test]
    fn normal_clusters_around_its_center() {
        let h = histogram("normal:5:0.25", 1000, 50_000);
        let near: u64 = h[150..350].iter().sum();
        // ±2 standard deviations: ~95 %
        assert!(near as f64 / 50_000.0 > 0.93);
    }

    #[test]
    fn zoned_sends_each_share_to_its_range() {
        let h = histogram("zoned:60/10:30/20:10/70", 1000, 100_000);
        let part = |a: usize, b: usize| h[a..b].iter().sum::<u64>() as f64 / 100_000.0;
        assert!((part(0, 100) - 0.6).abs() < 0.01);
        assert!((part(100, 300) - 0.3).abs() < 0.01);
        assert!((part(300, 1000) - 0.1).abs() < 0.01);
    }

    #[test]
    fn zoned_abs_sends_each_share_to_its_bytes() {
        // 4 KiB blocks: 1 MiB = 256 blocks, 2 MiB = 512; the rest of the
        // 1000 blocks gets nothing
        assert_eq!(
            RandomDistribution::parse("zoned_abs:70/1m:30/2m").map(|d| d.span_bytes()),
            Ok(Some(3 << 20))
        );
        let h = histogram("zoned_abs:70/1m:30/2m", 1000, 100_000);
        let part = |a: usize, b: usize| h[a..b].iter().sum::<u64>() as f64 / 100_000.0;
        assert!((part(0, 256) - 0.7).abs() < 0.01, "{}", part(0, 256));
        assert!((part(256, 768) - 0.3).abs() < 0.01, "{}", part(256, 768));
        assert_eq!(part(768, 1000), 0.0);
    }

    #[test]
    fn same_seed_same_blocks() {
        let a = histogram("zipf:0.9", 333, 5000);
        let b = histogram("zipf:0.9", 333, 5000);
        assert_eq!(a, b);
    }
}
