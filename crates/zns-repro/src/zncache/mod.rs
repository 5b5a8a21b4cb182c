//! `zns repro zncache`: the paper's experiments, scaled down so that each
//! runs in host seconds (docs/zncache.md gives the scaling and why).
//!
//! - (a) 512 MiB chunks on a preconditioned (full) device, ZNS vs block,
//!   Zipf and uniform, ratios 1:2 and 1:10.
//! - (b) 64 KiB chunks, the same grid.
//! - (c) the GC experiment: a trimmed block device, 256 MiB chunks, uniform
//!   1:10, the cache spanning the device, several device fills of writes;
//!   throughput before and after the first full fill, with the remote
//!   latency and without; and the paper's 512 MiB GC rows.
//! - (d) ZPLRU vs CLRU on both backends: hit ratio, throughput, latency,
//!   host GC relocations and host WAF.
//!
//! Every run with a cell in the paper's appendix B is compared with it
//! figure by figure (`paper.rs`).
//!
//! Every experiment takes the block device as a parameter (profile and
//! NSID); the default is the FTL SSD `sn540-960g-mini` (the paper's SN540,
//! device GC; docs/zncache.md, "The block drive"). A block device
//! without GC (`zn540-cns`) is labelled so in every report.

pub mod paper;

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;
use zns_cache::backend::BackendKind;
use zns_cache::cache::{CacheConfig, FetchOrder, Policy};
use zns_cache::error::CacheError;
use zns_cache::remote::RemoteLatency;
use zns_cache::run::{
    run_cache, DeviceSpec, Precondition, Progress, RunReport, RunSpec, WorkloadSpec,
};
use zns_cache::workload::Distribution;
use zns_device::{NamespaceProfile, Profile};

pub use self::paper::LabelledRun;
use self::paper::{Comparison, Metric};
use crate::compare::PaperRow;

/// The experiments' scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scale {
    /// The documented default (a few host minutes for all four).
    Default,
    /// Tiny runs that only show that everything works (tests, CI).
    Quick,
}

/// What `zns repro zncache` runs on.
#[derive(Debug, Clone)]
pub struct ReproOptions {
    pub zns_profile: Profile,
    pub block_profile: Profile,
    pub block_nsid: u32,
    /// How the block device is described in reports.
    pub block_label: String,
    pub scale: Scale,
    pub seed: u64,
    /// Experiments to run, by letter (a, b, c, d).
    pub experiments: Vec<char>,
    /// Where CSV and PNG files go (none if `None`).
    pub out_dir: Option<PathBuf>,
    pub workers: u32,
}

impl ReproOptions {
    /// The defaults: zn540 vs the FTL SSD sn540-960g-mini NSID 1.
    pub fn new() -> Result<ReproOptions, CacheError> {
        let load = |n: &str| Profile::builtin(n).map_err(|e| CacheError::Device(e.to_string()));
        Ok(ReproOptions {
            zns_profile: load("zn540")?,
            block_profile: load("sn540-960g-mini")?,
            block_nsid: 1,
            block_label: block_label("sn540-960g-mini", 1, true),
            scale: Scale::Default,
            seed: 1,
            experiments: vec!['a', 'b', 'c', 'd'],
            out_dir: None,
            workers: 64,
        })
    }
}

/// The label of a block device in reports; `has_gc` = the device runs an
/// FTL with garbage collection.
pub fn block_label(profile: &str, nsid: u32, has_gc: bool) -> String {
    if has_gc {
        format!("{profile} nsid {nsid}")
    } else {
        format!("{profile} nsid {nsid} (block device without GC)")
    }
}

/// An experiment's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ExperimentResult {
    pub id: char,
    pub title: String,
    pub scaling: String,
    pub block_device: String,
    pub runs: Vec<LabelledRun>,
    /// Measured comparisons, one line each (the figures the paper states).
    pub findings: Vec<String>,
    /// What the paper reports for the same comparison.
    pub paper: String,
    /// Whether each of the paper's statements holds here, by direction.
    pub checks: Vec<PaperRow>,
    /// Every figure of the paper's appendix B that a run of this experiment
    /// has a cell for, against ours (calibration or validation).
    pub vs_paper: Vec<Comparison>,
}

fn pct(new: f64, base: f64) -> f64 {
    if base == 0.0 {
        0.0
    } else {
        (new - base) / base * 100.0
    }
}

struct Sizes {
    b_zones: u32,
    b_io_factor: f64,
    a_zones: u32,
    a_requests: u64,
    c_regions: u32,
    c_fills: f64,
    d_zones: u32,
    d_io_factor: f64,
}

fn sizes(scale: Scale) -> Sizes {
    match scale {
        Scale::Default => Sizes {
            // the paper's: 40 zones, 600 GiB of gets = 14.26 × 42.07 GiB
            b_zones: 40,
            b_io_factor: 14.26,
            // 48 zones: the watermarks 2/4 keep 8 % of the cache free, as
            // the paper's 8/16 of 200 zones (16 zones kept 25 %); 15× the
            // cache of requests, as the paper's 6,000 for 400 chunks
            a_zones: 48,
            a_requests: 1440,
            c_regions: 8,
            c_fills: 4.0,
            d_zones: 8,
            d_io_factor: 8.0,
        },
        Scale::Quick => Sizes {
            b_zones: 3,
            b_io_factor: 1.5,
            // more than (a)'s low watermark (4) + 1
            a_zones: 6,
            a_requests: 24,
            c_regions: 4,
            c_fills: 1.5,
            d_zones: 4,
            d_io_factor: 2.0,
        },
    }
}

/// The paper's (a) cache is 200 zones of 1077 MiB on its 894.3 GiB SN540:
/// 23.5 % of the drive, the rest preconditioned data the cache never frees.
pub const PAPER_A_DRIVE_SHARE: f64 = 200.0 * 1077.0 / (894.3 * 1024.0);

/// The block profile for a cache of `regions` regions of `region_bytes`,
/// and how it was grown (`None`: as it is). A namespace too small for the
/// regions grows to hold them (plus 1 MiB, as the paper's partition). With
/// `drive_share`, an FTL drive grows by a whole factor until the cache is at
/// most that share of it, its spare corrected for the fixed GC reserve
/// (`ConventionalConfig::grown`): a drive of the same kind, k times larger.
fn block_profile_for(
    p: &Profile,
    nsid: u32,
    regions: u32,
    region_bytes: u64,
    drive_share: Option<f64>,
) -> Result<(Profile, Option<String>), CacheError> {
    let idx = nsid
        .checked_sub(1)
        .ok_or_else(|| CacheError::Param("--block-nsid 0".into()))? as usize;
    let Some(NamespaceProfile::Conventional(c)) = p.namespaces.get(idx) else {
        return Err(CacheError::Param(format!(
            "block device {} nsid {nsid} is not a conventional namespace",
            p.name
        )));
    };
    let lba = u64::from(c.lba_bytes);
    let cache_bytes = u64::from(regions) * region_bytes;
    if let (Some(share), Some(_)) = (drive_share, &c.ftl) {
        let have = c.capacity_lbas * lba;
        let want = (cache_bytes as f64 / share).ceil() as u64;
        if have < want {
            let k = want.div_ceil(have.max(1));
            let grown = c
                .grown(&p.timing, k)
                .map_err(|e| CacheError::Device(format!("growing {}: {e}", p.name)))?;
            let mut q = p.clone();
            q.namespaces[idx] = NamespaceProfile::Conventional(grown);
            let note = format!(
                "grown {k}× (the cache is {:.1} % of it, the paper's {:.1} %; spare beyond the GC reserve kept)",
                100.0 * cache_bytes as f64 / (k * have) as f64,
                100.0 * share
            );
            return Ok((q, Some(note)));
        }
    }
    let need = (cache_bytes + (1 << 20)) / lba;
    if c.capacity_lbas >= need {
        return Ok((p.clone(), None));
    }
    let grown = p
        .with_overrides(&[(format!("namespace.{idx}.capacity_lbas"), need.to_string())])
        .map_err(|e| CacheError::Device(e.to_string()))?;
    Ok((grown, Some("namespace grown to hold the regions".into())))
}

fn zns_region_bytes(p: &Profile) -> Result<u64, CacheError> {
    let i = p
        .first_zoned()
        .ok_or_else(|| CacheError::Param(format!("{} has no zoned namespace", p.name)))?;
    match &p.namespaces[i] {
        NamespaceProfile::Zoned(z) => Ok(z.zone_capacity_lbas * u64::from(z.lba_bytes)),
        NamespaceProfile::Conventional(_) => unreachable_param(),
    }
}

fn unreachable_param<T>() -> Result<T, CacheError> {
    Err(CacheError::Internal(
        "first_zoned named a conventional namespace".into(),
    ))
}

struct Ctx<'a> {
    opts: &'a ReproOptions,
    progress: &'a mut dyn FnMut(&str, &Progress),
}

impl Ctx<'_> {
    fn run(&mut self, label: &str, spec: RunSpec) -> Result<LabelledRun, CacheError> {
        let p = &mut self.progress;
        let report = run_cache(&spec, &mut |pr| p(label, pr))?;
        Ok(LabelledRun {
            label: label.to_string(),
            report,
        })
    }

    /// A ZNS and a block spec with the same cache parameters.
    fn pair(
        &self,
        cache: &CacheConfig,
        workload: WorkloadSpec,
        precondition: Precondition,
        remote: RemoteLatency,
        drive_share: Option<f64>,
    ) -> Result<(RunSpec, RunSpec, Option<String>), CacheError> {
        let o = self.opts;
        let region = zns_region_bytes(&o.zns_profile)?;
        let zones = cache.zones.unwrap_or(1);
        let mut zdev = DeviceSpec::new(o.zns_profile.clone());
        zdev.precondition = precondition;
        let (bp, grown) =
            block_profile_for(&o.block_profile, o.block_nsid, zones, region, drive_share)?;
        let mut bdev = DeviceSpec::new(bp);
        bdev.nsid = Some(o.block_nsid);
        bdev.region_bytes = Some(region);
        bdev.precondition = precondition;
        let mk = |dev: DeviceSpec| {
            let mut s = RunSpec::new(dev, cache.clone(), workload.clone());
            s.workers = o.workers;
            s.remote = remote;
            s.seed = o.seed;
            s
        };
        Ok((mk(zdev), mk(bdev), grown))
    }
}

fn grid() -> [(Distribution, f64); 4] {
    [
        (Distribution::Uniform, 10.0),
        (Distribution::Uniform, 2.0),
        (Distribution::Zipfian, 10.0),
        (Distribution::Zipfian, 2.0),
    ]
}

fn chunk_label(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{}M", bytes >> 20)
    } else {
        format!("{}K", bytes >> 10)
    }
}

fn dist_label(d: Distribution) -> &'static str {
    match d {
        Distribution::Zipfian => "ZIPF",
        Distribution::Uniform => "UNIF",
    }
}

/// The block drive's GC right after its precondition, from each block run's
/// time series: when its first chunk writes completed and the device WAF
/// then (docs/zncache.md, "The block drive", cause 3). `None` without an
/// FTL drive.
pub fn gc_transient_finding(runs: &[LabelledRun]) -> Option<String> {
    let cells: Vec<String> = runs
        .iter()
        .filter(|r| r.report.backend == BackendKind::Block)
        .filter_map(|r| {
            let s = &r.report.samples;
            let (t_s, write_ms) = s
                .iter()
                .find_map(|x| x.disk_write_mean_ms.map(|ms| (x.t_s, ms)))?;
            let waf = s
                .iter()
                .take_while(|x| x.t_s <= t_s)
                .filter_map(|x| x.device_waf_window)
                .reduce(f64::max)?;
            Some(format!(
                "{} {:.0} s (WAF up to {waf:.1})",
                r.label,
                write_ms / 1e3
            ))
        })
        .collect();
    (!cells.is_empty()).then(|| {
        format!(
            "block drive after its precondition: the first chunk writes took {} — the device GC's victims right after the precondition (see docs/zncache.md, cause 3)",
            cells.join(", ")
        )
    })
}

/// (a) and (b): ZNS vs block over the distribution × ratio grid.
fn zns_vs_block(ctx: &mut Ctx, id: char) -> Result<ExperimentResult, CacheError> {
    let s = sizes(ctx.opts.scale);
    let (chunk, zones, high, low, precondition) = if id == 'a' {
        // the paper's fio pass ran before each block run over a drive its
        // earlier runs had filled (its runs trim nothing, but for (c)):
        // a random pass over a full drive, i.e. a random-write steady state
        (512u64 << 20, s.a_zones, 2, 4, Precondition::RandomSteady)
    } else {
        (64u64 << 10, s.b_zones, 1, 2, Precondition::Sequential)
    };
    let cache = CacheConfig {
        policy: Policy::Zplru,
        chunk_bytes: chunk,
        zones: Some(zones),
        zone_high: high,
        zone_low: low,
        ..CacheConfig::default()
    };
    let cache_bytes = u64::from(zones) * (zns_region_bytes(&ctx.opts.zns_profile)? / chunk) * chunk;
    let requests = if id == 'a' {
        s.a_requests
    } else {
        ((cache_bytes as f64 * s.b_io_factor) / chunk as f64) as u64
    };
    let mut runs = Vec::new();
    let mut findings = Vec::new();
    let mut block_name = String::new();
    let (mut thr_sum, mut lat_sum, mut n) = (0.0, 0.0, 0.0);
    for (dist, ratio) in grid() {
        let wl = WorkloadSpec::Generated {
            distribution: dist,
            ratio,
            requests,
            seed: ctx.opts.seed,
        };
        // (a): the cache takes the paper's share of an FTL drive (the rest is
        // preconditioned data it never frees); (b) keeps the drive as it is
        // (40 zones would need a 17× drive, and the 64 KiB runs do no GC)
        let share = (id == 'a').then_some(PAPER_A_DRIVE_SHARE);
        let (zs, bs, grown) = ctx.pair(&cache, wl, precondition, RemoteLatency::Measured, share)?;
        block_name = block_description(ctx.opts, grown.as_deref());
        let tag = format!(
            "{}-{}-{}",
            chunk_label(chunk),
            dist_label(dist),
            ratio as u32
        );
        let z = ctx.run(&format!("ZNS-{tag}"), zs)?;
        let b = ctx.run(&format!("Block-{tag}"), bs)?;
        let dt = pct(z.report.get_gib_s, b.report.get_gib_s);
        let dl = pct(z.report.get.mean_ms, b.report.get.mean_ms);
        let dp = pct(z.report.get.p99_ms, b.report.get.p99_ms);
        thr_sum += dt;
        lat_sum += dl;
        n += 1.0;
        let paper_of = |side: &str, m: Metric| paper::figure(&format!("{side}-{tag}"), m);
        let paper_cell = match (
            paper_of("ZNS", Metric::GetGibS),
            paper_of("Block", Metric::GetGibS),
            paper_of("ZNS", Metric::GetMeanMs),
            paper_of("Block", Metric::GetMeanMs),
        ) {
            (Some(zt), Some(bt), Some(zl), Some(bl)) => {
                format!(" [paper: {zt:.3} vs {bt:.3} GiB/s, {zl:.2} vs {bl:.2} ms]")
            }
            _ => String::new(),
        };
        findings.push(format!(
            "{tag}: get throughput ZNS {:.4} vs block {:.4} GiB/s ({dt:+.1}%), mean get latency {:.2} vs {:.2} ms ({dl:+.1}%), p99 {:.2} vs {:.2} ms ({dp:+.1}%), hit ratio {:.3} vs {:.3}{paper_cell}",
            z.report.get_gib_s, b.report.get_gib_s, z.report.get.mean_ms, b.report.get.mean_ms,
            z.report.get.p99_ms, b.report.get.p99_ms, z.report.hit_ratio, b.report.hit_ratio
        ));
        runs.push(z);
        runs.push(b);
    }
    findings.push(format!(
        "average over the grid: ZNS get throughput {:+.1}%, mean get latency {:+.1}% vs block",
        thr_sum / n,
        lat_sum / n
    ));
    if id == 'a' {
        findings.extend(gc_transient_finding(&runs));
    }
    let (thr_avg, lat_avg) = (thr_sum / n, lat_sum / n);
    let checks = if id == 'a' {
        vec![
            PaperRow::same_sign(
                "ZNS vs block get throughput, mean over the grid",
                108.0,
                thr_avg,
            ),
            PaperRow::same_sign(
                "ZNS vs block mean get latency, mean over the grid",
                -50.6,
                lat_avg,
            ),
        ]
    } else {
        vec![
            PaperRow::within(
                "ZNS vs block get throughput, mean over the grid",
                -1.9,
                thr_avg,
                5.0,
            ),
            PaperRow::within(
                "ZNS vs block mean get latency, mean over the grid",
                1.9,
                lat_avg,
                5.0,
            ),
        ]
    };
    let (title, paper, scaling) = if id == 'a' {
        (
            "512 MiB chunks on a preconditioned device: ZNS vs block".to_string(),
            "ZNS get throughput +108% on average, get latency −50.6% (mean), p99 −55.9%: device GC on the block SSD (Tables 5, 8)".to_string(),
            format!(
                "{zones} zones × 2 chunks (paper: 200 zones), watermarks {high}/{low} (paper 8/16), {requests} requests per run (paper: 6,000 = 3 TiB), devices preconditioned (block: two passes of random 64 KiB writes over the namespace — the paper's per-run pass over a drive already full —, an FTL drive grown until the cache is at most the paper's 23.5 % of it; ZNS: zones filled, reset by the cache)"
            ),
        )
    } else {
        (
            "64 KiB chunks: ZNS vs block".to_string(),
            "within a few percent: ZNS −1.9% throughput, +1.9% latency on average (Tables 5, 8)".to_string(),
            format!(
                "{zones} zones × {} chunks (paper: 40 zones), watermarks {high}/{low}, {requests} requests per run = {:.2}× the cache size (paper: 600 GiB ≈ 14.26×), devices filled sequentially first",
                zns_region_bytes(&ctx.opts.zns_profile)? / chunk,
                s.b_io_factor
            ),
        )
    };
    Ok(ExperimentResult {
        id,
        title,
        scaling,
        block_device: block_name,
        runs,
        findings,
        paper,
        checks,
        vs_paper: Vec::new(),
    })
}

/// Mean of `f` over samples with `lo ≤ t < hi`.
fn mean_between(
    r: &RunReport,
    lo: f64,
    hi: f64,
    f: impl Fn(&zns_cache::metrics::Sample) -> f64,
) -> Option<f64> {
    let v: Vec<f64> = r
        .samples
        .iter()
        .filter(|s| s.t_s > lo && s.t_s <= hi)
        .map(f)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The virtual second at which the cache had written `bytes` in total.
fn time_of_written(r: &RunReport, bytes: f64, interval_s: f64) -> Option<f64> {
    let mut written = 0.0;
    for s in &r.samples {
        written += s.write_gib_s * interval_s * (1u64 << 30) as f64;
        if written >= bytes {
            return Some(s.t_s);
        }
    }
    None
}

/// Device WAF of what was written after `t_s` (from the cumulative device
/// WAF and the cache's disk writes of each sample).
fn device_waf_after(r: &RunReport, t_s: f64, interval_s: f64) -> Option<f64> {
    let gib = (1u64 << 30) as f64;
    let (mut host, mut at) = (0.0, None);
    let mut last = None;
    for s in &r.samples {
        host += s.write_gib_s * interval_s * gib;
        if let Some(w) = s.device_waf {
            if at.is_none() && s.t_s >= t_s {
                at = Some((host, w));
            }
            last = Some((host, w));
        }
    }
    let ((h0, w0), (h1, w1)) = (at?, last?);
    (h1 > h0).then(|| (w1 * h1 - w0 * h0) / (h1 - h0))
}

/// (c): throughput before and after the first full device fill.
fn gc_experiment(ctx: &mut Ctx) -> Result<ExperimentResult, CacheError> {
    let s = sizes(ctx.opts.scale);
    let region = zns_region_bytes(&ctx.opts.zns_profile)?;
    // On a block device with an FTL the cache spans the whole drive, as in
    // the paper, so that its writes fill the device and the device's GC runs.
    let zones = match ftl_capacity_bytes(ctx.opts) {
        Some(cap) => s
            .c_regions
            .max((cap.saturating_sub(1 << 20) / region).min(u64::from(u32::MAX)) as u32),
        None => s.c_regions,
    };
    let mut runs = Vec::new();
    let mut findings = Vec::new();
    let mut block_name = String::new();
    let interval_s = 1.0;
    let mut per_remote: Vec<RemoteRun> = Vec::new();
    let mut requests_256 = 0;
    // The paper's GC rows: 256 MiB chunks with its 3.2 s sleep and without,
    // plus appendix A's spread; 512 MiB chunks with its 5.3 s sleep and
    // without (Tables 11–16).
    // Diagnostic rows: the constant-sleep rows again with the workers
    // started out of step (label suffix `paper::OUT_OF_STEP`, compared as
    // diagnostic, not validation): what the zone holders' lockstep costs.
    const MIB256: u64 = 256 << 20;
    let sleep_5_3 = RemoteLatency::Fixed { ns: 5_300_000_000 };
    for (chunk, remote, rl, out_of_step) in [
        (MIB256, RemoteLatency::Measured, "3.2s", false),
        (MIB256, RemoteLatency::MeasuredSpread, "3.2s-spread", false),
        (MIB256, RemoteLatency::Fixed { ns: 0 }, "0s", false),
        (512 << 20, sleep_5_3, "5.3s", false),
        (512 << 20, RemoteLatency::Fixed { ns: 0 }, "0s", false),
        (MIB256, RemoteLatency::Measured, "3.2s", true),
        (512 << 20, sleep_5_3, "5.3s", true),
    ] {
        let cache = CacheConfig {
            policy: Policy::Zplru,
            chunk_bytes: chunk,
            zones: Some(zones),
            zone_high: 1,
            zone_low: 2,
            ..CacheConfig::default()
        };
        let cache_bytes = u64::from(zones) * (region / chunk) * chunk;
        // Uniform 1:10 is ~90% misses: requests ≈ writes.
        let requests = ((cache_bytes as f64 * s.c_fills) / chunk as f64 / 0.9) as u64;
        if chunk == MIB256 {
            requests_256 = requests;
        }
        let cl = chunk_label(chunk);
        // the 256 MiB rows are the experiment proper (Figs. 5–7)
        let tag = if chunk == MIB256 {
            format!("remote {rl}")
        } else {
            format!("{cl}, remote {rl}")
        };
        let wl = WorkloadSpec::Generated {
            distribution: Distribution::Uniform,
            ratio: 10.0,
            requests,
            seed: ctx.opts.seed,
        };
        let (mut zs, mut bs, grown) = ctx.pair(&cache, wl, Precondition::None, remote, None)?;
        // The device starts trimmed (a fresh emulated device is); the
        // cache, like the original, does not TRIM what it frees, so once the
        // drive has been filled the device's GC relocates stale data.
        bs.device.discard = false;
        zs.interval_ns = 1_000_000_000;
        bs.interval_ns = 1_000_000_000;
        zs.stagger_start = out_of_step;
        bs.stagger_start = out_of_step;
        let bcap = block_capacity_bytes(&bs.device)?;
        block_name = block_description(ctx.opts, grown.as_deref());
        let row = format!("{cl}-UNIF-10-{rl}");
        if out_of_step {
            let label = |side: &str| format!("{side}-{row}{}", paper::OUT_OF_STEP);
            let z = ctx.run(&label("ZNS"), zs)?;
            let b = ctx.run(&label("Block"), bs)?;
            // the same row in step ran earlier in this loop
            let in_step = |side: &str| {
                let label = format!("{side}-{row}");
                runs.iter()
                    .find(|r: &&LabelledRun| r.label == label)
                    .map(|r| &r.report)
            };
            if let (Some(zi), Some(bi)) = (in_step("ZNS"), in_step("Block")) {
                findings.push(out_of_step_finding(
                    &tag,
                    &row,
                    [zi, bi],
                    [&z.report, &b.report],
                ));
            }
            runs.push(z);
            runs.push(b);
            continue;
        }
        let z = ctx.run(&format!("ZNS-{row}"), zs)?;
        let b = ctx.run(&format!("Block-{row}"), bs)?;
        let mut change = [None, None];
        let mut write_change = [None, None];
        for (i, (name, r, cap)) in [
            ("ZNS", &z.report, cache_bytes as f64),
            ("block", &b.report, bcap as f64),
        ]
        .into_iter()
        .enumerate()
        {
            match time_of_written(r, cap, interval_s) {
                Some(t_fill) => {
                    // from the first disk write on: before it the first
                    // remote fetches are still under way and nothing can
                    // complete (3.2 s of zeros would bias "before" low)
                    let t_first = r
                        .samples
                        .iter()
                        .find(|s| s.write_gib_s > 0.0)
                        .map_or(0.0, |s| s.t_s);
                    let before = mean_between(r, t_first, t_fill, |s| s.get_gib_s).unwrap_or(0.0);
                    let after =
                        mean_between(r, t_fill, f64::INFINITY, |s| s.get_gib_s).unwrap_or(0.0);
                    let lat_before =
                        mean_between(r, t_first, t_fill, |s| s.get_mean_ms).unwrap_or(0.0);
                    let lat_after =
                        mean_between(r, t_fill, f64::INFINITY, |s| s.get_mean_ms).unwrap_or(0.0);
                    let waf = device_waf_after(r, t_fill, interval_s).map_or(String::new(), |w| {
                        format!(", device WAF after the fill {w:.3}")
                    });
                    // the device's own rate, free of the hit ratio's warm-up
                    let w_before =
                        mean_between(r, t_first, t_fill, |s| s.write_gib_s).unwrap_or(0.0);
                    let w_after =
                        mean_between(r, t_fill, f64::INFINITY, |s| s.write_gib_s).unwrap_or(0.0);
                    change[i] = Some(after / before.max(f64::MIN_POSITIVE));
                    write_change[i] = Some(w_after / w_before.max(f64::MIN_POSITIVE));
                    findings.push(format!(
                        "{tag}, {name}: first disk write at {t_first:.0} s, first full fill at {t_fill:.0} s; between them / after: get throughput {before:.4} / {after:.4} GiB/s ({:+.1}%), mean get latency {lat_before:.0} / {lat_after:.0} ms ({:+.1}%), disk writes {w_before:.3} / {w_after:.3} GiB/s ({:+.1}%){waf}",
                        pct(after, before),
                        pct(lat_after, lat_before),
                        pct(w_after, w_before)
                    ));
                }
                None => findings.push(format!(
                    "{tag}, {name}: the run did not fill the device once"
                )),
            }
        }
        if chunk == MIB256 {
            per_remote.push(RemoteRun {
                remote: rl,
                zns_gib_s: z.report.get_gib_s,
                block_gib_s: b.report.get_gib_s,
                block_change_pct: change[1].map(|c| (c - 1.0) * 100.0),
                block_vs_zns_pct: match change {
                    [Some(zc), Some(bc)] => Some((bc / zc - 1.0) * 100.0),
                    _ => None,
                },
            });
        }
        if let [Some(zc), Some(bc)] = change {
            // ZNS has no device GC: its change is the cache's own warm-up
            // (hit ratio), the control for the block device's change.
            findings.push(format!(
                "{tag}: block throughput change after the fill relative to ZNS's (the cache's warm-up as control): {:+.1}%",
                (bc / zc - 1.0) * 100.0
            ));
        }
        if let [Some(zc), Some(bc)] = write_change {
            findings.push(format!(
                "{tag}: disk write rate after the fill: block {:+.1}%, ZNS {:+.1}% (device GC shows here, without the hit ratio)",
                (bc - 1.0) * 100.0,
                (zc - 1.0) * 100.0
            ));
        }
        if let (Some(zm), Some(zi), Some(bm), Some(bi)) = (
            z.report.writes_in_flight_mean,
            z.report.write_idle_share,
            b.report.writes_in_flight_mean,
            b.report.write_idle_share,
        ) {
            findings.push(format!(
                "{tag}: chunk writes in flight on average ZNS {zm:.1}, block {bm:.1}; none in flight {:.1}% / {:.1}% of the time (the 14 zone holders fetching in step leave the device idle)",
                zi * 100.0,
                bi * 100.0
            ));
        }
        findings.push(format!(
            "{tag}: get throughput ZNS {:.4} vs block {:.4} GiB/s ({:+.1}%), mean get latency {:.0} vs {:.0} ms",
            z.report.get_gib_s,
            b.report.get_gib_s,
            pct(z.report.get_gib_s, b.report.get_gib_s),
            z.report.get.mean_ms,
            b.report.get.mean_ms
        ));
        runs.push(z);
        runs.push(b);
    }
    Ok(ExperimentResult {
        id: 'c',
        title: "GC experiment: trimmed device, 256 MiB chunks (and the 512 MiB rows), uniform 1:10".into(),
        scaling: format!(
            "{zones} regions of {} (paper: the whole 904-zone drive), {requests_256} requests of 256 MiB ≈ {:.1} cache fills of writes (paper: 6 TiB ≈ 6 drive fills), remote 3.2 s (constant, as the paper's sleep), 3.2 ± 0.86 s (log-normal, appendix A's spread) and 0 s; 512 MiB rows as many fills, 5.3 s (the paper's sleep) and 0 s; a miss holds its zone across the fetch (ZNCache); the 3.2 s and 5.3 s rows again with the workers started out of step (diagnostic, compared with the paper apart from validation)",
            zns_cache::units::fmt_bytes(region),
            s.c_fills
        ),
        block_device: block_name,
        runs,
        findings,
        paper: "block throughput −35.4%, latency +51.0%, tail +55.6% after the first full fill; ZNS steady; with 0 s remote latency ZNS gains, block does not (Figs. 5–7)".into(),
        checks: gc_checks(&per_remote),
        vs_paper: Vec::new(),
    })
}

/// (c)'s diagnostic line for a constant-sleep row run again out of step:
/// disk write latency and idle share in step / out of step / the paper's,
/// for ZNS and block (`row`: the run label after `ZNS-` / `Block-`;
/// `in_step`, `out_of_step`: [ZNS, block]).
fn out_of_step_finding(
    tag: &str,
    row: &str,
    in_step: [&RunReport; 2],
    out_of_step: [&RunReport; 2],
) -> String {
    let mut parts = Vec::new();
    for (i, (side, prefix)) in [("ZNS", "ZNS"), ("block", "Block")].into_iter().enumerate() {
        let (a, b) = (in_step[i], out_of_step[i]);
        let label = |r: &RunReport| {
            format!(
                "{:.0} ms ({:.1}% idle)",
                r.disk_write.mean_ms,
                r.write_idle_share.unwrap_or(0.0) * 100.0
            )
        };
        let paper = paper::figure(&format!("{prefix}-{row}"), Metric::DiskWriteMeanMs)
            .map_or(String::new(), |p| format!(", paper {p:.0} ms"));
        parts.push(format!(
            "{side} in step {} / out of step {}{paper}",
            label(a),
            label(b)
        ));
    }
    format!(
        "{tag}, workers started out of step (diagnostic): disk write mean {}",
        parts.join("; ")
    )
}

/// One remote latency of (c): get throughput of both devices, and the block
/// drive's change after the first full fill, absolute and relative to ZNS's.
struct RemoteRun {
    remote: &'static str,
    zns_gib_s: f64,
    block_gib_s: f64,
    block_change_pct: Option<f64>,
    block_vs_zns_pct: Option<f64>,
}

/// (c)'s statements: the block drive loses throughput after the first full
/// fill (absolute and against ZNS's change, the cache's warm-up as control;
/// the paper's 3.2 s sleep), and with a 0 s remote store ZNS gains more
/// than the block drive, which is I/O-bound by GC (the paper: ZNS gains,
/// block does not).
fn gc_checks(per_remote: &[RemoteRun]) -> Vec<PaperRow> {
    let mut checks = Vec::new();
    let at = |rl: &str| per_remote.iter().find(|r| r.remote == rl);
    if let Some(r) = at("3.2s") {
        if let Some(block) = r.block_change_pct {
            checks.push(PaperRow::same_sign(
                "block get throughput after the first fill (3.2 s remote)",
                -35.4,
                block,
            ));
        }
        if let Some(rel) = r.block_vs_zns_pct {
            checks.push(PaperRow::same_sign(
                "block's change after the fill relative to ZNS's (3.2 s remote)",
                -35.4,
                rel,
            ));
        }
    }
    // Against the constant 3.2 s sleep (the paper's) and against appendix
    // A's spread of it: with the constant sleep the zone holders fetch in
    // step and leave the device idle between their writes, which slows the
    // 3.2 s runs (most the block drive's, whose writes take longest) and
    // inflates what removing the sleep gains (docs/zncache.md).
    for (base, what) in [
        ("3.2s", "with a 0 s remote store, ZNS gains more than block (vs 3.2 s)"),
        (
            "3.2s-spread",
            "with a 0 s remote store, ZNS gains more than block (vs 3.2 s with appendix A's spread)",
        ),
    ] {
        if let (Some(slow), Some(fast)) = (at(base), at("0s")) {
            let (zns, block) = (
                pct(fast.zns_gib_s, slow.zns_gib_s),
                pct(fast.block_gib_s, slow.block_gib_s),
            );
            checks.push(PaperRow::check(
                what,
                "ZNS gains, block does not".into(),
                None,
                format!("ZNS {zns:+.1}%, block {block:+.1}%"),
                "ZNS's gain above block's".into(),
                zns > block,
            ));
        }
    }
    checks
}

/// How a report names the block device of a run.
fn block_description(o: &ReproOptions, grown: Option<&str>) -> String {
    match grown {
        Some(how) => format!("{}, {how}", o.block_label),
        None => o.block_label.clone(),
    }
}

/// Whether namespace `nsid` of `p` is an FTL SSD (device-side GC).
pub fn has_device_gc(p: &Profile, nsid: u32) -> bool {
    let idx = nsid.saturating_sub(1) as usize;
    matches!(p.namespaces.get(idx), Some(NamespaceProfile::Conventional(c)) if c.ftl.is_some())
}

/// Capacity of the block device when it is an FTL SSD (device-side GC).
fn ftl_capacity_bytes(o: &ReproOptions) -> Option<u64> {
    let idx = o.block_nsid.checked_sub(1)? as usize;
    match o.block_profile.namespaces.get(idx) {
        Some(NamespaceProfile::Conventional(c)) if c.ftl.is_some() => {
            Some(c.capacity_lbas * u64::from(c.lba_bytes))
        }
        _ => None,
    }
}

fn block_capacity_bytes(d: &DeviceSpec) -> Result<u64, CacheError> {
    let idx = d.nsid.unwrap_or(1).saturating_sub(1) as usize;
    let namespace = match &d.target {
        zns_target::TargetSpec::Profile(p) => p.namespaces.get(idx),
        _ => None,
    };
    match namespace {
        Some(NamespaceProfile::Conventional(c)) => Ok(c.capacity_lbas * u64::from(c.lba_bytes)),
        _ => Err(CacheError::Param(
            "the block device spec names no conventional namespace".into(),
        )),
    }
}

/// (d): ZPLRU vs CLRU.
fn policy_experiment(ctx: &mut Ctx) -> Result<ExperimentResult, CacheError> {
    let s = sizes(ctx.opts.scale);
    let chunk = 64u64 << 10;
    let zones = s.d_zones;
    let region = zns_region_bytes(&ctx.opts.zns_profile)?;
    let cache_bytes = u64::from(zones) * (region / chunk) * chunk;
    let requests = ((cache_bytes as f64 * s.d_io_factor) / chunk as f64) as u64;
    let mut runs = Vec::new();
    let mut findings = Vec::new();
    let mut checks = Vec::new();
    let mut block_name = String::new();
    for (dist, ratio) in [(Distribution::Zipfian, 10.0), (Distribution::Zipfian, 2.0)] {
        let wl = WorkloadSpec::Generated {
            distribution: dist,
            ratio,
            requests,
            seed: ctx.opts.seed,
        };
        let mut reports = Vec::new();
        for policy in [Policy::Zplru, Policy::Clru] {
            let cache = CacheConfig {
                policy,
                chunk_bytes: chunk,
                zones: Some(zones),
                zone_high: 1,
                zone_low: 2,
                // Both policies with the same misses in flight: held zones
                // would tie them to how many zones each keeps open (and
                // CLRU's GC wants few open zones, see docs/zncache.md).
                fetch_order: FetchOrder::FetchFirst,
                ..CacheConfig::default()
            };
            let (zs, bs, grown) = ctx.pair(
                &cache,
                wl.clone(),
                Precondition::None,
                RemoteLatency::Measured,
                None,
            )?;
            block_name = block_description(ctx.opts, grown.as_deref());
            let tag = format!(
                "{}-{}-{}",
                policy.name().to_uppercase(),
                dist_label(dist),
                ratio as u32
            );
            let z = ctx.run(&format!("ZNS-{tag}"), zs)?;
            let b = ctx.run(&format!("Block-{tag}"), bs)?;
            reports.push((policy, z.report.clone(), b.report.clone()));
            runs.push(z);
            runs.push(b);
        }
        let (zp, zc) = (&reports[0].1, &reports[1].1);
        checks.push(PaperRow::check(
            &format!(
                "{}-{}: CLRU hit ratio above ZPLRU's (ZNS)",
                dist_label(dist),
                ratio as u32
            ),
            "expected (not evaluated)".into(),
            None,
            format!("{:.4} vs {:.4}", zc.hit_ratio, zp.hit_ratio),
            "CLRU's above ZPLRU's".into(),
            zc.hit_ratio > zp.hit_ratio,
        ));
        let (bp, bc) = (&reports[0].2, &reports[1].2);
        let steady = |r: &RunReport| r.steady_hit_ratio.unwrap_or(r.hit_ratio);
        findings.push(format!(
            "{}-{}: ZNS hit ratio ZPLRU {:.4} vs CLRU {:.4} (steady {:.4} vs {:.4}); CLRU host GC relocated {} chunks, host WAF {:.3}, {} zone resets; get throughput {:.4} vs {:.4} GiB/s ({:+.1}%), mean get latency {:.2} vs {:.2} ms, p99 {:.2} vs {:.2} ms",
            dist_label(dist), ratio as u32,
            zp.hit_ratio, zc.hit_ratio, steady(zp), steady(zc),
            zc.counters.gc_relocations, zc.host_waf, zc.counters.zone_resets,
            zp.get_gib_s, zc.get_gib_s, pct(zc.get_gib_s, zp.get_gib_s),
            zp.get.mean_ms, zc.get.mean_ms, zp.get.p99_ms, zc.get.p99_ms
        ));
        findings.push(format!(
            "{}-{}: block hit ratio ZPLRU {:.4} vs CLRU {:.4} (CLRU reuses slots in place: no host GC, host WAF {:.3})",
            dist_label(dist), ratio as u32, bp.hit_ratio, bc.hit_ratio, bc.host_waf
        ));
    }
    Ok(ExperimentResult {
        id: 'd',
        title: "ZPLRU vs CLRU: hit ratio and host-GC cost".into(),
        scaling: format!(
            "64 KiB chunks, {zones} zones × {} chunks, watermarks 1/2 zones (CLRU chunk watermarks: (low + 1) zones of free slots, + half a zone), {requests} requests = {:.0}× the cache size",
            region / chunk,
            s.d_io_factor
        ),
        block_device: block_name,
        runs,
        findings,
        paper: "not evaluated in the paper (CLRU \"was implemented but bugs remain\"); expected: CLRU hit ratio above ZPLRU's".into(),
        checks,
        vs_paper: Vec::new(),
    })
}

/// Runs the selected experiments. `progress(run label, progress)`.
pub fn run_repro(
    opts: &ReproOptions,
    progress: &mut dyn FnMut(&str, &Progress),
) -> Result<Vec<ExperimentResult>, CacheError> {
    if opts.experiments.is_empty() {
        return Err(CacheError::Param(
            "no experiment selected (a, b, c, d)".into(),
        ));
    }
    let mut ctx = Ctx { opts, progress };
    let mut out = Vec::new();
    for &e in &opts.experiments {
        let mut r = match e {
            'a' | 'b' => zns_vs_block(&mut ctx, e)?,
            'c' => gc_experiment(&mut ctx)?,
            'd' => policy_experiment(&mut ctx)?,
            other => {
                return Err(CacheError::Param(format!(
                    "experiment `{other}`: expected a, b, c or d"
                )))
            }
        };
        r.vs_paper = paper::compare(&r.runs);
        if let Some(dir) = &opts.out_dir {
            write_experiment(&r, dir)?;
        }
        out.push(r);
    }
    Ok(out)
}

/// The charts of one set of runs of experiment `id` drawn together, with
/// the paper's figures of each run as reference lines, and the files' name
/// before `-METRIC.png`: `zncache-ID-RUN+RUN…`, the runs named as their
/// CSVs (`zncache-b-ZNS-64K-UNIF-10.csv`).
fn figure_charts(
    id: char,
    group: &[(String, &RunReport)],
) -> (String, Vec<(&'static str, zns_plot::LineChart)>) {
    let runs: Vec<&str> = group.iter().map(|(label, _)| label.as_str()).collect();
    let mut charts = zns_cache::plot::comparison_charts(group, &format!("({id}) "));
    for (name, chart) in &mut charts {
        // runs with the same figure share one line (black), a figure of
        // one run is in its colour
        let figures: Vec<(usize, f64)> = (0..runs.len())
            .filter_map(|i| Some((i, paper::chart_figure(runs[i], name)?)))
            .collect();
        let mut refs: Vec<zns_plot::Reference> = Vec::new();
        for &(i, y) in &figures {
            if refs.iter().any(|r| r.y == y) {
                continue;
            }
            let same: Vec<&str> = figures
                .iter()
                .filter(|f| f.1 == y)
                .map(|f| runs[f.0])
                .collect();
            refs.push(zns_plot::Reference {
                y,
                label: format!("paper, {}: {y}", same.join(", ")),
                color: if same.len() > 1 {
                    zns_plot::plotters::prelude::BLACK
                } else {
                    zns_plot::color(i)
                },
            });
        }
        chart.references = refs;
    }
    (format!("zncache-{id}-{}", runs.join("+")), charts)
}

fn write_experiment(r: &ExperimentResult, dir: &std::path::Path) -> Result<(), CacheError> {
    std::fs::create_dir_all(dir).map_err(|e| CacheError::File {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    for run in &r.runs {
        let p = dir.join(format!("zncache-{}-{}.csv", r.id, run.label));
        zns_cache::report::write_file(&p, zns_cache::report::samples_csv(&run.report).as_bytes())?;
    }
    let labelled: Vec<(String, &RunReport)> = r
        .runs
        .iter()
        .map(|x| (x.label.clone(), &x.report))
        .collect();
    // One figure per metric and per set of runs that belong together (ZNS
    // and block of one row; experiment d's four runs), named after its runs
    // as their CSVs are, each run's figure in the paper (appendix B) a
    // dashed line in the run's colour.
    for group in labelled.chunks(if r.id == 'd' { 4 } else { 2 }) {
        let (png, charts) = figure_charts(r.id, group);
        for (name, chart) in charts {
            zns_cache::plot::draw(&chart, &dir.join(format!("{png}-{name}.png")))?;
        }
    }
    if !r.vs_paper.is_empty() {
        zns_cache::report::write_file(
            &dir.join(format!("zncache-{}-vs-paper.csv", r.id)),
            paper::csv(&r.vs_paper).as_bytes(),
        )?;
    }
    zns_cache::report::write_file(
        &dir.join(format!("zncache-{}.txt", r.id)),
        experiment_text(r).as_bytes(),
    )
}

/// An experiment as text: scaling, device, table, findings, paper.
pub fn experiment_text(r: &ExperimentResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "({}) {}", r.id, r.title);
    let _ = writeln!(s, "  block device: {}", r.block_device);
    let _ = writeln!(s, "  scaling: {}", r.scaling);
    // the run column fits the longest label
    let w = r
        .runs
        .iter()
        .map(|x| x.label.chars().count())
        .max()
        .unwrap_or(0)
        .max(26);
    let _ = writeln!(
        s,
        "  {:<w$} {:>9} {:>9} {:>10} {:>11} {:>11} {:>11} {:>9} {:>8} {:>7}",
        "run",
        "duration",
        "hit",
        "get GiB/s",
        "get ms",
        "get p99 ms",
        "write ms",
        "GC moves",
        "hostWAF",
        "devWAF"
    );
    for x in &r.runs {
        let p = &x.report;
        let _ = writeln!(
            s,
            "  {:<w$} {:>8.1}s {:>9.4} {:>10.4} {:>11.2} {:>11.2} {:>11.3} {:>9} {:>8.3} {:>7}",
            x.label,
            p.duration_s,
            p.hit_ratio,
            p.get_gib_s,
            p.get.mean_ms,
            p.get.p99_ms,
            p.disk_write.mean_ms,
            p.counters.gc_relocations,
            p.host_waf,
            p.device_waf
                .map_or("n/a".to_string(), |w| format!("{w:.3}"))
        );
    }
    for f in &r.findings {
        let _ = writeln!(s, "  - {f}");
    }
    let _ = writeln!(s, "  paper: {}", r.paper);
    for c in &r.checks {
        let _ = writeln!(
            s,
            "  check {} {}: paper {}, ours {}",
            c.verdict_text(),
            c.what,
            c.paper,
            c.ours_text()
        );
    }
    if !r.vs_paper.is_empty() {
        let _ = writeln!(
            s,
            "  vs paper (appendix B): {:<w$} {:<19} {:>5} {:>12} {:>12} {:>8}  role",
            "run", "metric", "table", "paper", "ours", "error"
        );
        for c in &r.vs_paper {
            let _ = writeln!(
                s,
                "  vs paper (appendix B): {:<w$} {:<19} {:>5} {:>12.3} {:>12.3} {:>+7.1}%  {}",
                c.run,
                c.metric.name(),
                c.table,
                c.paper,
                c.ours,
                c.error_pct,
                c.role.name()
            );
        }
        for line in paper::summary(&r.vs_paper) {
            let _ = writeln!(s, "  {line}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Experiment b with one row's two runs (a short ZN540 run each).
    fn one_row_of_b() -> ExperimentResult {
        let mut dev = DeviceSpec::new(Profile::builtin("zn540").unwrap());
        dev.store = zns_device::StoreKind::None;
        let cache = CacheConfig {
            chunk_bytes: 64 << 10,
            zones: Some(8),
            ..CacheConfig::default()
        };
        let workload = WorkloadSpec::Generated {
            distribution: Distribution::Uniform,
            ratio: 10.0,
            requests: 64,
            seed: 1,
        };
        let report = run_cache(&RunSpec::new(dev, cache, workload), &mut |_| {}).unwrap();
        let run = |label: &str| LabelledRun {
            label: label.into(),
            report: report.clone(),
        };
        ExperimentResult {
            id: 'b',
            title: String::new(),
            scaling: String::new(),
            block_device: String::new(),
            runs: vec![run("ZNS-64K-UNIF-10"), run("Block-64K-UNIF-10")],
            findings: Vec::new(),
            paper: String::new(),
            checks: Vec::new(),
            vs_paper: Vec::new(),
        }
    }

    #[test]
    fn figures_are_named_after_their_runs_as_the_csvs_are() {
        let dir = std::env::temp_dir().join(format!("zncache-names-{}", std::process::id()));
        write_experiment(&one_row_of_b(), &dir).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        std::fs::remove_dir_all(&dir).unwrap();
        for want in [
            "zncache-b-ZNS-64K-UNIF-10.csv",
            "zncache-b-Block-64K-UNIF-10.csv",
            "zncache-b-ZNS-64K-UNIF-10+Block-64K-UNIF-10-get-throughput.png",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
        }
        assert!(
            names.iter().all(|n| !n.starts_with("zncache-b-0-")),
            "{names:?}"
        );
    }

    #[test]
    fn get_throughput_figures_draw_the_papers_value_of_each_run() {
        let r = one_row_of_b();
        let group: Vec<(String, &RunReport)> = r
            .runs
            .iter()
            .map(|x| (x.label.clone(), &x.report))
            .collect();
        let (_, charts) = figure_charts('b', &group);
        let (_, get) = charts
            .iter()
            .find(|(name, _)| *name == "get-throughput")
            .unwrap();
        let refs: Vec<(f64, &str)> = get
            .references
            .iter()
            .map(|x| (x.y, x.label.as_str()))
            .collect();
        // appendix B, Table 8: 0.023 GiB/s for both runs of the row
        // (one line for the two: the same figure)
        assert_eq!(
            refs,
            [(0.023, "paper, ZNS-64K-UNIF-10, Block-64K-UNIF-10: 0.023")]
        );
        let (_, free) = charts
            .iter()
            .find(|(name, _)| *name == "free-zones")
            .unwrap();
        assert!(free.references.is_empty());
    }

    #[test]
    fn checks_judge_direction_or_a_band() {
        assert!(PaperRow::same_sign("a", 108.0, 17.4).holds());
        assert!(!PaperRow::same_sign("a", -35.4, 12.0).holds());
        assert!(PaperRow::within("b", -1.9, 4.9, 5.0).holds());
        assert!(!PaperRow::within("b", -1.9, -5.1, 5.0).holds());
    }

    #[test]
    fn the_gc_experiment_checks_the_drop_and_the_zero_latency_gain() {
        let run = |remote, zns_gib_s, block_gib_s, block, rel| RemoteRun {
            remote,
            zns_gib_s,
            block_gib_s,
            block_change_pct: block,
            block_vs_zns_pct: rel,
        };
        // the inversion: at 0 s the block drive gains more than ZNS
        let c = gc_checks(&[
            run("3.2s", 1.0, 1.0, Some(34.5), Some(-7.6)),
            run("0s", 1.275, 1.38, Some(7.8), Some(-3.8)),
        ]);
        let holds: Vec<(&str, bool)> = c.iter().map(|c| (c.what.as_str(), c.holds())).collect();
        assert_eq!(holds.len(), 3, "{holds:?}");
        assert!(!holds[0].1, "block rose after the fill: {holds:?}");
        assert!(holds[1].1, "but less than ZNS: {holds:?}");
        assert!(!holds[2].1, "block gained more at 0 s: {holds:?}");
        // a run that did not fill the device: no drop to check
        let c = gc_checks(&[
            run("3.2s", 1.0, 1.0, None, None),
            run("0s", 1.5, 1.0, None, None),
        ]);
        assert_eq!(c.len(), 1);
        assert!(c[0].holds());
        // with the spread row: the 0 s gain is judged against both baselines
        let c = gc_checks(&[
            run("3.2s", 1.0, 0.6, Some(-20.0), Some(-40.0)),
            run("3.2s-spread", 1.0, 0.7, None, None),
            run("0s", 1.2, 0.77, None, None),
        ]);
        let holds: Vec<bool> = c.iter().map(|c| c.holds()).collect();
        assert_eq!(holds, [true, true, false, true], "{c:?}");
    }
}
