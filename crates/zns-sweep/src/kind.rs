//! What a sweep's points run: [`RunKind`], the `run = "…"` key of a sweep
//! file. Its own module because both the sweep file (`spec`) and a point
//! (`point`) name it, and `spec` builds points: with it here neither of the
//! two imports the other back.

use serde::{Deserialize, Serialize};

/// What a sweep's points run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunKind {
    /// A ZRAID crash-test campaign (`zns raid crashtest`, one policy a point).
    Crashtest,
    /// A fio job file in virtual time (`zns bench`).
    Bench,
    /// A ZNCache run (`zns cache run`).
    Cache,
    /// The ZRAID paper's emulated figures (`zns repro zraid`).
    ReproZraid,
}

impl RunKind {
    pub const NAMES: [&'static str; 4] = ["crashtest", "bench", "cache", "repro-zraid"];

    pub fn parse(s: &str) -> Result<RunKind, String> {
        match s {
            "crashtest" => Ok(RunKind::Crashtest),
            "bench" => Ok(RunKind::Bench),
            "cache" => Ok(RunKind::Cache),
            "repro-zraid" => Ok(RunKind::ReproZraid),
            o => Err(format!(
                "run = \"{o}\": expected one of {}",
                RunKind::NAMES.join(", ")
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RunKind::Crashtest => "crashtest",
            RunKind::Bench => "bench",
            RunKind::Cache => "cache",
            RunKind::ReproZraid => "repro-zraid",
        }
    }
}
