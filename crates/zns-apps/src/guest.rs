//! The ublk guest: where this host cannot serve ublk devices, a repro's
//! application runs happen in a QEMU guest booted by znskit's guest harness
//! (`scripts/serve-guest-test` running `scripts/guest/repro`; docs/linux.md,
//! "The ublk guest"), with the output directory shared in as `/out`.
//!
//! The harness builds the guest's `zns` from a znskit source tree, so it
//! needs one. Which tree is the *harness directory*: `--guest-harness DIR`,
//! else `$ZNSKIT_GUEST_HARNESS`, else the first of the tree that holds the
//! running `zns` (a checkout's `target/release/zns`) and `PREFIX/share/znskit`
//! beside an installed `PREFIX/bin/zns`. Nothing depends on the tree `zns`
//! was built in.

use std::path::{Path, PathBuf};

use crate::{host_times, outfiles, AppError};

/// Where the application runs happen (`--where`).
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

impl Where {
    /// Whether the runs happen on this host (`Auto`: when it can serve
    /// ublk devices).
    pub fn is_here(self) -> bool {
        match self {
            Where::Here => true,
            Where::Guest => false,
            Where::Auto => can_serve_here(),
        }
    }
}

/// c: the speed of the virtual-time guest's one CPU (10⁹ instructions a
/// guest second) relative to one core of the machine the papers and the
/// ZN540's db_bench ran on — the method's one free parameter (docs/apps.md,
/// "One dilation for CPU and device"). Calibrated on one figure, db_bench
/// fillrandom on F2FS zoned (the drive's CPU-bound row of
/// `experiments/data/zn540/nvmeb_rocksdb_dbbench.csv`, 94 406 ops/s):
/// `zns repro zraid --fig dbcheck --speed 0.1939` in the guest on
/// 2026-11-29 gave 18 313 ops/s, c = 18 313 / 94 406 = 0.1940 (0.1939 and
/// 0.1935 in two earlier runs at other speeds: the row is CPU-bound).
pub const GUEST_CPU_SPEED: f64 = 0.1940;

/// The speed factor F = c / k a workload gets in the guest when it kept
/// `cores` (k) cores of the paper's machine busy: CPU and device slowed by
/// the same factor (docs/apps.md, "One dilation for CPU and device"; each
/// experiment states its k). Rounded to 9 decimals, so that it prints as
/// the number it is (0.00194, not 0.0019399999999999999).
pub fn guest_speed(cores: f64) -> f64 {
    (GUEST_CPU_SPEED / cores * 1e9).round() / 1e9
}

/// The environment variable that sizes the guest's memory
/// (scripts/serve-guest-test; its default is 4 GiB).
pub const GUEST_MEM_ENV: &str = "ZNSKIT_GUEST_MEM";

/// Guest memory for full runs unless `ZNSKIT_GUEST_MEM` says otherwise:
/// the served devices keep what is written in memory (the speed check of
/// the application figures put 3.7 GB into `zns serve`; the study's
/// two-tenant drive holds ~1.8 GiB when full). QEMU touches guest memory
/// only as the guest uses it.
pub const FULL_GUEST_MEM: &str = "8G";

/// The guest's memory setting for a run (`quick` runs keep the harness's
/// default), as environment for [`run_repro`]; none when the user set it.
pub fn guest_mem_env(quick: bool) -> Vec<(&'static str, &'static str)> {
    if quick || std::env::var_os(GUEST_MEM_ENV).is_some() {
        Vec::new()
    } else {
        vec![(GUEST_MEM_ENV, FULL_GUEST_MEM)]
    }
}

/// Whether this host can serve ublk devices itself (`--where auto`).
pub fn can_serve_here() -> bool {
    // SAFETY: geteuid has no preconditions.
    Path::new("/dev/ublk-control").exists() && unsafe { libc::geteuid() } == 0
}

/// `out`, created, as an absolute path (it is shared into the guest).
pub fn out_dir(out: &Path) -> Result<PathBuf, AppError> {
    let fail = |e: std::io::Error| AppError::Io(format!("--out {}: {e}", out.display()));
    std::fs::create_dir_all(out).map_err(fail)?;
    out.canonicalize().map_err(fail)
}

/// A profile argument for the guest: a file is copied into the shared
/// output directory as `NAME.toml` and named by its guest path; a built-in
/// name stays as it is.
pub fn profile_arg(profile: &str, out: &Path, name: &str) -> Result<String, AppError> {
    if Path::new(profile).is_file() {
        std::fs::copy(profile, out.join(format!("{name}.toml")))
            .map_err(|e| AppError::Io(format!("{profile}: {e}")))?;
        Ok(format!("/out/{name}.toml"))
    } else {
        Ok(profile.to_string())
    }
}

/// The flag that names the harness directory (said in errors).
pub const HARNESS_FLAG: &str = "--guest-harness";

/// The environment variable that names it when the flag does not.
pub const HARNESS_ENV: &str = "ZNSKIT_GUEST_HARNESS";

/// The harness script, relative to the harness directory.
const HARNESS_SCRIPT: &str = "scripts/serve-guest-test";

/// The guest script that runs `zns repro` (relative to the directory).
const REPRO_SCRIPT: &str = "scripts/guest/repro";

/// Host seconds allowed per application run in the guest (its time limit;
/// `ZNSKIT_GUEST_TIMEOUT` overrides the total): Fig. 10's runs at its
/// F = c / 1000 took 2-7.5 host minutes each beside another guest on a
/// 2-core host.
const GUEST_RUN_HOST_S: usize = 600;

/// Host seconds the guest gets besides its runs (boot, build, copy-back).
const GUEST_BASE_HOST_S: usize = 600;

/// The directories the harness is looked for in when neither the flag nor
/// the environment names one: the ancestors of the running executable's
/// directory (a checkout's `target/release`), then `../share/znskit`
/// beside it (an installed `bin/zns`).
fn default_candidates() -> Vec<PathBuf> {
    let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = exe_dir.ancestors().map(Path::to_path_buf).collect();
    dirs.push(exe_dir.join("../share/znskit"));
    dirs
}

/// The harness directory: `flag` (`--guest-harness`), else
/// `$ZNSKIT_GUEST_HARNESS`, else the default (the module's header). An
/// error names the flag and where it looked.
pub fn harness_dir(flag: Option<&Path>) -> Result<PathBuf, AppError> {
    let named = flag
        .map(|p| (p.to_path_buf(), HARNESS_FLAG.to_string()))
        .or_else(|| std::env::var_os(HARNESS_ENV).map(|p| (PathBuf::from(p), HARNESS_ENV.into())));
    if let Some((dir, how)) = named {
        return if dir.join(HARNESS_SCRIPT).is_file() {
            Ok(dir)
        } else {
            Err(AppError::Invalid(format!(
                "{how} {}: not a znskit source tree ({HARNESS_SCRIPT} is missing)",
                dir.display()
            )))
        };
    }
    let candidates = default_candidates();
    candidates
        .iter()
        .find(|d| d.join(HARNESS_SCRIPT).is_file())
        .cloned()
        .ok_or_else(|| {
            AppError::Io(format!(
                "this host cannot serve ublk devices (needs Linux >= 6.6, ublk_drv, root) and the ublk guest needs a znskit source tree with {HARNESS_SCRIPT}: none beside the zns binary; name one with {HARNESS_FLAG} DIR (or {HARNESS_ENV}=DIR), or run on a Linux host with ublk (--where here)"
            ))
        })
}

/// Runs `zns repro REPRO_ARGS` in the ublk guest of the harness in `dir`
/// with `out` (absolute, see [`out_dir`]) shared in as `/out`; `runs`
/// sizes the time limit; `env` is more of the harness's environment
/// (`ZNSKIT_GUEST_MEM`, …). The arguments must say `--where here --out
/// /out`.
pub fn run_repro(
    dir: &Path,
    repro_args: &str,
    out: &Path,
    runs: usize,
    env: &[(&str, &str)],
) -> Result<(), AppError> {
    let harness = dir.join(HARNESS_SCRIPT);
    std::fs::write(out.join("guest-args"), format!("{repro_args}\n"))
        .map_err(AppError::file(out))?;
    // the host time a run takes depends on the host (on the instruction
    // clock a busy guest second costs 7-15 host seconds on a 2-core
    // machine); ZNSKIT_GUEST_TIMEOUT (host seconds) overrides this
    let timeout_s = match std::env::var("ZNSKIT_GUEST_TIMEOUT") {
        Ok(s) => s.trim().parse::<usize>().map_err(|_| {
            AppError::Invalid(format!("ZNSKIT_GUEST_TIMEOUT={s}: expected host seconds"))
        })?,
        Err(_) => GUEST_BASE_HOST_S + runs * GUEST_RUN_HOST_S,
    };
    let setup = GuestSetup::of(env);
    eprintln!(
        "zns repro: no ublk here: running {runs} application runs in the ublk guest (scripts/serve-guest-test, TCG, {} clock); results in {}",
        setup.clock,
        out.display()
    );
    let status = std::process::Command::new(&harness)
        .arg(dir.join(REPRO_SCRIPT))
        .current_dir(dir)
        .env("ZNSKIT_GUEST_TESTS", "")
        .env("ZNSKIT_GUEST_TIMEOUT", timeout_s.to_string())
        // in the initramfs at /out, back through 9p after the last run
        .env("ZNSKIT_GUEST_SHARE", out)
        .envs(env.iter().copied())
        .status()
        .map_err(AppError::file(&harness))?;
    let console = std::env::var("ZNSKIT_GUEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| dir.join("target/guest-serve"))
        .join("console.log");
    if !status.success() {
        return Err(AppError::Io(format!(
            "the guest run failed ({status}); its console log is {}",
            console.display()
        )));
    }
    setup.write(out)?;
    if let Some((n, host_s)) = host_times::write_csv(&console.with_extension("log.times"), out)? {
        eprintln!(
            "zns repro: {n} runs took {host_s:.0} s of host time in the guest (each: {})",
            out.join("host-times.csv").display()
        );
    }
    Ok(())
}

/// The guest a run had, as the harness's environment chose it: written
/// to `OUT/guest.json` after the run, not before (`/out` is in the
/// initramfs, and a byte more there is another guest).
#[derive(Debug, serde::Serialize)]
struct GuestSetup {
    /// `ZNSKIT_GUEST_CLOCK`: virtual (the instruction clock) or wall.
    clock: String,
    /// `ZNSKIT_GUEST_PAD_KIB`: KiB of padding in the initramfs (another
    /// guest for the same experiment; 0: none).
    pad_kib: String,
    /// `ZNSKIT_GUEST_MEM`: the guest's memory (the harness's default when
    /// empty).
    mem: String,
    /// `ZNSKIT_GUEST_QEMU_ARGS`: more QEMU arguments.
    qemu_args: String,
}

impl GuestSetup {
    fn of(env: &[(&str, &str)]) -> GuestSetup {
        let get = |name: &str, default: &str| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
                .or_else(|| std::env::var(name).ok())
                .unwrap_or_else(|| default.to_string())
        };
        GuestSetup {
            clock: get("ZNSKIT_GUEST_CLOCK", "virtual"),
            pad_kib: get("ZNSKIT_GUEST_PAD_KIB", "0"),
            mem: get(GUEST_MEM_ENV, ""),
            qemu_args: get("ZNSKIT_GUEST_QEMU_ARGS", ""),
        }
    }

    fn write(&self, out: &Path) -> Result<(), AppError> {
        outfiles::write_json(out, "guest.json", self).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::{harness_dir, HARNESS_FLAG};
    use crate::AppError;

    #[test]
    fn a_named_directory_without_the_harness_is_refused_by_its_flag() {
        let dir = tempfile::tempdir().unwrap();
        let err = harness_dir(Some(dir.path())).unwrap_err();
        assert!(matches!(err, AppError::Invalid(_)), "{err}");
        assert!(err.to_string().starts_with(HARNESS_FLAG), "{err}");
    }

    #[test]
    fn a_directory_with_the_harness_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
        std::fs::write(dir.path().join("scripts/serve-guest-test"), "").unwrap();
        assert_eq!(harness_dir(Some(dir.path())).unwrap(), dir.path());
    }
}
