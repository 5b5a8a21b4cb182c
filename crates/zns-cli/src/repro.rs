//! `zns repro` and `zns fidelity`: the paper reproductions (zns-repro):
//! ZNCache's experiments (`zns repro zncache`), the ZRAID paper's emulated
//! and application figures (`zns repro zraid`), the ZNS integration study
//! (`zns repro zns-study`) and the fidelity suite (`zns fidelity`; every
//! published ZN540 figure measured through the ordinary `zns bench` path,
//! docs/fidelity.md). Thin wrappers: flags in, zns-repro's results out.
//! The application runs happen here on a Linux host with ublk (root), else
//! in the ublk guest (zns-apps' `guest`, docs/apps.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use zns_apps::guest::Where;
use zns_apps::programs::Programs;
use zns_apps::AppError;
use zns_repro::experiments::Experiments;
use zns_repro::fidelity::{self, FidelityError, FidelityOptions};
use zns_repro::study::launch::{run_study, StudyLaunch};
use zns_repro::study::Part;
use zns_repro::zncache::{self, ReproOptions as ZncacheOptions, Scale};
use zns_repro::zraid::apps::AppFig;
use zns_repro::zraid::emulated::{self, Fig, ReproOptions};
use zns_repro::zraid::launch::{run_app_figs, AppFigOptions};

use crate::cache::cache_err;
use crate::progress::Eta;
use crate::CliError;

pub const REPRO_ZNCACHE_HELP: &str = "\
Examples:
  zns repro zncache --quick                     every experiment, tiny (about a minute)
  zns repro zncache --exp b,d --out figs/       (b) and (d) at the documented scale: CSV, PNG, summary
  zns repro zncache --exp c --json              the GC experiment's results as JSON

Exit codes: 0 ok; 1 a run failed; 2 wrong arguments; 4 --out cannot be
written (checked before anything runs).";

/// The guest's speeds as the help states them: c and each experiment's
/// F = c / k, from the constants that define them (docs/apps.md, "The
/// defaults: F = c / k for each experiment").
fn guest_speeds_text() -> String {
    use zns_repro::zraid::{apps, dbcheck};
    let f = zns_apps::guest::guest_speed;
    format!(
        "the guest's CPU is c = {c} of one core of the paper's machine, and
each experiment gets --speed F = c / k, k the cores its workload kept busy
there (Fig. 9: k = {fig9_k}, F = {fig9}; Fig. 10: k = {fig10_k}, F = {fig10};
dbcheck: the fills k = {fill_k}, F = {fill}, readrandom k = {read_k},
F = {read}; docs/apps.md)",
        c = zns_apps::guest::GUEST_CPU_SPEED,
        fig9_k = apps::FIG9_CORES,
        fig9 = f(apps::FIG9_CORES),
        fig10_k = apps::FIG10_CORES,
        fig10 = f(apps::FIG10_CORES),
        fill_k = dbcheck::FILL_CORES,
        fill = f(dbcheck::FILL_CORES),
        read_k = dbcheck::READ_CORES,
        read = f(dbcheck::READ_CORES),
    )
}

/// `zns repro zraid --help`'s text after the options.
fn app_figs_help() -> String {
    format!(
        "\
Figures 9 and 10 run real applications on arrays served by `zns serve`
(docs/apps.md): Fig. 9 filebench's FILESERVER (4 KiB .. 1 MiB), OLTP and
VARMAIL as fio personalities on F2FS over RAIZN, RAIZN+ and ZRAID; Fig. 10
db_bench FILLSEQ, FILLRANDOM, OVERWRITE over RAIZN+, Z, Z+S, Z+S+M, ZRAID;
with the arrays' own counters (flash WAF, partial parity, PP-log GC: the
paper's section 6.4). On a Linux host with ublk (root) they run here at
full speed; elsewhere zns boots the ublk guest (QEMU, TCG, one vCPU on the
instruction clock: reruns give the same bytes; ZNSKIT_GUEST_PAD_KIB=N
another guest, for the spread a run is one sample of) from a znskit source
tree (--guest-harness) and runs there with CPU and devices slowed alike:
{speeds}.
Guest memory: 8 GiB for full runs (ZNSKIT_GUEST_MEM). Each run records the guest CPU's busy share and
the block layer's counters; the summary flags CPU-bound rows. Output: points.csv,
normalized.csv, fig9.png, fig10.png, summary.md (paper vs ours), every
application's raw report under runs/; from the guest also guest.json (its
clock, padding, memory) and host-times.csv (the host seconds each run took).

Examples:
  zns repro zraid --fig 9,10 --quick            the smoke (CI: --fig 9, twice, diffed)
  zns repro zraid --fig 9 --reps 1              the full Fig. 9 (deterministic in the guest: one repetition)
  zns repro zraid --fig 9 --reps 1 --resume     go on with one that was cut short
  zns repro zraid --fig dbcheck                 db_bench against the drive: fills at c, reads at c / {read_k}
  zns repro zraid --fig 9 --filebench PATH      filebench's own personalities instead of the fio stand-ins
  sudo zns repro zraid --fig 10 --where here    on a host with ublk",
        speeds = guest_speeds_text(),
        read_k = zns_repro::zraid::dbcheck::READ_CORES,
    )
}

/// `zns repro zns-study --help`'s text after the options.
fn study_help() -> String {
    use zns_repro::study::launch::STUDY_CORES;
    format!(
        "\
Runs real applications on drives served by `zns serve` (docs/zns-study.md):
  levels   db_bench fillseq, fillrandom, readrandom, readseq, overwrite,
           updaterandom (16 B keys, 100 B values, direct I/O) on the study's
           integration levels: (a) F2FS on a block SSD (sn540, device GC),
           (c) F2FS zoned with metadata on zn540-cns's conventional
           namespace, (d) btrfs zoned (for ZenFS, which no registry has);
  tenants  two zoned namespaces of one drive: A F2FS with random
           overwrites (fio), B db_bench fillrandom + overwrite on btrfs
           zoned; B alone vs B with A, at low utilization (the study's) and
           after filling both file systems (WD's > 80 % capacity, > 30 %
           bandwidth: measured and reported).
On a Linux host with ublk (root) it runs here at full speed; elsewhere zns
boots the ublk guest (QEMU, TCG, instruction clock) from a znskit source tree
(--guest-harness) and runs there at --speed F = c / k = {c} / {k} = {f}
(docs/apps.md, One dilation for CPU and device), in 8 GiB of guest memory.
Output: points.json, levels.csv, tenants.csv, summary.md/.json (the
study's findings beside ours), levels.png, tenants.png, runs/ (raw
reports, the servers' --stats); from the guest also guest.json and
host-times.csv (the host seconds each run took).

Examples:
  zns repro zns-study --quick              the smoke (guest: ~4 min; CI: --part levels)
  zns repro zns-study --reps 1             the study (guest: ~15 min; deterministic: one repetition)
  sudo zns repro zns-study --where here    on a host with ublk",
        c = zns_apps::guest::GUEST_CPU_SPEED,
        k = STUDY_CORES,
        f = zns_apps::guest::guest_speed(STUDY_CORES),
    )
}

#[derive(Subcommand)]
pub enum ReproCommand {
    /// ZNCache (zncache-2025): (a) 512 MiB chunks ZNS vs block, (b) 64 KiB chunks, (c) the GC experiment, (d) ZPLRU vs CLRU.
    #[command(after_help = REPRO_ZNCACHE_HELP)]
    Zncache(ReproZncacheArgs),
    /// ZRAID (zraid-asplos25): Fig. 7 (ZRAID vs RAIZN+ sequential writes), Fig. 8 (ablation at 8 KiB), flash WAF per variant, Fig. 11 (PM1731a); PNG + CSV.
    Zraid(ReproZraidArgs),
    /// ZNS integration study (zns-integration-study-2022): db_bench on F2FS / F2FS zoned / btrfs zoned (integration levels), two tenants on one drive at low and > 80 % utilization; served drives, real applications.
    ZnsStudy(ReproStudyArgs),
}

#[derive(Args)]
pub struct ReproZncacheArgs {
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

#[derive(Args)]
#[command(after_help = app_figs_help())]
pub struct ReproZraidArgs {
    /// Figures, comma-separated: 7, 8, waf, 11 (emulated in virtual time);
    /// 9, 10 (applications on served arrays: F2FS, fio, db_bench); dbcheck
    /// (the method check: db_bench on a served ZN540 against the drive's).
    #[arg(long, default_value = "7,8,waf,11")]
    fig: String,
    /// Output directory for the CSV and PNG files.
    #[arg(long, default_value = "repro-zraid")]
    out: std::path::PathBuf,
    /// Figs. 9 and 10 only: fewer points and shorter runs (CI's smoke).
    /// The emulated figures (7, 8, waf, 11) have no shorter mode: the full
    /// run takes about a minute, and a shorter one changed their conclusions.
    #[arg(long)]
    quick: bool,
    /// Seed of every run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the points and the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Progress on stderr: auto (only on a terminal), always, never.
    #[arg(long, value_enum, default_value_t = Eta::Auto)]
    eta: Eta,
    /// Figs. 9 and 10: where the applications run: here (a Linux host with
    /// ublk, as root), guest (the ublk guest under QEMU), auto.
    #[arg(long = "where", default_value = "auto", value_name = "PLACE")]
    place: Where,
    /// Figs. 9, 10 and dbcheck: the served devices' speed factor for every
    /// run (default 1 here; in the guest each experiment's F = c / k, as
    /// below).
    #[arg(long, value_name = "F")]
    speed: Option<f64>,
    /// The guest's default speeds (F = c / k) with --where here: what the
    /// ublk guest's own `zns repro` gets from the host that started it.
    #[arg(long, hide = true)]
    guest_speeds: bool,
    /// Figs. 9 and 10: repetitions of every point (--quick: 1).
    #[arg(long, default_value_t = 3)]
    reps: u32,
    /// Figs. 9 and 10: the members' profile.
    #[arg(long, default_value = "zn540")]
    member: String,
    /// Figs. 9 and 10: zones per member (F2FS needs many sections; only
    /// written data costs memory).
    #[arg(long, default_value_t = 64)]
    member_zones: u32,
    /// Figs. 9 and 10: write the data files only, no PNGs (the guest has no
    /// fonts; the host that started it draws them).
    #[arg(long, hide = true)]
    no_plots: bool,
    /// Figs. 9 and 10: keep the runs an interrupted series with the same
    /// options finished in --out (their reports and server stats in
    /// runs/) and run only the missing ones: a long series may span several
    /// sittings.
    #[arg(long)]
    resume: bool,
    /// Figs. 9 and 10 in the guest: a znskit source tree whose
    /// scripts/serve-guest-test boots the guest and builds its zns
    /// (default: $ZNSKIT_GUEST_HARNESS, else the tree that holds this zns
    /// binary, else PREFIX/share/znskit beside PREFIX/bin/zns).
    #[arg(long, value_name = "DIR")]
    guest_harness: Option<std::path::PathBuf>,
    /// Fig. 9: run filebench's own personalities with this filebench
    /// (1.5-alpha3 with 4 KiB-aligned direct-I/O buffers; docs/apps.md,
    /// "The papers' own programs"; run under setarch -R) instead of the fio
    /// stand-ins. In the guest it is packed in with its libraries.
    #[arg(long, value_name = "PATH")]
    filebench: Option<std::path::PathBuf>,
    /// Fig. 10: run this db_bench, built with the ZenFS plugin (ZenFS's
    /// `zenfs` utility beside it), on ZenFS on the array (mq-deadline, at
    /// least 32 zones) instead of db_bench on F2FS.
    #[arg(long, value_name = "PATH")]
    db_bench: Option<std::path::PathBuf>,
    /// RAID options for every array of figs. 7, 8, waf and 11, e.g.
    /// `worker_ns=30000,worker_copy_ps=100,worker_xor_ps=70` (docs/raid.md)
    #[arg(long)]
    raid_options: Option<String>,
}

fn repro_zraid_cmd(a: ReproZraidArgs) -> Result<ExitCode, CliError> {
    crate::writable_dir(&a.out, "--out")?;
    say_on_stop("zraid", Some(&a.out));
    let mut figs = Vec::new();
    let mut app_figs = Vec::new();
    let mut dbcheck = false;
    for f in a.fig.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match f {
            "9" => app_figs.push(AppFig::Fig9),
            "10" => app_figs.push(AppFig::Fig10),
            "dbcheck" => dbcheck = true,
            f => figs.push(
                f.parse::<Fig>()
                    .map_err(|e| CliError::Usage(format!("--fig: {e}")))?,
            ),
        }
    }
    if a.quick && !figs.is_empty() {
        return Err(CliError::Usage(
            "--quick applies to figs. 9 and 10 only: figs. 7, 8, waf and 11 run in full (about a minute)"
                .into(),
        ));
    }
    if let Some(s) = a.speed {
        if !(s.is_finite() && s > 0.0 && s <= 1.0) {
            return Err(CliError::Usage(format!("--speed {s}: must be in (0, 1]")));
        }
    }
    if a.reps == 0 || a.member_zones == 0 {
        return Err(CliError::Usage(
            "--reps and --member-zones must be at least 1".into(),
        ));
    }
    if !app_figs.is_empty() || dbcheck {
        let opts = AppFigOptions {
            figs: app_figs,
            quick: a.quick,
            reps: a.reps,
            speed: a.speed,
            guest_speeds: a.guest_speeds,
            member: a.member.clone(),
            member_zones: a.member_zones,
            place: a.place,
            out: a.out.clone(),
            plots: !a.no_plots,
            dbcheck,
            resume: a.resume,
            guest_harness: a.guest_harness.clone(),
            programs: Programs {
                filebench: a.filebench.clone(),
                db_bench: a.db_bench.clone(),
            },
        };
        let mut progress = crate::progress::lines(a.eta != Eta::Never);
        let text = run_app_figs(&opts, &mut progress).map_err(app_err)?;
        out!("{text}");
        if figs.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let opts = ReproOptions::new(figs, a.seed, a.out.clone(), a.raid_options.as_deref());
    let eta = a.eta;
    let show = eta.shown();
    let report = emulated::run(&opts, &mut |line| {
        if show {
            eprintln!("{line}");
        }
    })
    .map_err(|e| CliError::Input(e.to_string()))?;
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| CliError::Io(e.to_string()))?
        );
    } else {
        out!("{}", emulated::summary_text(&report));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
#[command(after_help = study_help())]
pub struct ReproStudyArgs {
    /// Small databases and drives, one repetition (CI's smoke).
    #[arg(long)]
    quick: bool,
    /// Output directory.
    #[arg(long, default_value = "repro-zns-study")]
    out: PathBuf,
    /// Where the applications run: here (a Linux host with ublk, as root),
    /// guest (the ublk guest under QEMU), auto.
    #[arg(long = "where", default_value = "auto", value_name = "PLACE")]
    place: Where,
    /// The served drives' speed factor (default 1 here, F = c / k in the
    /// guest, as below).
    #[arg(long, value_name = "F")]
    speed: Option<f64>,
    /// Repetitions of every run (--quick: 1).
    #[arg(long, default_value_t = 3)]
    reps: u32,
    /// Experiments, comma-separated: levels, tenants.
    #[arg(long, default_value = "levels,tenants")]
    part: String,
    /// Progress on stderr: auto (only on a terminal), always, never.
    #[arg(long, value_enum, default_value_t = Eta::Auto)]
    eta: Eta,
    /// In the guest: a znskit source tree whose scripts/serve-guest-test
    /// boots the guest and builds its zns (default: $ZNSKIT_GUEST_HARNESS,
    /// else the tree that holds this zns binary, else PREFIX/share/znskit
    /// beside PREFIX/bin/zns).
    #[arg(long, value_name = "DIR")]
    guest_harness: Option<PathBuf>,
    /// Write the data files only, no PNGs (the guest has no fonts; the host
    /// that started it draws them).
    #[arg(long, hide = true)]
    no_plots: bool,
}

/// A repro's message on a stop signal: its figures are written as each
/// finishes, so the files in `out` are the finished ones.
fn say_on_stop(what: &str, out: Option<&std::path::Path>) {
    crate::interrupt::watch_and_say(format!(
        "zns repro {what}: interrupted: {}; the same command runs it again",
        match out {
            Some(dir) => format!("the files in {} are those of the parts that finished (a figure's CSV and PNG are written when it finishes)", dir.display()),
            None => "nothing was written (no --out)".to_string(),
        }
    ));
}

/// `zns repro …`.
pub fn repro_cmd(cmd: ReproCommand) -> Result<ExitCode, CliError> {
    match cmd {
        ReproCommand::Zncache(a) => repro_zncache_cmd(a),
        ReproCommand::Zraid(a) => repro_zraid_cmd(a),
        ReproCommand::ZnsStudy(a) => repro_study_cmd(a),
    }
}

fn repro_zncache_cmd(a: ReproZncacheArgs) -> Result<ExitCode, CliError> {
    if let Some(dir) = &a.out {
        crate::writable_dir(dir, "--out")?;
    }
    say_on_stop("zncache", a.out.as_deref());
    let load =
        |name: &str| zns_device::Profile::load(name).map_err(|e| CliError::Input(e.to_string()));
    let mut opts = ZncacheOptions::new().map_err(cache_err)?;
    opts.zns_profile = load(&a.zns_device)?;
    opts.block_profile = load(&a.block_device)?;
    opts.block_nsid = a.block_nsid;
    let has_gc = a.block_has_gc || zncache::has_device_gc(&opts.block_profile, a.block_nsid);
    opts.block_label = zncache::block_label(&a.block_device, a.block_nsid, has_gc);
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
    let result = zncache::run_repro(&opts, &mut |label, p| {
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
            out!("{}", zncache::experiment_text(r));
            outln!();
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn repro_study_cmd(a: ReproStudyArgs) -> Result<ExitCode, CliError> {
    let mut parts = Vec::new();
    for p in a.part.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let p: Part = p
            .parse()
            .map_err(|e| CliError::Usage(format!("--part: {e}")))?;
        if !parts.contains(&p) {
            parts.push(p);
        }
    }
    if parts.is_empty() {
        return Err(CliError::Usage(
            "--part: name levels, tenants or both".into(),
        ));
    }
    if let Some(s) = a.speed {
        if !(s.is_finite() && s > 0.0 && s <= 1.0) {
            return Err(CliError::Usage(format!("--speed {s}: must be in (0, 1]")));
        }
    }
    if a.reps == 0 {
        return Err(CliError::Usage("--reps must be at least 1".into()));
    }
    say_on_stop("zns-study", Some(&a.out));
    let launch = StudyLaunch {
        parts,
        quick: a.quick,
        reps: a.reps,
        speed: a.speed,
        out: a.out.clone(),
        place: a.place,
        plots: !a.no_plots,
        guest_harness: a.guest_harness.clone(),
    };
    let mut progress = crate::progress::lines(a.eta.shown());
    let (text, failures) = run_study(&launch, &mut progress).map_err(app_err)?;
    out!("{text}");
    if failures > 0 {
        return Err(CliError::Failed(format!(
            "{failures} run(s) failed (listed in the summary; the others' points are written)"
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// An application experiment's error: an I/O-class failure (exit code as
/// docs/cli.md says for `repro`), its message kept whole; options that do
/// not make a run (a bad `--guest-harness`, `ZNSKIT_GUEST_TIMEOUT`) are
/// usage errors.
fn app_err(e: AppError) -> CliError {
    match e {
        AppError::Invalid(m) => CliError::Usage(m),
        e => CliError::Io(e.to_string()),
    }
}

#[derive(Args)]
pub struct FidelityArgs {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write one PNG and one CSV per curve (emulated vs measured ZN540) into DIR.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Only targets and curves whose id contains SUBSTR (a glob if it has `*`).
    #[arg(long, value_name = "SUBSTR")]
    filter: Option<String>,
    /// Skip the curves (sweeps): only the single-number targets.
    #[arg(long)]
    no_curves: bool,
    /// Directory with fidelity-targets.toml, fidelity.toml, the job files and data/
    /// (default: the copy of the source tree's experiments/ built into zns).
    #[arg(long, value_name = "DIR")]
    experiments: Option<PathBuf>,
    /// Seed of the virtual-time runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Progress bar on stderr: auto (only on a terminal), always, never.
    #[arg(long, value_enum, default_value_t = Eta::Auto)]
    eta: Eta,
}

/// `zns fidelity`.
pub fn fidelity(args: FidelityArgs) -> Result<ExitCode, CliError> {
    let opts = FidelityOptions {
        experiments: args.experiments.map(Experiments::Dir).unwrap_or_default(),
        filter: args.filter,
        plots_dir: args.plots,
        curves: !args.no_curves,
        seed: args.seed,
    };
    let eta = args.eta;
    if let Some(dir) = &opts.plots_dir {
        crate::writable_dir(dir, "--plots")?;
    }
    crate::interrupt::watch_and_say(
        "zns fidelity: interrupted: the suite reports once every target has run, so no verdict was printed; `--filter PATTERN` runs part of it (`--filter zn540.qd1` takes a second)".into(),
    );
    let bar = crate::progress::bar(
        eta,
        1,
        "fidelity [{bar:30}] {pos}/{len} job files {msg} ({elapsed})",
    );
    // Host time is measured here, outside the deterministic library: the
    // interval between two progress calls is one job file's run.
    let started = std::time::Instant::now();
    let mut file_started = started;
    let mut host_per_file: Vec<f64> = Vec::new();
    let result = fidelity::run_fidelity(&opts, &mut |done, total, current| {
        if done > 0 {
            host_per_file.push(file_started.elapsed().as_secs_f64());
        }
        file_started = std::time::Instant::now();
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(current.to_string());
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = result.map_err(|e| match e {
        FidelityError::Read { .. } => CliError::Io(e.to_string()),
        FidelityError::NoMatch(_) => CliError::Usage(format!("fidelity: --filter: {e}")),
        other => CliError::Input(other.to_string()),
    })?;
    let host_seconds = started.elapsed().as_secs_f64();
    if args.json {
        let mut doc = report.to_json();
        doc["host_seconds"] = serde_json::json!(host_seconds);
        for (j, secs) in host_per_file.iter().enumerate() {
            doc["job_files"][j]["host_seconds"] = serde_json::json!(secs);
        }
        outln!(
            "{}",
            serde_json::to_string_pretty(&doc).map_err(|e| CliError::Io(e.to_string()))?
        );
    } else {
        out!("{}", report.to_text());
        outln!("host time {host_seconds:.1} s");
    }
    Ok(if report.all_passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
