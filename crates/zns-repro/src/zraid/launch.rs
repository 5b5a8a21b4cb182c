//! Where the ZRAID paper's application figures run (`zns repro zraid --fig
//! 9,10,dbcheck`): on a Linux host with ublk (root) here, elsewhere in the
//! ublk guest (zns-apps' `guest`) with the output directory shared in,
//! running `zns repro zraid --where here` there; either way the figures
//! and the summary are drawn on this side.

use std::path::{Path, PathBuf};

use zns_apps::guest::{self, Where, GUEST_SPEED};
use zns_apps::AppError;

use super::apps::{self as zraid, AppFig, AppPoint, ZraidAppOptions};
use super::dbcheck::{self, DbCheckOptions};
use crate::experiments;

/// The application options of `zns repro zraid`.
#[derive(Debug, Clone)]
pub struct AppFigOptions {
    pub figs: Vec<AppFig>,
    pub quick: bool,
    pub reps: u32,
    /// The served devices' speed factor (default: 1 here, [`GUEST_SPEED`]
    /// in the guest).
    pub speed: Option<f64>,
    pub member: String,
    pub member_zones: u32,
    pub place: Where,
    pub out: PathBuf,
    /// Draw the PNGs (the guest has no fonts: its host draws them).
    pub plots: bool,
    /// Run the method check against the drive's measured db_bench
    /// (`--fig dbcheck`, [`dbcheck`]).
    pub dbcheck: bool,
    /// Keep the runs an interrupted series finished (`--resume`).
    pub resume: bool,
    /// The guest harness's directory (`--guest-harness`; zns-apps'
    /// `guest::harness_dir` says the default).
    pub guest_harness: Option<PathBuf>,
}

/// The `zns` binary that serves the devices (this one).
pub fn this_zns() -> Result<PathBuf, AppError> {
    std::env::current_exe().map_err(|e| AppError::Io(format!("cannot find the zns binary: {e}")))
}

/// Runs the application figures; their summary table (Markdown).
/// `progress` gets a line per step.
pub fn run_app_figs(a: &AppFigOptions, progress: &mut dyn FnMut(&str)) -> Result<String, AppError> {
    if a.place.is_here() {
        run_here(a, progress)
    } else {
        run_in_guest(a)
    }
}

fn app_options(a: &AppFigOptions, speed: f64, out_dir: PathBuf, zns: PathBuf) -> ZraidAppOptions {
    ZraidAppOptions {
        figs: a.figs.clone(),
        quick: a.quick,
        reps: a.reps,
        speed,
        member: a.member.clone(),
        member_zones: a.member_zones,
        meta: String::new(),
        out_dir,
        zns,
        resume: a.resume,
    }
}

fn run_here(a: &AppFigOptions, progress: &mut dyn FnMut(&str)) -> Result<String, AppError> {
    let mut opts = app_options(a, a.speed.unwrap_or(1.0), a.out.clone(), this_zns()?);
    opts.meta = "zn540-cns".into();
    std::fs::create_dir_all(&a.out)
        .map_err(|e| AppError::Io(format!("--out {}: {e}", a.out.display())))?;
    // the speed check is the figures'; the check against the drive
    // (alone) is its own (and at a high --speed the check's writes outgrow
    // the guest's memory)
    let mut text = String::new();
    if !a.figs.is_empty() {
        let cal = zraid::calibrate_speed(&opts, progress)?;
        text = zraid::calibration_markdown(&cal);
    }
    if a.dbcheck {
        let check = DbCheckOptions {
            speed: opts.speed,
            keys: if a.quick { 20_000 } else { 200_000 },
            read_seconds: if a.quick { 10 } else { 60 },
            zones: 64,
            out_dir: a.out.clone(),
            zns: opts.zns.clone(),
            measured_csv: measured_dbbench_csv()?,
        };
        let rows = dbcheck::run(&check, progress)?;
        text += &format!("\n{}", dbcheck::markdown(&rows));
    }
    if !a.figs.is_empty() {
        let points = zraid::run(&opts, progress)?;
        text += "\n";
        text += &outputs(&points, &a.out, a.plots, &format!("--speed {}", opts.speed))?;
    }
    Ok(text)
}

/// The drive's measured db_bench (`data/zn540/nvmeb_rocksdb_dbbench.csv`
/// of the experiment files): the copy in the guest's shared `/out` when
/// there is one, else the built-in one.
fn measured_dbbench_csv() -> Result<String, AppError> {
    let shared = Path::new("/out/nvmeb_rocksdb_dbbench.csv");
    if shared.is_file() {
        return std::fs::read_to_string(shared).map_err(AppError::file(shared));
    }
    experiments::built_in(MEASURED_DBBENCH)
        .map(str::to_string)
        .ok_or_else(|| AppError::Io(format!("experiments/{MEASURED_DBBENCH}: not built in")))
}

/// The drive's db_bench figures among the experiment files.
const MEASURED_DBBENCH: &str = "data/zn540/nvmeb_rocksdb_dbbench.csv";

/// Writes the figures' files; the summary and the file list.
fn outputs(points: &[AppPoint], dir: &Path, plots: bool, how: &str) -> Result<String, AppError> {
    let files = zraid::write_outputs(points, dir, plots)?;
    let mut text = zraid::summary_markdown(&zraid::summary(points));
    text += &format!("\n{} runs ({how}); files:\n", points.len());
    for f in files {
        text += &format!("  {}\n", f.display());
    }
    Ok(text)
}

fn run_in_guest(a: &AppFigOptions) -> Result<String, AppError> {
    let harness = guest::harness_dir(a.guest_harness.as_deref())?;
    let out = guest::out_dir(&a.out)?;
    let mut figs: Vec<&str> = a
        .figs
        .iter()
        .map(|f| match f {
            AppFig::Fig9 => "9",
            AppFig::Fig10 => "10",
        })
        .collect();
    if a.dbcheck {
        figs.push("dbcheck");
        let csv = out.join("nvmeb_rocksdb_dbbench.csv");
        std::fs::write(&csv, measured_dbbench_csv()?)
            .map_err(|e| AppError::Io(format!("the drive's db_bench data: {e}")))?;
    }
    let speed = a.speed.unwrap_or(GUEST_SPEED);
    let member = guest::profile_arg(&a.member, &out, "member")?;
    let mut args = format!(
        "zraid --fig {} --where here --out /out --speed {speed} --reps {} --member {} --member-zones {} --eta always --no-plots",
        figs.join(","),
        a.reps,
        member,
        a.member_zones
    );
    if a.quick {
        args += " --quick";
    }
    if a.resume {
        args += " --resume";
    }
    let _ = std::fs::remove_file(out.join("points.json"));
    let _ = std::fs::remove_file(out.join("calibration.json"));
    let _ = std::fs::remove_file(out.join("dbcheck.json"));
    let runs = zraid::run_count(&app_options(a, speed, out.clone(), PathBuf::new()));
    // (the db_bench check is worth a few runs of time)
    let runs = runs + if a.dbcheck { 5 } else { 0 };
    guest::run_repro(&harness, &args, &out, runs, &[])?;
    // the guest wrote the points; the figures are drawn here
    let mut text = String::new();
    if !a.figs.is_empty() {
        let cal = zraid::read_calibration(&out)?;
        text = zraid::calibration_markdown(&cal);
    }
    if a.dbcheck {
        let rows = dbcheck::read_rows(&out)?;
        text += &format!("\n{}", dbcheck::markdown(&rows));
    }
    if !a.figs.is_empty() {
        let points = zraid::read_points(&out)?;
        text += "\n";
        text += &outputs(
            &points,
            &out,
            a.plots,
            &format!("in the ublk guest under TCG, --speed {speed}"),
        )?;
    }
    Ok(text)
}
