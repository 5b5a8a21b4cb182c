//! Where the study runs (`zns repro zns-study`): on a Linux host with ublk
//! (root) here, elsewhere in the ublk guest (zns-apps' `guest`) with the
//! output directory shared in, running `zns repro zns-study --where here`
//! there; either way the figures and the summary are drawn on this side.

use std::path::{Path, PathBuf};

use zns_apps::guest::{self, Where};
use zns_apps::AppError;

use super::report::{figures_markdown, read_points, summary, summary_markdown, write_outputs};
use super::{guest_budget_runs, run, Part, StudyOptions, StudyPoints};
use crate::zraid::launch::this_zns;

/// k of the study (F = c / k in the guest; docs/apps.md, "One dilation for
/// CPU and device"): the cores the study's workloads kept busy on its
/// machine are not published, so k is the one that keeps the guest's CPU
/// from bounding them. At F = c the integration levels compared the
/// instructions of each file system's path on one core and the two tenants
/// shared the one vCPU (B's P99 × 22 with A beside it, the drive's bandwidth
/// 10 % used); the figures' measurements at c / 100 (Fig. 9 OLTP and
/// fileserver: guest CPU 25-53 % busy, device-bound) set the same k here.
pub const STUDY_CORES: f64 = 100.0;

/// How `zns repro zns-study` runs.
#[derive(Debug, Clone)]
pub struct StudyLaunch {
    pub parts: Vec<Part>,
    pub quick: bool,
    pub reps: u32,
    /// The served drives' speed factor (default: 1 here, F = c /
    /// [`STUDY_CORES`] in the guest).
    pub speed: Option<f64>,
    pub out: PathBuf,
    pub place: Where,
    /// Draw the PNGs (the guest has no fonts: its host draws them).
    pub plots: bool,
    /// The guest harness's directory (`--guest-harness`).
    pub guest_harness: Option<PathBuf>,
}

/// Runs the study here or in the guest; the summary text and the number
/// of runs that failed. `progress` gets a line per run (here).
pub fn run_study(
    a: &StudyLaunch,
    progress: &mut dyn FnMut(&str),
) -> Result<(String, usize), AppError> {
    if a.place.is_here() {
        run_here(a, progress)
    } else {
        run_in_guest(a)
    }
}

/// `--speed` when given, else the guest's F = c / k, else 1 (a host with
/// ublk runs at full speed; the guest's own `zns repro` gets the speed its
/// host chose).
fn speed_of(a: &StudyLaunch) -> f64 {
    match a.speed {
        Some(s) => s,
        None if !a.place.is_here() => guest::guest_speed(STUDY_CORES),
        None => 1.0,
    }
}

fn options(a: &StudyLaunch, speed: f64, out_dir: PathBuf, zns: PathBuf) -> StudyOptions {
    StudyOptions {
        parts: a.parts.clone(),
        quick: a.quick,
        reps: a.reps,
        speed,
        out_dir,
        zns,
    }
}

fn run_here(a: &StudyLaunch, progress: &mut dyn FnMut(&str)) -> Result<(String, usize), AppError> {
    let opts = options(a, speed_of(a), a.out.clone(), this_zns()?);
    let points = run(&opts, progress)?;
    let text = outputs(&points, &a.out, a.plots, &format!("--speed {}", opts.speed))?;
    Ok((text, points.failures.len()))
}

/// Writes the study's files; the summary and the file list.
fn outputs(points: &StudyPoints, dir: &Path, plots: bool, how: &str) -> Result<String, AppError> {
    let files = write_outputs(points, dir, plots)?;
    let mut text = summary_markdown(&summary(points));
    text += &figures_markdown(points);
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

fn run_in_guest(a: &StudyLaunch) -> Result<(String, usize), AppError> {
    let harness = guest::harness_dir(a.guest_harness.as_deref())?;
    let out = guest::out_dir(&a.out)?;
    let speed = speed_of(a);
    let part: Vec<&str> = a
        .parts
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
    let opts = options(a, speed, out.clone(), PathBuf::new());
    let env = guest::guest_mem_env(a.quick);
    // (a run that failed fails the guest's part; the points of the others
    // are written all the same)
    let ran = guest::run_repro(&harness, &args, &out, guest_budget_runs(&opts), &env);
    let points = match (read_points(&out), ran) {
        (Ok(p), _) => p,
        (Err(_), Err(e)) => return Err(e),
        (Err(e), Ok(())) => return Err(e),
    };
    // the guest wrote the points; the figures are drawn here
    let text = outputs(
        &points,
        &out,
        a.plots,
        &format!("in the ublk guest under TCG, --speed {speed}"),
    )?;
    Ok((text, points.failures.len()))
}
