//! `zns fidelity`: the fidelity suite (every published ZN540 figure
//! measured through the ordinary `zns bench` path, see zns-bench's
//! `fidelity` module and docs/fidelity.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use zns_bench::fidelity::{self, FidelityError, FidelityOptions};

use crate::progress::Eta;
use crate::CliError;

#[derive(Args)]
pub struct FidelityArgs {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write one PNG and one CSV per curve (emulated vs measured ZN540) into DIR.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Only targets and curves whose id contains SUBSTR (a glob if it has `*`).
    #[arg(long, value_name = "SUBSTR")]
    filter: Option<String>,
    /// Skip the curves (sweeps): only the single-number targets.
    #[arg(long)]
    no_curves: bool,
    /// Directory with fidelity-targets.toml, fidelity.toml, the job files and data/
    /// (default: this source tree's experiments/).
    #[arg(long, value_name = "DIR")]
    experiments: Option<PathBuf>,
    /// Seed of the virtual-time runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Progress bar on stderr: auto (only on a terminal), always, never.
    #[arg(long, value_enum, default_value_t = Eta::Auto)]
    eta: Eta,
}

pub fn fidelity(args: FidelityArgs) -> Result<ExitCode, CliError> {
    let opts = FidelityOptions {
        experiments_dir: args
            .experiments
            .unwrap_or_else(fidelity::default_experiments_dir),
        filter: args.filter,
        plots_dir: args.plots,
        curves: !args.no_curves,
        seed: args.seed,
    };
    let eta = args.eta;
    if let Some(dir) = &opts.plots_dir {
        crate::writable_dir(dir, "--plots")?;
    }
    crate::interrupt::watch_and_say(
        "zns fidelity: interrupted: the suite reports once every target has run, so no verdict was printed; `--filter PATTERN` runs part of it (`--filter zn540.qd1` takes a second)".into(),
    );
    let bar = crate::progress::bar(
        eta,
        1,
        "fidelity [{bar:30}] {pos}/{len} job files {msg} ({elapsed})",
    );
    // Host time is measured here, outside the deterministic library: the
    // interval between two progress calls is one job file's run.
    let started = std::time::Instant::now();
    let mut file_started = started;
    let mut host_per_file: Vec<f64> = Vec::new();
    let result = fidelity::run_fidelity(&opts, &mut |done, total, current| {
        if done > 0 {
            host_per_file.push(file_started.elapsed().as_secs_f64());
        }
        file_started = std::time::Instant::now();
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(current.to_string());
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = result.map_err(|e| match e {
        FidelityError::Read { .. } => CliError::Io(e.to_string()),
        FidelityError::NoMatch(_) => CliError::Usage(format!("fidelity: --filter: {e}")),
        other => CliError::Input(other.to_string()),
    })?;
    let host_seconds = started.elapsed().as_secs_f64();
    if args.json {
        let mut doc = report.to_json();
        doc["host_seconds"] = serde_json::json!(host_seconds);
        for (j, secs) in host_per_file.iter().enumerate() {
            doc["job_files"][j]["host_seconds"] = serde_json::json!(secs);
        }
        outln!(
            "{}",
            serde_json::to_string_pretty(&doc).map_err(|e| CliError::Io(e.to_string()))?
        );
    } else {
        out!("{}", report.to_text());
        outln!("host time {host_seconds:.1} s");
    }
    Ok(if report.all_passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
