//! `zns repro zns-study`: the ZNS integration study (zns-integration-study
//! 2022 §3–§4; zns-apps `study`, docs/zns-study.md) — db_bench on the
//! integration levels of its Fig. 1 and two tenants on one drive, at the
//! study's low utilization and at Western Digital's advice (capacity above
//! 80 %, bandwidth above 30 %). Real F2FS, btrfs, fio and db_bench on drives served by
//! `zns serve`: here on a Linux host with ublk (root), else in the ublk
//! guest (as `zns repro zraid --fig 9,10`, crates/zns-cli/src/apps.rs).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use zns_apps::study::{self, Part, StudyOptions, StudyPoints};

use crate::apps::{guest_out_dir, run_repro_in_guest, Where, GUEST_SPEED};
use crate::progress::Eta;
use crate::CliError;

const STUDY_HELP: &str = "\
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
boots the ublk guest (QEMU, TCG) from its checkout and runs there at --speed
0.01. Output: points.json, levels.csv, tenants.csv, summary.md/.json (the
study's findings beside ours), levels.png, tenants.png, runs/ (raw reports,
the servers' --stats).

Examples:
  zns repro zns-study --quick              CI's smoke (guest: ~4 min)
  zns repro zns-study --reps 3             the study (guest: ~35 min)
  sudo zns repro zns-study --where here    on a host with ublk";

#[derive(Args)]
#[command(after_help = STUDY_HELP)]
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
    /// The served drives' speed factor (default 1 here, 0.01 in the guest).
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
    /// Write the data files only, no PNGs (the guest has no fonts; the host
    /// that started it draws them).
    #[arg(long, hide = true)]
    no_plots: bool,
}

/// Guest memory for a full run unless `ZNSKIT_GUEST_MEM` says otherwise:
/// the served drives keep what is written in memory (the two-tenant drive
/// holds ~1.8 GiB when full).
const FULL_GUEST_MEM: &str = "6G";

pub fn repro_study_cmd(a: ReproStudyArgs) -> Result<ExitCode, CliError> {
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
    let here = match a.place {
        Where::Here => true,
        Where::Guest => false,
        Where::Auto => crate::apps::can_serve_here(),
    };
    crate::cache::say_on_stop("zns-study", Some(&a.out));
    let (text, failures) = if here {
        run_here(&a, parts)?
    } else {
        run_in_guest(&a, parts)?
    };
    out!("{text}");
    if failures > 0 {
        return Err(CliError::Failed(format!(
            "{failures} run(s) failed (listed in the summary; the others' points are written)"
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_here(a: &ReproStudyArgs, parts: Vec<Part>) -> Result<(String, usize), CliError> {
    let zns = std::env::current_exe()
        .map_err(|e| CliError::Io(format!("cannot find the zns binary: {e}")))?;
    let opts = StudyOptions {
        parts,
        quick: a.quick,
        reps: a.reps,
        speed: a.speed.unwrap_or(1.0),
        out_dir: a.out.clone(),
        zns,
    };
    let eta = a.eta;
    let points = study::run(&opts, &mut crate::progress::lines(eta.shown()))
        .map_err(crate::apps::app_err)?;
    let text = outputs(
        &points,
        &a.out,
        !a.no_plots,
        &format!("--speed {}", opts.speed),
    )?;
    Ok((text, points.failures.len()))
}

/// Writes the study's files; the summary and the file list.
fn outputs(points: &StudyPoints, dir: &Path, plots: bool, how: &str) -> Result<String, CliError> {
    let files = study::write_outputs(points, dir, plots).map_err(crate::apps::app_err)?;
    let mut text = study::summary_markdown(&study::summary(points));
    text += &study::figures_markdown(points);
    text += &format!(
        "\n{} level points, {} tenant points ({how}); files:\n",
        points.levels.len(),
        points.tenants.len()
    );
    for f in files {
        text += &format!("  {}\n", f.display());
    }
    Ok(text)
}

fn run_in_guest(a: &ReproStudyArgs, parts: Vec<Part>) -> Result<(String, usize), CliError> {
    let out = guest_out_dir(&a.out)?;
    let speed = a.speed.unwrap_or(GUEST_SPEED);
    let part: Vec<&str> = parts
        .iter()
        .map(|p| match p {
            Part::Levels => "levels",
            Part::Tenants => "tenants",
        })
        .collect();
    let mut args = format!(
        "zns-study --where here --out /out --speed {speed} --reps {} --part {} --eta always --no-plots",
        a.reps,
        part.join(",")
    );
    if a.quick {
        args += " --quick";
    }
    let _ = std::fs::remove_file(out.join("points.json"));
    let opts = StudyOptions {
        parts,
        quick: a.quick,
        reps: a.reps,
        speed,
        out_dir: out.clone(),
        zns: PathBuf::new(),
    };
    if !a.quick && std::env::var_os("ZNSKIT_GUEST_MEM").is_none() {
        // (read by scripts/serve-guest-test, which run_repro_in_guest starts)
        std::env::set_var("ZNSKIT_GUEST_MEM", FULL_GUEST_MEM);
    }
    // (a run that failed fails the guest's part; the points of the others
    // are written all the same)
    let guest = run_repro_in_guest(&args, &out, study::guest_budget_runs(&opts));
    let points = match (study::read_points(&out), guest) {
        (Ok(p), _) => p,
        (Err(_), Err(e)) => return Err(e),
        (Err(e), Ok(())) => return Err(crate::apps::app_err(e)),
    };
    // the guest wrote the points; the figures are drawn here
    let text = outputs(
        &points,
        &out,
        !a.no_plots,
        &format!("in the ublk guest under TCG, --speed {speed}"),
    )?;
    Ok((text, points.failures.len()))
}
