//! zns-sweep owns parameter sweeps of znskit runs: the sweep file (TOML:
//! what to run — a crash-test campaign, a fio job, a ZNCache run, a paper
//! reproduction — with fixed parameters, a grid and/or a list of points and
//! seeds), its expansion into points with stable ids, running one point
//! in-process through the libraries (zns-raid's crash harness, zns-bench's
//! runner, zns-cache), one result record per point in an output directory
//! (so a sweep resumes where it stopped, and a failed point is a record
//! with its error, not the end of the sweep), the merged table (CSV and
//! Parquet, one row per point, the parameters as columns) and its plot
//! (zns-plot's style).
//!
//! Every point is its own deterministic simulation, so points are
//! independent and run in any order on any machine: [`local::run`] runs
//! them on worker threads of this process (the one place in this crate
//! that spawns OS threads; the host-time figures come from the caller's
//! clock, [`HostClock`], as this crate reads none), and the Python package's Ray engine runs [`run_point`] as Ray tasks and
//! writes the records with [`store::write_record`]. The merged table holds
//! nothing that depends on where or when a point ran, so it is the same
//! for 1 worker, N workers or a cluster (docs/sweep.md).

pub mod kind;
pub mod local;
pub mod plot;
pub mod point;
pub mod spec;
pub mod store;
pub mod table;

pub use kind::RunKind;
pub use point::{run_params, run_point, HostClock, Point, Record};
pub use spec::Sweep;

/// What can go wrong with a sweep (the points' own failures are records,
/// not errors: see [`Record::error`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// The sweep file is not valid TOML or does not describe a sweep.
    #[error("{file}: {msg}")]
    Spec { file: String, msg: String },
    /// A parameter of a point (or of a direct run) is unknown or has a bad value.
    #[error("{0}")]
    Param(String),
    /// A file could not be read or written.
    #[error("{path}: {msg}")]
    File { path: String, msg: String },
    /// A record or table in the output directory is malformed.
    #[error("{path}: {msg}")]
    Record { path: String, msg: String },
    /// The figure could not be drawn.
    #[error("plot: {0}")]
    Plot(#[from] zns_plot::PlotError),
    /// Stopped on request (`local::Options::stop`) after `ran` of the
    /// `to_run` points this invocation had: their records are in `out`.
    #[error("stopped after {ran} of {to_run} points; their records are in {out}: run the same command with --resume for the rest")]
    Interrupted {
        ran: usize,
        to_run: usize,
        out: String,
    },
}

impl SweepError {
    pub(crate) fn file(path: &std::path::Path, e: impl std::fmt::Display) -> SweepError {
        SweepError::File {
            path: path.display().to_string(),
            msg: e.to_string(),
        }
    }
}
