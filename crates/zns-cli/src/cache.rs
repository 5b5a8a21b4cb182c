//! `zns cache run`, `zns cache gen-workload` and `zns repro zncache`: thin
//! wrappers over zns-cache (ZNCache over an emulated device, its workloads,
//! the paper's experiments; docs/zncache.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use zns_cache::repro::{self, ReproOptions, Scale};
use zns_cache::units::parse_duration_ns;
use zns_cache::{
    CacheConfig, CacheError, Distribution, FetchOrder, Policy, Precondition, RemoteLatency,
    RunSpec, Workload, WorkloadSpec, ZnsWrite,
};
use zns_device::StoreKind;
use zns_target::TargetSpec;

use crate::progress::Eta;
use crate::{host_stack_arg, set_overrides, size_arg, CliError};

pub const CACHE_HELP: &str = "\
Examples:
  zns cache run --device zn540 --zones 8 --chunk 64k --ratio 2 --requests 200000
        ZNCache on the emulated ZN540 (8 zones of 1077 MiB), YCSB Zipf 1:2,
        64 workers, S3-like remote latency for 64 KiB (40.6 ms)
  zns cache run --device zn540-cns --nsid 1 --set namespace.0.capacity_lbas=2621440 \\
                --zones 8 --chunk 64k --ratio 2 --requests 200000
        the same on the block backend: the conventional namespace (grown to
        10 GiB) split into 1077 MiB regions
  zns cache run --device zn540 --zones 40 --chunk 64k --ratio 2 --requests 1000000 \\
                --fetch-order fetch-first --remote-latency measured-spread
        40 zones (the paper's 64 KiB cache), every worker's miss fetching at
        once (ZNCache holds a zone across the fetch: at most 14 in flight),
        remote latencies with S3's measured spread
  zns cache run --device zn540 --zones 8 --policy clru --remote-latency 0 \\
                --distribution uniform --ratio 10 --duration 60s --out runs/clru
        CLRU with host GC, no remote latency, one virtual minute; CSV time
        series, PNG plots, summary and JSON in runs/clru/
  zns cache run --workload w.bin --zones 8 --chunk 64k
        replay a workload file written by zns cache gen-workload

Exit codes: 0 ok; 1 a device command failed or the run failed; 2 wrong
arguments or parameters (chunk larger than a zone, ratio <= 0, ...); 3 a bad
profile or workload file (empty, not u32 ids); 4 a file could not be read or
written.";

pub const GEN_WORKLOAD_HELP: &str = "\
Examples:
  zns cache gen-workload --zones 8 --chunk 64k --ratio 10 --requests 1000000 w.bin
        a ZNCache workload file (little-endian u32 ids, YCSB Zipf θ = 0.99)
        for a cache of 8 zones of 64 KiB chunks and 10x as many ids
  zns cache gen-workload --zones 8 --chunk 64k --ids 5000 --distribution uniform u.bin
        exactly 5000 distinct ids, uniform
  zns cache run --workload w.bin --zones 8 --chunk 64k
        replay it (the same cache shape)

Exit codes: 0 ok; 2 wrong arguments; 3 a bad profile; 4 the file could not
be written.";

pub const REPRO_ZNCACHE_HELP: &str = "\
Examples:
  zns repro zncache --quick                     every experiment, tiny (about a minute)
  zns repro zncache --exp b,d --out figs/       (b) and (d) at the documented scale: CSV, PNG, summary
  zns repro zncache --exp c --json              the GC experiment's results as JSON

Exit codes: 0 ok; 1 a run failed; 2 wrong arguments; 4 --out cannot be
written (checked before anything runs).";

#[derive(Subcommand)]
pub enum CacheCommand {
    /// Run ZNCache over an emulated device with a generated workload, a workload file or a trace.
    #[command(after_help = CACHE_HELP)]
    Run(Box<RunArgs>),
    /// Write a ZNCache workload file (little-endian u32 chunk ids) for a cache size and ratio.
    #[command(after_help = GEN_WORKLOAD_HELP)]
    GenWorkload(GenArgs),
}

#[derive(Subcommand)]
pub enum ReproCommand {
    /// ZNCache (zncache-2025): (a) 512 MiB chunks ZNS vs block, (b) 64 KiB chunks, (c) the GC experiment, (d) ZPLRU vs CLRU.
    #[command(after_help = REPRO_ZNCACHE_HELP)]
    Zncache(ReproArgs),
    /// ZRAID (zraid-asplos25): Fig. 7 (ZRAID vs RAIZN+ sequential writes), Fig. 8 (ablation at 8 KiB), flash WAF per variant, Fig. 11 (PM1731a); PNG + CSV.
    Zraid(crate::raid::ReproZraidArgs),
    /// ZNS integration study (zns-integration-study-2022): db_bench on F2FS / F2FS zoned / btrfs zoned (integration levels), two tenants on one drive at low and > 80 % utilization; served drives, real applications.
    ZnsStudy(crate::study::ReproStudyArgs),
}

/// The device and the cache's shape (shared by run and gen-workload).
#[derive(Args, Clone)]
pub struct CacheShape {
    /// Device profile (built-in name or TOML file). A zoned namespace gets the
    /// ZNS backend, a conventional one the block backend. Or a RAID array of
    /// identical zoned devices, as `zns bench` takes it:
    /// raid:5xzn540[,variant=raizn+][,chunk=64k][,policy=wplog][,stack=none]
    /// (--set then applies to every member).
    #[arg(long, default_value = "zn540")]
    device: String,
    /// Namespace (default: the first zoned namespace, else the first).
    #[arg(long)]
    nsid: Option<u32>,
    /// Override a profile value (repeatable), e.g. --set namespace.0.capacity_lbas=2621440.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Chunk size (64k, 256m, 512m, ...).
    #[arg(long, default_value = "64k")]
    chunk: String,
    /// Zones (block: regions) the cache uses, from the first (default: all).
    #[arg(long)]
    zones: Option<u32>,
    /// Block backend region size (default 1077 MiB, the ZN540 zone capacity).
    #[arg(long, value_name = "SIZE")]
    region: Option<String>,
}

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    shape: CacheShape,
    /// Eviction policy: zplru (zone LRU, no host GC) or clru (chunk LRU; host GC on ZNS).
    #[arg(long, default_value = "zplru")]
    policy: String,
    /// Working set ÷ cache size for generated workloads (2 = 1:2, 10 = 1:10).
    #[arg(long, default_value_t = 2.0)]
    ratio: f64,
    /// Generated workload: zipf (YCSB, θ = 0.99) or uniform.
    #[arg(long, default_value = "zipf")]
    distribution: String,
    /// Requests of the generated workload.
    #[arg(long, default_value_t = 100_000)]
    requests: u64,
    /// Seed of the generated workload.
    #[arg(long, default_value_t = 1)]
    workload_seed: u64,
    /// Replay a ZNCache workload file (little-endian u32 ids) instead.
    #[arg(long, conflicts_with = "trace")]
    workload: Option<PathBuf>,
    /// Replay a trace of real keys (text: first field per line; .bin: u32 ids).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Passes over the workload.
    #[arg(long, default_value_t = 1)]
    iterations: u32,
    /// Stop issuing requests after this much virtual time (e.g. 1h, 90s).
    #[arg(long)]
    duration: Option<String>,
    /// Concurrent worker tasks.
    #[arg(long, default_value_t = 64)]
    workers: u32,
    /// Remote fetch latency: measured (the paper's appendix A mean, by chunk size, every fetch the same), measured-spread (log-normal per fetch with appendix A's mean and standard deviation), 0, or a duration (40ms).
    #[arg(long, default_value = "measured")]
    remote_latency: String,
    /// Free-zone watermark: eviction starts when free zones <= HIGH.
    #[arg(long, default_value_t = 2)]
    high: u32,
    /// Free-zone watermark: eviction goes on until LOW zones are free.
    #[arg(long, default_value_t = 4)]
    low: u32,
    /// CLRU free-chunk watermark: eviction starts at this many free chunks
    /// (default: (low + 1) zones of chunks).
    #[arg(long)]
    chunk_high: Option<u64>,
    /// CLRU free-chunk watermark: eviction goes on until this many chunks
    /// are free (default: chunk-high + half a zone of chunks).
    #[arg(long)]
    chunk_low: Option<u64>,
    /// Zones written at once by inserts (default: the device's active-zone limit).
    #[arg(long)]
    max_active: Option<u32>,
    /// When a miss fetches from the remote store: hold-zone (ZNCache: take an
    /// active zone, fetch, write; at most --max-active misses in flight) or
    /// fetch-first (fetch, then take a zone; every worker's miss in flight).
    #[arg(long, default_value = "hold-zone")]
    fetch_order: String,
    /// Background eviction poll interval.
    #[arg(long, default_value = "100ms")]
    eviction_interval: String,
    /// Bytes per device command (default: the device's MDTS).
    #[arg(long)]
    io_size: Option<String>,
    /// Commands of one chunk in flight.
    #[arg(long, default_value_t = 8)]
    io_depth: u32,
    /// ZNS writes: wp (writes at the write pointer, ZNCache's way) or append (Zone Append).
    #[arg(long, default_value = "wp")]
    zns_write: String,
    /// Host stack (default: io-uring-mq-deadline on ZNS, io-uring-none on block, as the paper).
    #[arg(long)]
    host_stack: Option<String>,
    /// Fill the device first: none, sequential, random (block: 64 KiB random writes over the namespace), random-steady (block: two such passes, the second over a full drive: a random-write steady state, as a drive in use that is never trimmed).
    #[arg(long, default_value = "none")]
    precondition: String,
    /// Block backend: deallocate (TRIM) evicted regions and chunk slots (ZNCache does not).
    #[arg(long)]
    discard: bool,
    /// Keep bytes and check every hit against the bytes stored for its key (slow; memory).
    #[arg(long)]
    verify: bool,
    /// Diagnostic, not ZNCache's behaviour: start worker w at w × (mean remote
    /// fetch ÷ zones written at once), so the first zone holders fetch and
    /// write out of step instead of together (with a constant remote latency
    /// they stay in step and the device idles between rounds).
    #[arg(long)]
    stagger_start: bool,
    /// Time-series interval (virtual).
    #[arg(long, default_value = "1s")]
    interval: String,
    /// Runtime seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the time series (CSV), PNG plots, summary and JSON into DIR.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the report as JSON (time series included).
    #[arg(long)]
    json: bool,
    /// Progress bar on stderr: auto, always, never.
    #[arg(long, value_enum, default_value_t = Eta::Auto)]
    eta: Eta,
}

#[derive(Args)]
pub struct GenArgs {
    /// Output file (little-endian u32 ids, ZNCache's format).
    out: PathBuf,
    #[command(flatten)]
    shape: CacheShape,
    /// Working set ÷ cache size (2 = 1:2, 10 = 1:10).
    #[arg(long, default_value_t = 2.0)]
    ratio: f64,
    /// zipf (YCSB, θ = 0.99) or uniform.
    #[arg(long, default_value = "zipf")]
    distribution: String,
    /// Requests (chunk ids) to generate.
    #[arg(long, default_value_t = 100_000)]
    requests: u64,
    /// Seed of the generator (same seed, same ids).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Use exactly this many ids instead of (cache chunks × ratio).
    #[arg(long)]
    ids: Option<u64>,
    /// Print what was written (file, ids, requests) as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ReproArgs {
    /// Experiments to run, comma-separated: a, b, c, d.
    #[arg(long, default_value = "a,b,c,d")]
    exp: String,
    /// The block device profile the block runs use (default: the FTL SSD sn540-960g-mini, the paper's SN540 scaled down; zn540-cns has no device GC).
    #[arg(long, default_value = "sn540-960g-mini")]
    block_device: String,
    /// Its namespace.
    #[arg(long, default_value_t = 1)]
    block_nsid: u32,
    /// The block device runs device GC (labels only; detected for FTL profiles such as sn540-mini).
    #[arg(long)]
    block_has_gc: bool,
    /// The ZNS device profile.
    #[arg(long, default_value = "zn540")]
    zns_device: String,
    /// Tiny runs that only show everything works.
    #[arg(long)]
    quick: bool,
    /// Seed of every run (same seed, same numbers).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Concurrent worker tasks of every run.
    #[arg(long, default_value_t = 64)]
    workers: u32,
    /// Write per-run CSVs, PNG figures and the text report into DIR.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the experiments' results as JSON.
    #[arg(long)]
    json: bool,
    /// Progress on stderr: auto, always, never.
    #[arg(long, value_enum, default_value_t = Eta::Auto)]
    eta: Eta,
}

fn cache_err(e: CacheError) -> CliError {
    match e {
        CacheError::Param(m) => CliError::Usage(m),
        CacheError::Workload(m) | CacheError::Device(m) => CliError::Input(m),
        CacheError::Target(t) => CliError::Input(t.to_string()),
        CacheError::File { .. } => CliError::Io(e.to_string()),
        CacheError::Io { .. } => CliError::Failed(e.to_string()),
        other => CliError::Failed(other.to_string()),
    }
}

impl CacheShape {
    fn device_spec(&self) -> Result<zns_cache::DeviceSpec, CliError> {
        let device = &self.device;
        let target = TargetSpec::parse(device).map_err(|e| {
            let msg = format!("--device {device}: {e}");
            // a malformed name (its grammar) is a usage error; a profile that
            // will not load is bad input, in an array or not
            match e {
                zns_target::TargetError::Spec(_) | zns_target::TargetError::Size(_) => {
                    CliError::Usage(msg)
                }
                _ => CliError::Input(msg),
            }
        })?;
        if let TargetSpec::Raid(r) = &target {
            let mut names = r.member_names();
            let first = names.next().unwrap_or_default();
            if let Some(other) = names.find(|m| *m != first) {
                return Err(CliError::Usage(format!(
                    "--device {device}: the cache's arrays need identical members ({first} and {other})"
                )));
            }
        }
        let target = target
            .with_overrides(&set_overrides(&self.set)?)
            .map_err(|e| CliError::Input(format!("--device {device}: {e}")))?;
        let mut d = zns_cache::DeviceSpec::new(target);
        d.nsid = self.nsid;
        if let Some(r) = &self.region {
            d.region_bytes = Some(size_arg("--region", r)?);
        }
        Ok(d)
    }

    fn config(&self) -> Result<CacheConfig, CliError> {
        Ok(CacheConfig {
            chunk_bytes: size_arg("--chunk", &self.chunk)?,
            zones: self.zones,
            ..CacheConfig::default()
        })
    }
}

pub fn cache(cmd: CacheCommand) -> Result<ExitCode, CliError> {
    match cmd {
        CacheCommand::Run(a) => run(*a),
        CacheCommand::GenWorkload(a) => gen(a),
    }
}

fn run(a: RunArgs) -> Result<ExitCode, CliError> {
    crate::interrupt::watch_and_say(
        "zns cache run: interrupted: a cache run reports at its end, so nothing was reported; `--requests N` makes a shorter run".into(),
    );
    let mut dev = a.shape.device_spec()?;
    let mut cfg = a.shape.config()?;
    cfg.policy = Policy::parse(&a.policy).map_err(cache_err)?;
    cfg.zone_high = a.high;
    cfg.zone_low = a.low;
    cfg.chunk_high = a.chunk_high;
    cfg.chunk_low = a.chunk_low;
    cfg.max_active_zones = a.max_active;
    cfg.fetch_order = FetchOrder::parse(&a.fetch_order).map_err(cache_err)?;
    cfg.eviction_interval_ns = parse_duration_ns(&a.eviction_interval).map_err(cache_err)?;
    cfg.io_bytes = a
        .io_size
        .as_deref()
        .map(|s| size_arg("--io-size", s))
        .transpose()?;
    cfg.io_depth = a.io_depth;
    cfg.verify = a.verify;
    dev.zns_write = match a.zns_write.as_str() {
        "wp" | "write" => ZnsWrite::WritePointer,
        "append" => ZnsWrite::Append,
        o => {
            return Err(CliError::Usage(format!(
                "--zns-write {o}: expected wp or append"
            )))
        }
    };
    dev.host_stack = a.host_stack.as_deref().map(host_stack_arg).transpose()?;
    dev.precondition = Precondition::parse(&a.precondition).map_err(cache_err)?;
    dev.discard = a.discard;
    if a.verify {
        dev.store = StoreKind::Memory;
    }
    let workload = match (&a.workload, &a.trace) {
        (Some(p), _) => WorkloadSpec::Ids(Workload::load(p).map_err(cache_err)?),
        (None, Some(p)) => WorkloadSpec::Ids(Workload::load_trace(p).map_err(cache_err)?),
        (None, None) => WorkloadSpec::Generated {
            distribution: Distribution::parse(&a.distribution).map_err(cache_err)?,
            ratio: a.ratio,
            requests: a.requests,
            seed: a.workload_seed,
        },
    };
    let mut spec = RunSpec::new(dev, cfg, workload);
    spec.workers = a.workers;
    spec.remote = RemoteLatency::parse(&a.remote_latency).map_err(cache_err)?;
    spec.iterations = a.iterations;
    spec.duration_ns = a
        .duration
        .as_deref()
        .map(parse_duration_ns)
        .transpose()
        .map_err(cache_err)?;
    spec.interval_ns = parse_duration_ns(&a.interval).map_err(cache_err)?;
    spec.seed = a.seed;
    spec.stagger_start = a.stagger_start;
    let pb = crate::progress::bar(
        a.eta,
        1,
        "zncache [{bar:30}] {pos}/{len} gets {msg} ({elapsed})",
    );
    let result = zns_cache::run_cache(&spec, &mut |p| {
        if let Some(b) = &pb {
            b.set_length(p.total);
            b.set_position(p.done);
            b.set_message(format!(
                "t={:.0}s hit={:.3}",
                p.virtual_ns as f64 / 1e9,
                p.hit_ratio
            ));
        }
    });
    if let Some(b) = &pb {
        b.finish_and_clear();
    }
    let report = result.map_err(cache_err)?;
    if let Some(dir) = &a.out {
        zns_cache::report::write_run_outputs(&report, dir, "zncache").map_err(cache_err)?;
    }
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| CliError::Io(e.to_string()))?
        );
    } else {
        out!("{}", zns_cache::report::summary_text(&report));
        if let Some(dir) = &a.out {
            outln!(
                "  files      {}/zncache.{{csv,json}}, zncache-summary.txt, zncache-*.png",
                dir.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn gen(a: GenArgs) -> Result<ExitCode, CliError> {
    let dist = Distribution::parse(&a.distribution).map_err(cache_err)?;
    let ids = match a.ids {
        Some(n) => n,
        None => {
            if !(a.ratio.is_finite() && a.ratio > 0.0) {
                return Err(CliError::Usage(format!(
                    "--ratio {}: the working set ÷ cache size must be > 0 (2 for 1:2, 10 for 1:10)",
                    a.ratio
                )));
            }
            let dev = a.shape.device_spec()?;
            let cfg = a.shape.config()?;
            let mut rt = zns_sim::Runtime::new(0);
            let open = zns_cache::run::open_device(&mut rt, &dev).map_err(cache_err)?;
            // (a file of ids: the cache's size counts, not its watermarks)
            let slots =
                zns_cache::Geometry::chunk_slots(&cfg, &open.dev.layout()).map_err(cache_err)?;
            ((slots.total_chunks as f64) * a.ratio).ceil() as u64
        }
    };
    let w = Workload::generate(dist, ids, a.requests, a.seed).map_err(cache_err)?;
    w.save(&a.out).map_err(cache_err)?;
    if a.json {
        outln!(
            "{}",
            serde_json::json!({"file": a.out, "requests": w.ids.len(), "ids": ids, "distribution": dist.name(), "seed": a.seed, "distinct_ids": w.distinct_ids()})
        );
    } else {
        outln!(
            "wrote {}: {} requests over {ids} ids ({}, seed {}), {} distinct",
            a.out.display(),
            w.ids.len(),
            dist.name(),
            a.seed,
            w.distinct_ids()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A repro's message on a stop signal: its figures are written as each
/// finishes, so the files in `out` are the finished ones.
pub fn say_on_stop(what: &str, out: Option<&std::path::Path>) {
    crate::interrupt::watch_and_say(format!(
        "zns repro {what}: interrupted: {}; the same command runs it again",
        match out {
            Some(dir) => format!("the files in {} are those of the parts that finished (a figure's CSV and PNG are written when it finishes)", dir.display()),
            None => "nothing was written (no --out)".to_string(),
        }
    ));
}

pub fn repro_cmd(cmd: ReproCommand) -> Result<ExitCode, CliError> {
    let a = match cmd {
        ReproCommand::Zncache(a) => a,
        ReproCommand::Zraid(a) => return crate::raid::repro_zraid_cmd(a),
        ReproCommand::ZnsStudy(a) => return crate::study::repro_study_cmd(a),
    };
    if let Some(dir) = &a.out {
        crate::writable_dir(dir, "--out")?;
    }
    say_on_stop("zncache", a.out.as_deref());
    let load =
        |name: &str| zns_device::Profile::load(name).map_err(|e| CliError::Input(e.to_string()));
    let mut opts = ReproOptions::new().map_err(cache_err)?;
    opts.zns_profile = load(&a.zns_device)?;
    opts.block_profile = load(&a.block_device)?;
    opts.block_nsid = a.block_nsid;
    let has_gc = a.block_has_gc || repro::has_device_gc(&opts.block_profile, a.block_nsid);
    opts.block_label = repro::block_label(&a.block_device, a.block_nsid, has_gc);
    opts.scale = if a.quick {
        Scale::Quick
    } else {
        Scale::Default
    };
    opts.seed = a.seed;
    opts.workers = a.workers;
    opts.out_dir = a.out.clone();
    opts.experiments = a
        .exp
        .split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut c = s.chars();
            match (c.next(), c.next()) {
                (Some(x @ 'a'..='d'), None) => Ok(x),
                _ => Err(CliError::Usage(format!("--exp {s}: expected a, b, c or d"))),
            }
        })
        .collect::<Result<_, _>>()?;
    let pb = crate::progress::bar(a.eta, 1, "zncache repro {spinner} {msg} ({elapsed})");
    let result = repro::run_repro(&opts, &mut |label, p| {
        if let Some(b) = &pb {
            b.set_message(format!(
                "{label}: {}/{} gets, t={:.0}s",
                p.done,
                p.total,
                p.virtual_ns as f64 / 1e9
            ));
            b.tick();
        }
    });
    if let Some(b) = &pb {
        b.finish_and_clear();
    }
    let results = result.map_err(cache_err)?;
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&results).map_err(|e| CliError::Io(e.to_string()))?
        );
    } else {
        for r in &results {
            out!("{}", repro::experiment_text(r));
            outln!();
        }
    }
    Ok(ExitCode::SUCCESS)
}
