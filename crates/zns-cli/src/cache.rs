//! `zns cache run` and `zns cache gen-workload`: thin wrappers over
//! zns-cache (ZNCache over an emulated device and its workloads;
//! docs/zncache.md). The paper's experiments are `zns repro zncache`
//! (repro.rs).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use zns_cache::{
    CacheDeviceParams, CacheError, CacheRunParams, Distribution, Workload, WorkloadSpec,
};

use crate::progress::Eta;
use crate::CliError;

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

#[derive(Subcommand)]
pub enum CacheCommand {
    /// Run ZNCache over an emulated device with a generated workload, a workload file or a trace.
    #[command(after_help = CACHE_HELP)]
    Run(Box<RunArgs>),
    /// Write a ZNCache workload file (little-endian u32 chunk ids) for a cache size and ratio.
    #[command(after_help = GEN_WORKLOAD_HELP)]
    GenWorkload(GenArgs),
}

#[derive(Args)]
pub struct RunArgs {
    /// The run (zns_cache::params: the flags, the sweep's keys and the
    /// Python package's arguments are its fields).
    #[command(flatten)]
    params: CacheRunParams,
    /// Replay a ZNCache workload file (little-endian u32 ids) instead.
    #[arg(long, conflicts_with = "trace")]
    workload: Option<PathBuf>,
    /// Replay a trace of real keys (text: first field per line; .bin: u32 ids).
    #[arg(long)]
    trace: Option<PathBuf>,
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
    shape: CacheDeviceParams,
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

pub(crate) fn cache_err(e: CacheError) -> CliError {
    match e {
        CacheError::Param(m) => CliError::Usage(m),
        CacheError::Workload(m) | CacheError::Device(m) => CliError::Input(m),
        CacheError::Target(t) => CliError::Input(t.to_string()),
        CacheError::File { .. } => CliError::Io(e.to_string()),
        CacheError::Io { .. } => CliError::Failed(e.to_string()),
        other => CliError::Failed(other.to_string()),
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
    let workload = match (&a.workload, &a.trace) {
        (Some(p), _) => Some(WorkloadSpec::Ids(Workload::load(p).map_err(cache_err)?)),
        (None, Some(p)) => Some(WorkloadSpec::Ids(
            Workload::load_trace(p).map_err(cache_err)?,
        )),
        (None, None) => None,
    };
    let spec = a.params.spec(workload).map_err(cache_err)?;
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
            let dev = a.shape.device_spec().map_err(cache_err)?;
            let cfg = a.shape.config().map_err(cache_err)?;
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
