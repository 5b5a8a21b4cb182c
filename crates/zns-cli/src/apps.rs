//! The application figures of `zns repro zraid` (Fig. 9, Fig. 10 and the
//! §6.4 statistics; zns-apps, docs/apps.md): real F2FS, fio and db_bench on
//! arrays served by `zns serve`. On a Linux host with ublk (root) they run
//! here; elsewhere `zns` boots the ublk guest of `scripts/serve-guest-test`
//! with the output directory shared into it (9p) and runs itself there.

use std::path::{Path, PathBuf};

use zns_apps::zraid::{self, AppFig, ZraidAppOptions};

use crate::CliError;

pub const APP_FIGS_HELP: &str = "\
Figures 9 and 10 run real applications on arrays served by `zns serve`
(docs/apps.md): Fig. 9 filebench's FILESERVER (4 KiB .. 1 MiB), OLTP and
VARMAIL as fio personalities on F2FS over RAIZN, RAIZN+ and ZRAID; Fig. 10
db_bench FILLSEQ, FILLRANDOM, OVERWRITE over RAIZN+, Z, Z+S, Z+S+M, ZRAID;
with the arrays' own counters (flash WAF, partial parity, PP-log GC: the
paper's section 6.4). On a Linux host with ublk (root) they run here at
full speed; elsewhere zns boots the ublk guest (QEMU, TCG) from its
checkout and runs there at --speed 0.01. Output: points.csv,
normalized.csv, fig9.png, fig10.png, summary.md (paper vs ours) and every
application's raw report under runs/.

Examples:
  zns repro zraid --fig 9,10 --quick            CI's smoke (guest: ~5 min)
  zns repro zraid --fig 9 --reps 3              the full Fig. 9
  zns repro zraid --fig 9 --reps 3 --resume     go on with one that was cut short
  sudo zns repro zraid --fig 10 --where here    on a host with ublk";

/// Where the application runs happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// Here when this host can serve ublk devices, else the guest.
    Auto,
    Here,
    Guest,
}

impl std::str::FromStr for Where {
    type Err = String;
    fn from_str(s: &str) -> Result<Where, String> {
        match s {
            "auto" => Ok(Where::Auto),
            "here" => Ok(Where::Here),
            "guest" => Ok(Where::Guest),
            _ => Err(format!("{s}: expected auto, here or guest")),
        }
    }
}

/// The application options of `zns repro zraid`.
pub struct AppFigArgs {
    pub figs: Vec<AppFig>,
    pub quick: bool,
    pub reps: u32,
    pub speed: Option<f64>,
    pub member: String,
    pub member_zones: u32,
    pub place: Where,
    pub out: PathBuf,
    pub show_progress: bool,
    /// Draw the PNGs (the guest has no fonts: its host draws them).
    pub plots: bool,
    /// Run the method check against the drive's measured db_bench
    /// (`--fig dbcheck`, zns_apps::dbcheck).
    pub dbcheck: bool,
    /// Keep the runs an interrupted series finished (`--resume`).
    pub resume: bool,
}

/// The speed factor the guest runs at unless told otherwise: slow enough
/// that the emulated devices, not the TCG guest's CPU, bound the
/// applications (docs/apps.md, "The guest in virtual time").
pub const GUEST_SPEED: f64 = 0.01;

/// Host seconds allowed per application run in the guest (its time limit:
/// [`run_repro_in_guest`]).
const GUEST_RUN_HOST_S: usize = 300;

/// Whether this host can serve ublk devices itself (`--where auto`).
pub fn can_serve_here() -> bool {
    // SAFETY: geteuid has no preconditions.
    Path::new("/dev/ublk-control").exists() && unsafe { libc::geteuid() } == 0
}

/// Runs the application figures; their summary table (Markdown).
pub fn run_app_figs(a: &AppFigArgs) -> Result<String, CliError> {
    let here = match a.place {
        Where::Here => true,
        Where::Guest => false,
        Where::Auto => can_serve_here(),
    };
    if here {
        run_here(a)
    } else {
        run_in_guest(a)
    }
}

fn run_here(a: &AppFigArgs) -> Result<String, CliError> {
    let zns = std::env::current_exe()
        .map_err(|e| CliError::Io(format!("cannot find the zns binary: {e}")))?;
    let opts = ZraidAppOptions {
        figs: a.figs.clone(),
        quick: a.quick,
        reps: a.reps,
        speed: a.speed.unwrap_or(1.0),
        member: a.member.clone(),
        member_zones: a.member_zones,
        meta: "zn540-cns".into(),
        out_dir: a.out.clone(),
        zns,
        resume: a.resume,
    };
    let mut progress = crate::progress::lines(a.show_progress);
    std::fs::create_dir_all(&a.out)
        .map_err(|e| CliError::Io(format!("--out {}: {e}", a.out.display())))?;
    // the speed check is the figures'; the check against the drive
    // (alone) is its own (and at a high --speed the check's writes outgrow
    // the guest's memory)
    let mut text = String::new();
    if !a.figs.is_empty() {
        let cal = zraid::calibrate_speed(&opts, &mut progress).map_err(app_err)?;
        text = zraid::calibration_markdown(&cal);
    }
    if a.dbcheck {
        let check = zns_apps::dbcheck::DbCheckOptions {
            speed: opts.speed,
            keys: if a.quick { 20_000 } else { 200_000 },
            read_seconds: if a.quick { 10 } else { 60 },
            zones: 64,
            out_dir: a.out.clone(),
            zns: opts.zns.clone(),
            measured_csv: measured_dbbench_csv(),
        };
        let rows = zns_apps::dbcheck::run(&check, &mut progress).map_err(app_err)?;
        text += &format!("\n{}", zns_apps::dbcheck::markdown(&rows));
    }
    if !a.figs.is_empty() {
        let points = zraid::run(&opts, &mut progress).map_err(app_err)?;
        text += "\n";
        text += &outputs(&points, &a.out, a.plots, &format!("--speed {}", opts.speed))?;
    }
    Ok(text)
}

/// The drive's measured db_bench (experiments/data/zn540, in the checkout
/// zns was built from; the guest gets it in its output directory).
fn measured_dbbench_csv() -> PathBuf {
    let shared = Path::new("/out/nvmeb_rocksdb_dbbench.csv");
    if shared.is_file() {
        return shared.to_path_buf();
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../experiments/data/zn540/nvmeb_rocksdb_dbbench.csv")
}

/// Writes the figures' files; the summary and the file list.
fn outputs(
    points: &[zraid::AppPoint],
    dir: &Path,
    plots: bool,
    how: &str,
) -> Result<String, CliError> {
    let files = zraid::write_outputs(points, dir, plots).map_err(app_err)?;
    let mut text = zraid::summary_markdown(&zraid::summary(points));
    text += &format!("\n{} runs ({how}); files:\n", points.len());
    for f in files {
        text += &format!("  {}\n", f.display());
    }
    Ok(text)
}

/// `scripts/serve-guest-test` of the checkout this binary was built from.
fn guest_harness() -> Result<PathBuf, CliError> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let harness = root.join("scripts/serve-guest-test");
    if harness.is_file() {
        Ok(harness)
    } else {
        Err(CliError::Io(format!(
            "this host cannot serve ublk devices (needs Linux >= 6.6, ublk_drv, root) and the guest needs the znskit checkout zns was built from ({} is missing); run on a Linux host with ublk (--where here)",
            harness.display()
        )))
    }
}

/// `out`, created, as an absolute path (it is shared into the guest).
pub fn guest_out_dir(out: &Path) -> Result<PathBuf, CliError> {
    crate::writable_dir(out, "--out")?;
    out.canonicalize()
        .map_err(|e| CliError::Io(format!("--out {}: {e}", out.display())))
}

/// A profile argument for the guest: a file is copied into the shared
/// output directory as `NAME.toml` and named by its guest path; a built-in
/// name stays as it is.
pub fn guest_profile(profile: &str, out: &Path, name: &str) -> Result<String, CliError> {
    if Path::new(profile).is_file() {
        std::fs::copy(profile, out.join(format!("{name}.toml")))
            .map_err(|e| CliError::Io(format!("{profile}: {e}")))?;
        Ok(format!("/out/{name}.toml"))
    } else {
        Ok(profile.to_string())
    }
}

/// Runs `zns repro REPRO_ARGS` in the ublk guest with `out` (absolute, see
/// [`guest_out_dir`]) shared in as `/out`; `runs` sizes the time limit.
/// The arguments must say `--where here --out /out`.
pub fn run_repro_in_guest(repro_args: &str, out: &Path, runs: usize) -> Result<(), CliError> {
    let harness = guest_harness()?;
    let root = harness
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    std::fs::write(out.join("guest-args"), format!("{repro_args}\n"))
        .map_err(|e| CliError::Io(format!("{}: {e}", out.display())))?;
    // the host time a run takes depends on the host (on the instruction
    // clock a busy guest second costs 7-15 host seconds on a 2-core
    // machine); ZNSKIT_GUEST_TIMEOUT (host seconds) overrides this
    let timeout_s = match std::env::var("ZNSKIT_GUEST_TIMEOUT") {
        Ok(s) => s.trim().parse::<usize>().map_err(|_| {
            CliError::Usage(format!("ZNSKIT_GUEST_TIMEOUT={s}: expected host seconds"))
        })?,
        Err(_) => 600 + runs * GUEST_RUN_HOST_S,
    };
    eprintln!(
        "zns repro: no ublk here: running {runs} application runs in the ublk guest (scripts/serve-guest-test, TCG, {} clock); results in {}",
        std::env::var("ZNSKIT_GUEST_CLOCK").unwrap_or_else(|_| "virtual".into()),
        out.display()
    );
    let status = std::process::Command::new(&harness)
        .arg(root.join("scripts/guest/repro"))
        .current_dir(&root)
        .env("ZNSKIT_GUEST_TESTS", "")
        .env("ZNSKIT_GUEST_TIMEOUT", timeout_s.to_string())
        // in the initramfs at /out, back through 9p after the last run
        .env("ZNSKIT_GUEST_SHARE", out)
        .status()
        .map_err(|e| CliError::Io(format!("{}: {e}", harness.display())))?;
    if !status.success() {
        let dir = std::env::var("ZNSKIT_GUEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| root.join("target/guest-serve"));
        return Err(CliError::Io(format!(
            "the guest run failed ({status}); its console log is {}",
            dir.join("console.log").display()
        )));
    }
    Ok(())
}

fn run_in_guest(a: &AppFigArgs) -> Result<String, CliError> {
    let out = guest_out_dir(&a.out)?;
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
        std::fs::copy(
            measured_dbbench_csv(),
            out.join("nvmeb_rocksdb_dbbench.csv"),
        )
        .map_err(|e| CliError::Io(format!("the drive's db_bench data: {e}")))?;
    }
    let speed = a.speed.unwrap_or(GUEST_SPEED);
    let member = guest_profile(&a.member, &out, "member")?;
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
    let runs = zraid::run_count(&ZraidAppOptions {
        figs: a.figs.clone(),
        quick: a.quick,
        reps: a.reps,
        speed,
        member: a.member.clone(),
        member_zones: a.member_zones,
        meta: String::new(),
        out_dir: out.clone(),
        zns: PathBuf::new(),
        resume: a.resume,
    });
    // (the db_bench check is worth a few runs of time)
    let runs = runs + if a.dbcheck { 5 } else { 0 };
    run_repro_in_guest(&args, &out, runs)?;
    // the guest wrote the points; the figures are drawn here
    let mut text = String::new();
    if !a.figs.is_empty() {
        let cal = zraid::read_calibration(&out).map_err(app_err)?;
        text = zraid::calibration_markdown(&cal);
    }
    if a.dbcheck {
        let rows = zns_apps::dbcheck::read_rows(&out).map_err(app_err)?;
        text += &format!("\n{}", zns_apps::dbcheck::markdown(&rows));
    }
    if !a.figs.is_empty() {
        let points = zraid::read_points(&out).map_err(app_err)?;
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

/// An application experiment's error: an I/O-class failure (exit code as
/// docs/cli.md says for `repro`), its message kept whole.
pub(crate) fn app_err(e: zns_apps::AppError) -> CliError {
    CliError::Io(e.to_string())
}
