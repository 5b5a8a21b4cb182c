//! zns-apps: real applications on served devices, for the papers'
//! application experiments (docs/apps.md). It runs programs no one here
//! wrote — `zns serve`, `mkfs.f2fs`, `mount`, fio, RocksDB's `db_bench` —
//! on a Linux host with ublk (or inside the ublk guest), and turns their
//! reports and the served devices' counters into numbers.
//!
//! Like zns-serve and the fio engine, this crate sits outside the
//! deterministic layers: it starts processes and its results depend on the
//! host; the emulated devices underneath stay deterministic.
//!
//! - `served`: a `zns serve` process and its devices (stopped on drop);
//! - `mount`: a file system made and mounted on served devices (unmounted
//!   on drop);
//! - `dbbench`: `db_bench` runs and the figures in its report;
//! - `fio`: fio runs (job files with variables, or in the background until
//!   stopped) and their JSON report;
//! - `host`: what the kernel says of a served device (sectors, space,
//!   zones);
//! - `experiment`: one run — serve, F2FS (or ZenFS), a workload, the
//!   counters;
//! - `load`: the CPU's busy share and the block layer's counters around a
//!   run;
//! - `filebench`, `programs`: the papers' own programs where the user has
//!   them (filebench, db_bench with ZenFS);
//! - `outfiles`: an experiment's output files and the repetitions' spread;
//! - `calibrate`: fio through a served device against `zns bench`, the
//!   check that a speed factor leaves the device the bottleneck;
//! - `guest`: the ublk guest under QEMU (`scripts/serve-guest-test`) that
//!   runs them where this host cannot serve ublk devices.
//!
//! The papers' application experiments built from these (the ZRAID
//! paper's Fig. 9 and 10, the ZNS integration study) live in zns-repro.

pub mod calibrate;
pub mod dbbench;
pub mod experiment;
pub mod filebench;
pub mod fio;
pub mod guest;
pub mod host;
pub mod host_times;
pub mod load;
pub mod mount;
pub mod outfiles;
pub mod programs;
pub mod served;

/// Why an application step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// A program could not be started (not installed?).
    #[error("{program}: cannot start: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// A program exited with an error.
    #[error("{program} failed ({status}): {output}")]
    Failed {
        program: String,
        status: String,
        output: String,
    },
    /// A program's report did not say what it should.
    #[error("{program}: {what}")]
    Report { program: String, what: String },
    /// A file or directory that could not be read or written.
    #[error("{0}")]
    Io(String),
    /// Options that do not make a run (or do not match the series a
    /// `--resume` continues).
    #[error("{0}")]
    Invalid(String),
    /// A step of an experiment built on these (a profile it derives, a
    /// figure it draws) that failed, said by its own error.
    #[error("{0}")]
    Step(String),
    /// An error said of the step it stopped (`speed check: …`).
    #[error("{context}: {source}")]
    Context {
        context: String,
        #[source]
        source: Box<AppError>,
    },
}

impl AppError {
    /// This error, said of `context`.
    pub fn context(self, context: impl Into<String>) -> AppError {
        AppError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// For `map_err`: an `Io` error naming `path`.
    pub fn file<E: std::fmt::Display>(path: &std::path::Path) -> impl FnOnce(E) -> AppError + '_ {
        move |e| AppError::Io(format!("{}: {e}", path.display()))
    }
}

/// Runs `program args…`; its stdout, or `AppError::Failed` with the tail of
/// its stderr and stdout.
pub fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<String, AppError> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|source| AppError::Spawn {
        program: program.to_string(),
        source,
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(AppError::Failed {
            program: format!("{program} {}", args.join(" ")),
            status: out.status.to_string(),
            // (stderr last: a long report on stdout must not push the
            // error message out of the tail)
            output: tail(&format!("{stdout}{stderr}"), 2000),
        });
    }
    Ok(stdout)
}

/// The last `max` bytes of `text` (at a character boundary).
fn tail(text: &str, max: usize) -> String {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}
