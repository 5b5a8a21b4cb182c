//! `zns sweep SPEC`: a parameter sweep (zns-sweep): the points of a sweep
//! file run on this machine's cores (`--engine local`) or as tasks of a Ray
//! cluster (`--engine ray`, through the Python package's driver,
//! `python -m znskit.ray_sweep`); one record per point, the merged table as
//! CSV and Parquet, figures of it (docs/sweep.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use zns_sweep::local::{self, Options};
use zns_sweep::plot::PlotSpec;
use zns_sweep::{Sweep, SweepError};

use crate::progress::Eta;
use crate::CliError;

pub const SWEEP_HELP: &str = "\
A sweep file (TOML) names what each point runs and the parameter values:

  run = \"crashtest\"                    # crashtest | bench | cache | repro-zraid
  seeds = { first = 1, count = 100 }   # or seeds = [1, 2, 3]: the innermost axis
  [params]                             # the same for every point
  policy = \"wplog\"
  trials = 20
  [grid]                               # every combination (keys in name order,
  chunk_kib = [32, 64]                 #  the last varying fastest)
  qd = [1, 4]
  # [[points]] tables list points by hand (each crossed with the grid);
  # run = \"bench\" takes job = \"FILE.fio\" and any fio option as a parameter
  # (added to every job section, so it wins over the file's own setting);
  # [resources] cpus/memory/retries are what a Ray task asks for.

Each point writes OUT/points/ID.json (its parameters, metrics or error, host
time); a failed point is recorded and the rest go on. At the end the records
merge into OUT/results.csv and OUT/results.parquet (one row per point: point,
id, the parameters, status, error, the metrics) and OUT/summary.json (counts,
host time per point). The table holds only what the points computed, so it is
the same for any --workers and for --engine ray.

Examples:
  zns sweep examples/sweeps/crashtest.toml --out ct
        the crash-test sweep on every core; ct/results.csv
  zns sweep examples/sweeps/crashtest.toml --out ct --resume
        after an interruption: only the points without a record run
  zns sweep examples/sweeps/bench-bs.toml --out bs --plot x=iodepth,y=write_bw_kib_s,by=bs
        a fio job over a grid, its bandwidth against one parameter, a line per another
  zns sweep examples/sweeps/crashtest.toml --engine ray --address 10.0.0.1:6379 --out ct
        the same points as tasks of a Ray cluster (needs `pip install .` and ray)

Exit codes: 0 every point ran to the end; 1 the sweep finished but some points
failed (their records say why); 2 wrong arguments; 3 a bad sweep file; 4 the
output directory cannot be written.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// Worker threads on this machine.
    Local,
    /// Tasks on a Ray cluster (the Python package's driver).
    Ray,
}

#[derive(Args)]
pub struct SweepArgs {
    /// The sweep file (TOML; see below).
    spec: PathBuf,
    /// Output directory (default: the sweep file's name with .out, here).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where the points run.
    #[arg(long, value_enum, default_value_t = Engine::Local)]
    engine: Engine,
    /// Local engine: worker threads (default: the CPUs this process may use).
    #[arg(long)]
    workers: Option<usize>,
    /// Keep the records already in --out and run only the points without one.
    #[arg(long)]
    resume: bool,
    /// With --resume: run the points whose record is a failure again.
    #[arg(long, requires = "resume")]
    retry_failed: bool,
    /// Ray engine: the cluster's address (host:port of the head, or `auto`;
    /// default: a local Ray instance started for the sweep).
    #[arg(long)]
    address: Option<String>,
    /// Ray engine: the Python interpreter with znskit and ray installed
    /// (default: $ZNS_PYTHON, else python3).
    #[arg(long)]
    python: Option<PathBuf>,
    /// After the sweep, draw the table: x=COLUMN,y=COLUMN[,by=COLUMN]
    /// (repeatable); OUT/plot-Y-vs-X.png and .csv.
    #[arg(long, value_name = "x=COL,y=COL[,by=COL]")]
    plot: Vec<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Progress bar on stderr: auto (only on a terminal), always, never.
    #[arg(long, value_enum, default_value_t = Eta::Auto)]
    eta: Eta,
}

fn sweep_err(e: SweepError) -> CliError {
    match e {
        SweepError::Spec { .. } | SweepError::Record { .. } => CliError::Input(e.to_string()),
        SweepError::Param(m) => CliError::Usage(m),
        SweepError::File { .. } => CliError::Io(e.to_string()),
        other => CliError::Failed(other.to_string()),
    }
}

fn plot_spec(text: &str) -> Result<PlotSpec, CliError> {
    let (mut x, mut y, mut by, mut title) = (None, None, None, None);
    for part in text.split(',') {
        let (k, v) = part.split_once('=').ok_or_else(|| {
            CliError::Usage(format!(
                "--plot {text}: expected x=COLUMN,y=COLUMN[,by=COLUMN]"
            ))
        })?;
        let v = Some(v.trim().to_string());
        match k.trim() {
            "x" => x = v,
            "y" => y = v,
            "by" => by = v,
            "title" => title = v,
            o => {
                return Err(CliError::Usage(format!(
                    "--plot {text}: unknown key `{o}` (x, y, by, title)"
                )))
            }
        }
    }
    match (x, y) {
        (Some(x), Some(y)) => Ok(PlotSpec { x, y, by, title }),
        _ => Err(CliError::Usage(format!(
            "--plot {text}: needs x=COLUMN and y=COLUMN"
        ))),
    }
}

fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub fn sweep(a: SweepArgs) -> Result<ExitCode, CliError> {
    let plots = a
        .plot
        .iter()
        .map(|p| plot_spec(p))
        .collect::<Result<Vec<_>, _>>()?;
    if a.workers == Some(0) {
        return Err(CliError::Usage("--workers 0: at least one".into()));
    }
    match a.engine {
        Engine::Ray if a.workers.is_some() => {
            return Err(CliError::Usage(
                "--workers is the local engine's: Ray places tasks by [resources] cpus".into(),
            ))
        }
        Engine::Local if a.address.is_some() || a.python.is_some() => {
            return Err(CliError::Usage(
                "--address and --python belong to --engine ray".into(),
            ))
        }
        _ => {}
    }
    let sweep = Sweep::load(&a.spec).map_err(sweep_err)?;
    // a plot's axis and line columns are parameters: checked before the
    // run, not after it (its y is a metric, known only once points ran)
    let params = sweep.param_names();
    for p in &plots {
        for (what, col) in [("x", Some(&p.x)), ("by", p.by.as_ref())] {
            if let Some(col) = col.filter(|c| !params.contains(c)) {
                return Err(CliError::Usage(format!(
                    "--plot {what}={col}: not a parameter of this sweep (its parameters: {})",
                    params.join(", ")
                )));
            }
        }
    }
    let out = a.out.clone().unwrap_or_else(|| {
        let stem = a
            .spec
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().to_string());
        PathBuf::from(format!("{stem}.out"))
    });
    crate::writable_dir(&out, "--out")?;
    if a.engine == Engine::Ray {
        ray(&a, &out)?;
    }
    let (summary, table) = if a.engine == Engine::Local {
        let opts = Options {
            workers: a.workers.unwrap_or_else(local::available_workers),
            resume: a.resume,
            retry_failed: a.retry_failed,
            stop: Some(crate::interrupt::received),
        };
        let bar = crate::progress::bar(
            a.eta,
            sweep.len() as u64,
            "sweep [{bar:30}] {pos}/{len} points {msg} ({elapsed}, eta {eta})",
        );
        let mut failed = 0usize;
        crate::interrupt::watch();
        // host time is read here, in the OS-facing binary (zns_sweep::HostClock)
        let t0 = std::time::Instant::now();
        let clock = move || t0.elapsed().as_secs_f64();
        let r = local::run(&sweep, &out, &opts, &clock, &mut |rec, done, total| {
            if rec.status == zns_sweep::point::Status::Error {
                failed += 1;
            }
            if let Some(b) = &bar {
                b.set_length(total as u64);
                b.set_position(done as u64);
                b.set_message(format!("{failed} failed"));
            }
        });
        if let Some(b) = &bar {
            b.finish_and_clear();
        }
        if let Err(e @ SweepError::Interrupted { .. }) = &r {
            eprintln!("zns sweep: interrupted ({}): {e}", crate::interrupt::name());
            return Ok(crate::interrupt::exit_code());
        }
        r.map_err(sweep_err)?
    } else {
        // the Ray driver wrote the records, the table and summary.json
        let points = sweep.points().map_err(sweep_err)?;
        let (_, table) = local::finish(&sweep, &points, &out).map_err(sweep_err)?;
        let path = out.join("summary.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
        let summary: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?;
        let get = |k: &str| summary[k].as_f64().unwrap_or(0.0);
        (
            local::Summary {
                points: get("points") as usize,
                ran: get("ran") as usize,
                skipped: get("skipped") as usize,
                ok: get("ok") as usize,
                failed: get("failed") as usize,
                workers: get("workers") as usize,
                wall_s: get("wall_s"),
                point_host_s: get("point_host_s"),
                host_s_per_point: get("host_s_per_point"),
                ran_total: get("ran_total") as usize,
                wall_s_total: get("wall_s_total"),
                point_host_s_total: get("point_host_s_total"),
            },
            table,
        )
    };
    let mut pngs = Vec::new();
    for p in &plots {
        let png = out.join(format!(
            "plot-{}-vs-{}.png",
            file_part(&p.y),
            file_part(&p.x)
        ));
        zns_sweep::plot::plot(&table, p, &png).map_err(sweep_err)?;
        pngs.push(png.display().to_string());
    }
    if a.json {
        let mut v = serde_json::to_value(&summary).map_err(|e| CliError::Io(e.to_string()))?;
        v["out"] = out.display().to_string().into();
        v["plots"] = pngs.into();
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| CliError::Io(e.to_string()))?
        );
    } else {
        outln!(
            "sweep {}: {} point{} ({} run now, {} already done), {} ok, {} failed",
            a.spec.display(),
            summary.points,
            if summary.points == 1 { "" } else { "s" },
            summary.ran,
            summary.skipped,
            summary.ok,
            summary.failed
        );
        outln!(
            "host time: {:.1} s wall on {} worker{}, {:.4} s per point ({:.1} s of points)",
            summary.wall_s,
            summary.workers,
            if summary.workers == 1 { "" } else { "s" },
            summary.host_s_per_point,
            summary.point_host_s
        );
        outln!(
            "table: {0}/results.csv, {0}/results.parquet; records in {0}/points/",
            out.display()
        );
        for p in &pngs {
            outln!("plot: {p}");
        }
        if summary.failed > 0 {
            let first = table.rows.iter().find(|r| {
                r[table
                    .columns
                    .iter()
                    .position(|c| c == "status")
                    .unwrap_or(0)]
                    == "error"
            });
            if let (Some(r), Some(e)) = (first, table.columns.iter().position(|c| c == "error")) {
                outln!(
                    "first failure: point {}: {}",
                    r[0],
                    zns_sweep::point::value_text(&r[e])
                );
            }
        }
    }
    Ok(if summary.failed > 0 || summary.ok < summary.points {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--engine ray`: the Python package's driver does the sweep.
fn ray(a: &SweepArgs, out: &std::path::Path) -> Result<(), CliError> {
    let python = a
        .python
        .clone()
        .or_else(|| std::env::var_os("ZNS_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("python3"));
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "znskit.ray_sweep"])
        .arg(&a.spec)
        .arg("--out")
        .arg(out);
    if let Some(addr) = &a.address {
        cmd.arg("--address").arg(addr);
    }
    if a.resume {
        cmd.arg("--resume");
    }
    if a.retry_failed {
        cmd.arg("--retry-failed");
    }
    if a.eta == Eta::Never || !a.eta.shown() {
        cmd.arg("--quiet");
    }
    let status = cmd.status().map_err(|e| {
        CliError::Usage(format!(
            "--engine ray: cannot start {}: {e} (install the Python package: pip install . — docs/sweep.md)",
            python.display()
        ))
    })?;
    match status.code() {
        Some(0) => Ok(()),
        Some(2) => Err(CliError::Usage(format!(
            "--engine ray: {} -m znskit.ray_sweep rejected the arguments (see above)",
            python.display()
        ))),
        Some(c) => Err(CliError::Failed(format!(
            "--engine ray: the Ray driver ({} -m znskit.ray_sweep) exited with {c} (see above)",
            python.display()
        ))),
        None => Err(CliError::Failed(
            "--engine ray: the Ray driver was killed by a signal".into(),
        )),
    }
}
