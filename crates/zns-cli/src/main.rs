//! `zns`: the command-line face of znskit. Every subcommand parses its
//! arguments, calls into the libraries (zns-target opens devices; zns-bench,
//! zns-cache, zns-raid, zns-serve, zns-apps do the work) and prints the
//! result as text (nvme-cli / blkzone style) or, with `--json`, as JSON.
//!
//! Exit codes: 0 success; 1 the device rejected a command (NVMe status printed);
//! 2 wrong arguments; 3 bad input (profile, trace or image malformed or
//! corrupt); 4 an I/O error on a file.

// OS-facing (clippy.toml's determinism guardrails do not apply here): the command line measures host time and draws progress
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

/// `print!` for the tool's output: a failed write to stdout (a full disk,
/// /dev/full) returns `CliError::Io` (exit 4) from the calling function
/// instead of panicking (docs/cli.md). A closed pipe still ends the
/// process quietly (SIGPIPE, `die_quietly_on_closed_pipes`).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!($($arg)*))?
    };
}

/// `println!` for the tool's output, as [`out!`].
macro_rules! outln {
    () => {
        $crate::write_stdout(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

mod bench;
mod cache;
mod export;
mod interrupt;
mod output;
mod progress;
mod raid;
mod repro;
mod serve;
mod sweep;
mod zone;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use zns_core::NvmeError;
use zns_device::trace::{parse_trace, run_trace};
use zns_device::{Controller, DeviceError, Profile, StoreError, StoreKind};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;
use zns_target::{OpenOptions, OpenedDevice, TargetError, TargetSpec};

const AFTER_HELP: &str = "\
Examples:
  zns info --profile zn540                 geometry, limits, ZRWA and timing of a profile
  zns create --profile tiny dev.img        a persistent emulated device
  zns zone report dev.img                  its zones, like `nvme zns report-zones`
  zns zone write dev.img --slba 0 --nlb 4  write 4 stamp blocks at the write pointer
  zns zone open dev.img --zone 1 --zrwa    open zone 1 with a ZRWA
  zns replay trace.jsonl --json            run a JSON-lines command trace, print each status
  zns probe --profile zn540                QD1 latencies of the emulated device
  zns bench examples/fio/seqwrite.fio      a fio job file in virtual time, fio's output
  zns fidelity --filter qd1                emulated vs published ZN540 figures
  zns cache run --device zn540 --zones 8   ZNCache over the emulated ZN540 (see zns cache run --help)
  zns repro zncache --exp b,d              the ZNCache paper's experiments, scaled
  zns repro zraid --fig 7,8,waf,11         the ZRAID paper's figures (5 x ZN540 arrays, about a minute)
  zns repro zns-study --quick              the ZNS integration study (served drives, F2FS, db_bench)
  zns export-zones dev.img --libzbd-dump dev_zone_info.dump
                                           its zones for Debian's `zbd report FILE`
  sudo zns serve zn540 --zones 64          the emulated ZN540 as /dev/ublkbN (ublk, Linux >= 6.6)
  zns sweep examples/sweeps/crashtest.toml a parameter sweep on every core (or --engine ray)

Exit codes: 0 ok, 1 the device rejected a command, 2 wrong arguments,
3 bad profile/trace/image/job file, 4 file I/O error.";

#[derive(Parser)]
#[command(name = "zns", version, about = "Emulated NVMe ZNS SSDs in deterministic virtual time", after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show a device profile: namespaces, zone geometry, limits, ZRWA (and every timing parameter with --toml).
    Info(InfoArgs),
    /// Create a persistent device image (a sparse file) from a profile.
    Create(CreateArgs),
    /// Zone commands against a device image (report, open, close, finish, reset, write, append, read, zrwa-flush).
    ///
    /// Each command powers the image's device on, runs, and powers it off, and no zone is
    /// open after power on (docs/semantics.md): an explicit open lasts for its own command
    /// only (a written zone comes back Closed, a ZRWA stays allocated). For sequences that
    /// need zones to stay open (the open-zone limit, writes into an open ZRWA), use `zns
    /// replay` with a trace, or Python's `znskit.Device`.
    #[command(subcommand)]
    Zone(zone::ZoneCommand),
    /// Execute a JSON-lines trace of zone commands and print, per command, the NVMe status and the zones it left.
    Replay(ReplayArgs),
    /// Measure QD1 latencies of the emulated device (write, append, read, open, close, reset, finish) per host stack.
    Probe(ProbeArgs),
    /// Run fio job files or fio-style job options (--name=… --rw=…) in virtual time; fio's text or JSON output. `zns bench --help` explains.
    #[command(disable_help_flag = true)]
    Bench {
        /// Job files, fio-style job options and bench flags (see `zns bench --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run the fidelity suite: every published ZN540 figure measured through `zns bench`, with pass/fail per target (exit 1 if any fails).
    Fidelity(repro::FidelityArgs),
    /// ZNCache, the ZNS-aware flash chunk cache: run it over an emulated device, generate workload files.
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// Reproduce a paper's experiments (zncache, zraid, zns-study).
    #[command(subcommand)]
    Repro(repro::ReproCommand),
    /// ZRAID, RAID-5 over emulated ZNS devices with partial parity in the ZRWA: crash tests.
    #[command(subcommand)]
    Raid(raid::RaidCommand),
    /// Write an image's zones in another tool's format: libzbd's zone dump (`zbd report FILE`).
    ExportZones(export::ExportZonesArgs),
    /// Serve emulated devices (profiles, images, RAID arrays) as Linux block devices through ublk until SIGINT/SIGTERM: zoned namespaces as host-managed zoned devices. Needs Linux >= 6.6, ublk_drv, root.
    #[command(after_help = serve::SERVE_HELP)]
    Serve(serve::ServeArgs),
    /// Run a parameter sweep (a TOML file: crash tests, fio jobs, cache runs or repros over a grid of
    /// values and seeds) on this machine's cores or a Ray cluster; one record per point, the merged
    /// table as CSV and Parquet, resumable.
    #[command(after_help = sweep::SWEEP_HELP)]
    Sweep(sweep::SweepArgs),
}

/// Which profile, with overrides.
#[derive(Args, Clone)]
struct ProfileArgs {
    /// Built-in profile name (zn540, zn540-cns, zn540-lbaf0, pm1731a, tiny, sn540, sn540-slc,
    /// sn540-mini, sn540-mini-slc, sn540-960g-mini, sn640, tiny-ftl; `zns info --list`) or a path to a profile TOML file.
    #[arg(long, default_value = "tiny")]
    profile: String,
    /// Override any profile value by its TOML path, e.g. --set namespace.0.max_open_zones=8 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Number of zones of the first zoned namespace.
    #[arg(long)]
    zones: Option<u32>,
    /// Zone capacity (ZCAP) of the first zoned namespace, in LBAs.
    #[arg(long)]
    zone_cap_lbas: Option<u64>,
    /// Maximum open zones of the first zoned namespace (0 = unlimited).
    #[arg(long)]
    max_open: Option<u32>,
    /// Maximum active zones of the first zoned namespace (0 = unlimited).
    #[arg(long)]
    max_active: Option<u32>,
}

/// `--set KEY=VALUE` arguments as profile overrides (TOML path, value).
fn set_overrides(set: &[String]) -> Result<Vec<(String, String)>, CliError> {
    set.iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| CliError::Usage(format!("--set {kv}: expected KEY=VALUE")))
        })
        .collect()
}

impl ProfileArgs {
    fn load(&self) -> Result<Profile, CliError> {
        let base = Profile::load(&self.profile).map_err(|e| CliError::Input(e.to_string()))?;
        let mut overrides = set_overrides(&self.set)?;
        let zoned = base.first_zoned();
        let mut shortcut = |name: &str, key: &str, value: Option<String>| -> Result<(), CliError> {
            if let Some(v) = value {
                let ns = zoned.ok_or_else(|| {
                    CliError::Usage(format!("--{name}: the profile has no zoned namespace"))
                })?;
                overrides.push((format!("namespace.{ns}.{key}"), v));
            }
            Ok(())
        };
        shortcut("zones", "zone_count", self.zones.map(|v| v.to_string()))?;
        shortcut(
            "zone-cap-lbas",
            "zone_capacity_lbas",
            self.zone_cap_lbas.map(|v| v.to_string()),
        )?;
        shortcut(
            "max-open",
            "max_open_zones",
            self.max_open.map(|v| v.to_string()),
        )?;
        shortcut(
            "max-active",
            "max_active_zones",
            self.max_active.map(|v| v.to_string()),
        )?;
        base.with_overrides(&overrides)
            .map_err(|e| CliError::Input(e.to_string()))
    }
}

#[derive(Args)]
struct InfoArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// List the built-in profiles.
    #[arg(long)]
    list: bool,
    /// Print the full profile as TOML (what an image stores).
    #[arg(long)]
    toml: bool,
    /// Print the profile (or the --list) as one JSON document.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CreateArgs {
    /// Path of the new image (must not exist).
    image: PathBuf,
    #[command(flatten)]
    profile: ProfileArgs,
    /// Print the new image's description as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ReplayArgs {
    /// JSON-lines trace (one command per line; see docs/replay.md).
    trace: PathBuf,
    /// Run against a fresh device with this profile (default) ...
    #[command(flatten)]
    profile: ProfileArgs,
    /// ... or against this device image (the trace's effects are kept).
    #[arg(long)]
    image: Option<PathBuf>,
    /// Seed of the runtime (power-loss outcomes).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Host stack: spdk, io-uring-none, io-uring-mq-deadline.
    #[arg(long, default_value = "spdk")]
    host_stack: String,
    /// Exit with code 1 if any command failed.
    #[arg(long)]
    fail_on_error: bool,
    /// One JSON object per command (JSON lines).
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ProbeArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// Print the measured figures as JSON.
    #[arg(long)]
    json: bool,
}

/// A failure of the tool itself (not a device status).
#[derive(Debug)]
enum CliError {
    /// A command the device rejected.
    Device(NvmeError),
    Usage(String),
    Input(String),
    Io(String),
    /// A run that failed part-way (an I/O the device rejected during a benchmark).
    Failed(String),
}

impl CliError {
    fn exit_code(&self) -> u8 {
        match self {
            CliError::Device(_) | CliError::Failed(_) => 1,
            CliError::Usage(_) => 2,
            CliError::Input(_) => 3,
            CliError::Io(_) => 4,
        }
    }
}

/// An output directory a command will write into, created and checked
/// writable before the command runs, so that a long run cannot lose its
/// results at the end (exit 4, as any I/O error on a file).
fn writable_dir(dir: &std::path::Path, option: &str) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::Io(format!("{option} {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let probe = dir.join(format!(".zns-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(fail)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// A text input file (job file, trace): bytes that are not UTF-8 make it
/// bad input (exit 3), not an I/O error.
fn read_text(path: &std::path::Path, what: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            CliError::Input(format!(
                "{}: not a {what}: it is not UTF-8 text",
                path.display()
            ))
        } else {
            CliError::Io(format!("{}: {e}", path.display()))
        }
    })
}

impl From<DeviceError> for CliError {
    fn from(e: DeviceError) -> Self {
        match e {
            // the OS refused, or the image is busy: the image itself is fine
            DeviceError::Store(StoreError::Io { .. } | StoreError::InUse { .. }) => {
                CliError::Io(e.to_string())
            }
            other => CliError::Input(other.to_string()),
        }
    }
}

/// Opens one emulated controller through zns-target (`TargetSpec::Image` or
/// `TargetSpec::Profile`); an error is the device's own, as the user sees it
/// from every command (exit 4 for the OS's side, 3 otherwise).
fn open_controller(
    rt: &mut Runtime,
    spec: &TargetSpec,
    store: StoreKind,
    host_stack: HostStack,
) -> Result<Controller, CliError> {
    match zns_target::open(rt, spec, &OpenOptions { store, host_stack }) {
        Ok(OpenedDevice::Controller(c)) => Ok(c),
        Ok(_) => Err(CliError::Input(format!(
            "{}: not one emulated controller",
            spec.name()
        ))),
        Err(e) => Err(e.into()),
    }
}

impl From<TargetError> for CliError {
    /// A device that could not be opened or created: the device's error
    /// (which names the file) as the command's, else bad input.
    fn from(e: TargetError) -> Self {
        match e {
            TargetError::Device { source, .. } => source.into(),
            other => CliError::Input(other.to_string()),
        }
    }
}

/// Writes the tool's output (see [`out!`]); flushed at once, so that a
/// failure is seen by the command that caused it.
fn write_stdout(args: std::fmt::Arguments) -> Result<(), CliError> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.flush())
        .map_err(|e| CliError::Io(format!("writing to stdout: {e}")))
}

/// A closed stdout (`zns … | head`) ends the process quietly, as for other
/// Unix tools, instead of making `println!` panic: restore SIGPIPE's default
/// action, which the Rust runtime sets to "ignore".
fn die_quietly_on_closed_pipes() {
    #[cfg(unix)]
    // SAFETY: signal() with SIG_DFL installs no handler code; it is called
    // once, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    die_quietly_on_closed_pipes();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version: their text through our stdout, so a full
        // disk is exit 4 as for every other output
        Err(e) if !e.use_stderr() => {
            return match write_stdout(format_args!("{}", e.render())) {
                Ok(()) => ExitCode::SUCCESS,
                Err(CliError::Io(m)) => {
                    eprintln!("zns: {m}");
                    ExitCode::from(4)
                }
                Err(_) => ExitCode::from(4),
            };
        }
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            match &e {
                CliError::Device(err) => eprintln!("zns: command failed: {err}"),
                CliError::Usage(m) => eprintln!("zns: {m}"),
                CliError::Input(m) => eprintln!("zns: bad input: {m}"),
                CliError::Io(m) => eprintln!("zns: {m}"),
                CliError::Failed(m) => eprintln!("zns: run failed: {m}"),
            }
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Info(args) => info(args),
        Command::Create(args) => create(args),
        Command::Zone(cmd) => zone::zone(cmd),
        Command::Replay(args) => replay(args),
        Command::Probe(args) => probe(args),
        Command::Bench { args } => bench::bench(args),
        Command::Fidelity(args) => repro::fidelity(args),
        Command::Cache(cmd) => cache::cache(cmd),
        Command::Repro(cmd) => repro::repro_cmd(cmd),
        Command::Raid(cmd) => raid::raid(cmd),
        Command::ExportZones(args) => export::export_zones(args),
        Command::Serve(args) => serve::serve(args),
        Command::Sweep(args) => sweep::sweep(args),
    }
}

/// A `--host-stack` argument (`HostStack`'s own parser), as a usage error.
fn host_stack_arg(s: &str) -> Result<HostStack, CliError> {
    s.parse()
        .map_err(|e| CliError::Usage(format!("--host-stack: {e}")))
}

fn info(args: InfoArgs) -> Result<ExitCode, CliError> {
    if args.list {
        let mut list = Vec::new();
        for name in Profile::builtin_names() {
            let p = Profile::builtin(name).map_err(|e| CliError::Input(e.to_string()))?;
            list.push((name, p.description));
        }
        if args.json {
            // one document, as every --json output
            let doc: Vec<_> = list
                .iter()
                .map(|(name, d)| serde_json::json!({"name": name, "description": d}))
                .collect();
            outln!("{}", serde_json::Value::Array(doc));
        } else {
            let width = list.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
            for (name, d) in &list {
                outln!("{name:<width$} {d}");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let profile = args.profile.load()?;
    if args.toml {
        out!("{}", profile.to_toml());
    } else if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&profile).map_err(|e| CliError::Io(e.to_string()))?
        );
    } else {
        out!("{}", output::profile_text(&profile));
    }
    Ok(ExitCode::SUCCESS)
}

fn create(args: CreateArgs) -> Result<ExitCode, CliError> {
    let profile = args.profile.load()?;
    let rt = Runtime::new(0);
    let ctrl = zns_target::create_image(&rt, profile.clone(), &args.image, HostStack::Spdk)?;
    drop(ctrl);
    if args.json {
        outln!(
            "{}",
            serde_json::json!({"image": args.image, "profile": profile.name, "namespaces": profile.namespaces.len()})
        );
    } else {
        outln!(
            "created {} ({}: {})",
            args.image.display(),
            profile.name,
            profile.description
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Tells the user when an image was opened from its older zone table.
fn warn_recovery(ctrl: &Controller, image: &Path) {
    if let Some(why) = ctrl.metadata_recovery() {
        eprintln!(
            "zns: warning: {}: the newest zone table failed its checks ({why}); \
             opened the previous one — writes after it may be missing from the zone state",
            image.display()
        );
    }
}

fn replay(args: ReplayArgs) -> Result<ExitCode, CliError> {
    let text = read_text(&args.trace, "trace")?;
    let commands = parse_trace(&text)
        .map_err(|e| CliError::Input(format!("{}: {e}", args.trace.display())))?;
    let stack = host_stack_arg(&args.host_stack)?;
    let mut rt = Runtime::new(args.seed);
    let ctrl = match &args.image {
        Some(path) => {
            let spec = TargetSpec::Image(path.clone());
            let ctrl = open_controller(&mut rt, &spec, StoreKind::Stamp, stack)?;
            warn_recovery(&ctrl, path);
            ctrl
        }
        None => {
            let spec = TargetSpec::from(args.profile.load()?);
            open_controller(&mut rt, &spec, StoreKind::Stamp, stack)?
        }
    };
    let results = rt
        .block_on(run_trace(&ctrl, &commands))
        .map_err(|e| CliError::Input(format!("{}: {e}", args.trace.display())))?;
    let mut failures = 0;
    for r in &results {
        if !r.status.is_success() {
            failures += 1;
        }
        if args.json {
            outln!("{}", output::trace_result_json(r));
        } else {
            out!("{}", output::trace_result_text(r));
        }
    }
    if !args.json {
        outln!(
            "{} commands, {} failed, virtual time {} ns",
            results.len(),
            failures,
            rt.now_ns()
        );
    }
    if args.fail_on_error && failures > 0 {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn probe(args: ProbeArgs) -> Result<ExitCode, CliError> {
    let profile = args.profile.load()?;
    let report = zns_device::probe::run_probe(&profile).map_err(CliError::from)?;
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| CliError::Io(e.to_string()))?
        );
    } else {
        out!("{}", output::probe_text(&report));
    }
    Ok(ExitCode::SUCCESS)
}
