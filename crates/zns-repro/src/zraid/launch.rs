//! Where the ZRAID paper's application figures run (`zns repro zraid --fig
//! 9,10,dbcheck`): on a Linux host with ublk (root) here, elsewhere in the
//! ublk guest (zns-apps' `guest`) with the output directory shared in,
//! running `zns repro zraid --where here` there; either way the figures
//! and the summary are drawn on this side.

use std::path::{Path, PathBuf};

use zns_apps::guest::{self, Where};
use zns_apps::programs::{Programs, DB_BENCH_FLAG, FILEBENCH_FLAG, GUEST_PROGRAMS_ENV};
use zns_apps::AppError;

use super::apps::{self as zraid, AppFig, AppPoint, FigSpeeds, ZraidAppOptions};
use super::dbcheck::{self, DbCheckOptions};
use crate::experiments;

/// The application options of `zns repro zraid`.
#[derive(Debug, Clone)]
pub struct AppFigOptions {
    pub figs: Vec<AppFig>,
    pub quick: bool,
    pub reps: u32,
    /// The served devices' speed factor for every run (default: 1 here,
    /// F = c / k of each experiment in the guest: [`speed_of`]).
    pub speed: Option<f64>,
    /// The speeds default to the guest's (F = c / k) even here: set in the
    /// guest, whose `zns repro` runs `--where here` (`--guest-speeds`).
    pub guest_speeds: bool,
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
    /// The user's filebench and db_bench with ZenFS (`--filebench`,
    /// `--db-bench`): Fig. 9 and Fig. 10 run them instead of the stand-ins.
    pub programs: Programs,
}

/// The `zns` binary that serves the devices (this one).
pub fn this_zns() -> Result<PathBuf, AppError> {
    std::env::current_exe().map_err(|e| AppError::Io(format!("cannot find the zns binary: {e}")))
}

/// Runs the application figures; their summary table (Markdown).
/// `progress` gets a line per step.
pub fn run_app_figs(a: &AppFigOptions, progress: &mut dyn FnMut(&str)) -> Result<String, AppError> {
    let mut a = a.clone();
    a.programs = checked_programs(&a)?;
    if a.place.is_here() {
        run_here(&a, progress)
    } else {
        run_in_guest(&a)
    }
}

/// The user's programs, checked (executable files; ZenFS's utility beside
/// db_bench) and only for a figure that runs them: a clear error before
/// anything runs.
fn checked_programs(a: &AppFigOptions) -> Result<Programs, AppError> {
    let given = [
        (
            FILEBENCH_FLAG,
            a.programs.filebench.is_some(),
            AppFig::Fig9,
            9,
        ),
        (
            DB_BENCH_FLAG,
            a.programs.db_bench.is_some(),
            AppFig::Fig10,
            10,
        ),
    ];
    for (flag, given, fig, n) in given {
        if given && !a.figs.contains(&fig) {
            return Err(AppError::Invalid(format!(
                "{flag} runs Fig. {n}'s workloads, and --fig has no {n}"
            )));
        }
    }
    a.programs.clone().checked()
}

/// The speed factor of an experiment whose workload kept `cores` (k) cores
/// of the paper's machine busy: `--speed` when given, else F = c / k in the
/// guest (zns-apps' `guest::guest_speed`) and 1 on a host with ublk (its
/// CPU is a real machine's).
fn speed_of(a: &AppFigOptions, cores: f64) -> f64 {
    match a.speed {
        Some(s) => s,
        None if a.guest_speeds || !a.place.is_here() => guest::guest_speed(cores),
        None => 1.0,
    }
}

/// The speed of each figure's runs ([`speed_of`] its k).
fn fig_speeds(a: &AppFigOptions) -> FigSpeeds {
    FigSpeeds {
        fig9: speed_of(a, zraid::fig_cores(AppFig::Fig9)),
        fig10: speed_of(a, zraid::fig_cores(AppFig::Fig10)),
    }
}

fn app_options(a: &AppFigOptions, out_dir: PathBuf, zns: PathBuf) -> ZraidAppOptions {
    ZraidAppOptions {
        figs: a.figs.clone(),
        quick: a.quick,
        reps: a.reps,
        speeds: fig_speeds(a),
        member: a.member.clone(),
        member_zones: a.member_zones,
        meta: String::new(),
        out_dir,
        zns,
        resume: a.resume,
        programs: a.programs.clone(),
    }
}

fn run_here(a: &AppFigOptions, progress: &mut dyn FnMut(&str)) -> Result<String, AppError> {
    let mut opts = app_options(a, a.out.clone(), this_zns()?);
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
            fill_speed: speed_of(a, dbcheck::FILL_CORES),
            read_speed: speed_of(a, dbcheck::READ_CORES),
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
        let how = opts.speeds.describe(&opts.figs);
        text += &outputs(&points, &a.out, a.plots, &how)?;
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
    let member = guest::profile_arg(&a.member, &out, "member")?;
    let mut args = format!(
        "zraid --fig {} --where here --out /out --reps {} --member {} --member-zones {} --eta always --no-plots",
        figs.join(","),
        a.reps,
        member,
        a.member_zones
    );
    // (each experiment's own F = c / k unless --speed says one for all)
    args += &match a.speed {
        Some(s) => format!(" --speed {s}"),
        None => " --guest-speeds".into(),
    };
    if a.quick {
        args += " --quick";
    }
    if a.resume {
        args += " --resume";
    }
    // the user's programs, packed into the initramfs with their libraries
    let (in_guest, pack) = a.programs.for_guest()?;
    if let Some(p) = &in_guest.filebench {
        args += &format!(" {FILEBENCH_FLAG} {}", p.display());
    }
    if let Some(p) = &in_guest.db_bench {
        args += &format!(" {DB_BENCH_FLAG} {}", p.display());
    }
    let _ = std::fs::remove_file(out.join("points.json"));
    let _ = std::fs::remove_file(out.join("calibration.json"));
    let _ = std::fs::remove_file(out.join("dbcheck.json"));
    let opts = app_options(a, out.clone(), PathBuf::new());
    let runs = zraid::run_count(&opts);
    // (the db_bench check is worth a few runs of time)
    let runs = runs + if a.dbcheck { 5 } else { 0 };
    let mut env = guest::guest_mem_env(a.quick);
    env.push((GUEST_PROGRAMS_ENV, pack.as_str()));
    guest::run_repro(&harness, &args, &out, runs, &env)?;
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
            &format!(
                "in the ublk guest under TCG, {}",
                opts.speeds.describe(&opts.figs)
            ),
        )?;
    }
    Ok(text)
}
