//! The fidelity suite (`zns fidelity`): every published figure of
//! `experiments/fidelity-targets.toml` measured through the ordinary
//! benchmark path.
//!
//! `experiments/fidelity.toml` maps each target id to a fio job file kept in
//! `experiments/` and to a *metric*: a small declarative expression evaluated
//! on the fio JSON output (`RunReport::to_fio_json`) of that job file. No
//! number is stored: every value is produced by `parse_job_file` +
//! `run_jobs` + `to_fio_json`, exactly what `zns bench --output-format=json`
//! does. The same file defines curves (sweeps), each overlaid with the real
//! ZN540's measured points from `experiments/data/zn540/*.csv`; the suite
//! reports the error over each whole curve and, on request, writes one PNG
//! and one CSV per curve.
//!
//! The metric language (see `docs/fidelity.md`):
//!
//! * leaf: `{ job = "w4k", path = "write.lat_ns.mean", scale = 0.001 }` —
//!   the number at `path` in the `jobs[]` entry named `job`. `job` may be a
//!   glob (`qd*`) with `reduce = "max" | "min" | "sum" | "mean"`, or `#N`
//!   (the N-th entry); `group = N` restricts to one reporting group. Path
//!   segments are dot-separated; a percentile is written as its number
//!   (`write.clat_ns.percentile.95` finds the key `"95.000000"`).
//! * `{ op = "diff" | "ratio" | "rel_change", a = M, b = M }`:
//!   `a − b`, `a / b`, `(a − b) / b`.
//! * `{ op = "max" | "min" | "sum" | "mean", of = [M, …] }` and
//!   `{ op = "abs", of = M }`.
//! * `scale = k` multiplies the result of any node.
//!
//! Files: `metric` (the expression language and JSON-path lookup), `suite`
//! (fidelity-targets.toml and fidelity.toml parsed into definitions), `run`
//! (running the job files and judging targets and curves), `report` (the
//! result types and the text report), `plot` (a curve's PNG and CSV).

use std::path::PathBuf;

mod metric;
pub mod plot;
mod report;
mod run;
mod suite;

pub use metric::*;
pub use report::*;
pub use run::*;
pub use suite::*;

/// Why the suite could not run at all (a bad definition file). Failures of
/// one experiment are reported per id instead ([`Status::Error`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FidelityError {
    #[error("cannot read {path}: {err}")]
    Read { path: PathBuf, err: std::io::Error },
    #[error("{path}: {msg}")]
    Toml { path: PathBuf, msg: String },
    #[error("{path}: {what}: {msg}")]
    Definition {
        path: PathBuf,
        what: String,
        msg: String,
    },
    #[error("no target or curve id matches `{0}`")]
    NoMatch(String),
    /// A job file that does not parse (the message names it).
    #[error("{source}")]
    Job {
        job: String,
        #[source]
        source: Box<zns_bench::job::JobError>,
    },
    /// A job file whose run failed.
    #[error("{job}: {source}")]
    Run {
        job: String,
        #[source]
        source: Box<zns_bench::run::RunError>,
    },
}

/// Why a metric could not be evaluated on a fio JSON document.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricError {
    #[error("no job matches `{sel}` (jobs: {available})")]
    NoJob { sel: String, available: String },
    #[error("`{sel}` matches {n} jobs; add reduce = \"max\"|\"min\"|\"sum\"|\"mean\"")]
    Ambiguous { sel: String, n: usize },
    #[error("job `{job}`: no number at `{path}` (stopped at `{at}`)")]
    NoValue {
        job: String,
        path: String,
        at: String,
    },
    #[error("the fio JSON has no jobs[] array")]
    NoJobs,
    #[error("{0}")]
    Math(String),
    /// A metric definition that does not parse (fidelity.toml).
    #[error("{0}")]
    Definition(String),
}
