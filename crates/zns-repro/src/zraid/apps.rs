//! The ZRAID paper's application figures (zraid-asplos25 §6.4): Fig. 9 —
//! filebench's FILESERVER (iosize 4 KiB … 1 MiB), OLTP and VARMAIL on F2FS
//! over served RAIZN, RAIZN+ and ZRAID arrays of 5 members; Fig. 10 —
//! db_bench FILLSEQ, FILLRANDOM and OVERWRITE over the five variants of
//! Fig. 8; and the §6.4 statistics the arrays count meanwhile (flash WAF,
//! temporary and permanent partial parity, PP-log GC, PP-related writes).
//! Each point is a fresh server, file system and workload
//! ([`zns_apps::experiment::run_on_f2fs`]), repeated; results are normalized to
//! RAIZN+ as in the paper, with their spread.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use zns_raid::RaidStats;

use zns_plot::table::{Cell, Table};

use crate::compare::{self, PaperRow};

use zns_apps::calibrate::{calibrate, Calibration};
use zns_apps::experiment::{earlier_run, run_on_f2fs, run_on_zenfs, RunEnv, RunResult, Workload};
use zns_apps::load::{BlockCounters, RunLoad, CPU_BOUND_BUSY_SHARE};
use zns_apps::outfiles::{self, spread};
use zns_apps::programs::{self, Programs};
use zns_apps::AppError;

/// The figures this module reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum AppFig {
    Fig9,
    Fig10,
}

/// How the figures are run.
#[derive(Debug, Clone)]
pub struct ZraidAppOptions {
    pub figs: Vec<AppFig>,
    /// One workload per figure, one repetition, short runs (CI's smoke).
    pub quick: bool,
    /// Repetitions of every point.
    pub reps: u32,
    /// `zns serve --speed` of each figure's runs: the devices run at this
    /// fraction of real time.
    pub speeds: FigSpeeds,
    /// The members' profile (a built-in name or a TOML file).
    pub member: String,
    /// Zones per member (`zns serve --zones`).
    pub member_zones: u32,
    /// The profile whose conventional namespace holds F2FS's metadata.
    pub meta: String,
    pub out_dir: PathBuf,
    /// The `zns` binary that serves.
    pub zns: PathBuf,
    /// Keep the runs an earlier, interrupted series of the same options
    /// finished in `out_dir/runs` (their raw reports and server stats) and
    /// run only the others.
    pub resume: bool,
    /// The user's filebench and db_bench with ZenFS (checked), which then
    /// run instead of the stand-ins.
    pub programs: Programs,
}

/// The served devices' speed factor (`zns serve --speed`) of each figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FigSpeeds {
    pub fig9: f64,
    pub fig10: f64,
}

impl FigSpeeds {
    /// One speed for both figures (`--speed F`).
    pub fn all(speed: f64) -> FigSpeeds {
        FigSpeeds {
            fig9: speed,
            fig10: speed,
        }
    }

    /// The speed of `fig`'s runs.
    pub fn of(&self, fig: AppFig) -> f64 {
        match fig {
            AppFig::Fig9 => self.fig9,
            AppFig::Fig10 => self.fig10,
        }
    }

    /// The speeds of `figs`, as the reports say them: `--speed F`, or one
    /// per figure when they differ.
    pub fn describe(&self, figs: &[AppFig]) -> String {
        let mut speeds: Vec<(AppFig, f64)> = figs.iter().map(|&f| (f, self.of(f))).collect();
        speeds.dedup_by(|a, b| a.1 == b.1);
        match speeds.as_slice() {
            [(_, s)] => format!("--speed {s}"),
            _ => speeds
                .iter()
                .map(|(f, s)| format!("{} at --speed {s}", fig_title(*f)))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// What must match for a series to resume another: the serve options, the
/// figures' speeds, the members, the metadata profile and the workloads'
/// scale (the number of repetitions may grow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SeriesOptions {
    /// `zns serve`'s options but the speed.
    serve_args: Vec<String>,
    speeds: FigSpeeds,
    member: String,
    meta: String,
    quick: bool,
    /// The programs that ran Figs. 9 and 10 (none said: the stand-ins).
    #[serde(default = "stand_ins")]
    programs: [String; 2],
}

/// What a series from before the programs were said ran: the stand-ins.
fn stand_ins() -> [String; 2] {
    let p = Programs::default();
    [p.fig9_program().into(), p.fig10_program().into()]
}

/// One measured point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppPoint {
    pub fig: String,
    pub workload: String,
    pub variant: String,
    pub rep: u32,
    /// The workload's throughput: fio reads + writes + syncs per second, or
    /// db_bench's ops/s of the measured benchmark (wall clock).
    pub ops_per_s: f64,
    pub mb_per_s: Option<f64>,
    /// The array's counters over the run (None if the server gave none).
    pub stats: Option<RaidStats>,
    /// Device time the server ran, in seconds.
    pub device_s: f64,
    pub report_file: PathBuf,
    /// The program that ran (`Programs::fig9_program`, `fig10_program`:
    /// the paper's, or a stand-in).
    #[serde(default)]
    pub program: String,
    /// The CPU's busy share and the block layer's counters over the
    /// workload (None from runs before they were kept).
    #[serde(default)]
    pub load: Option<RunLoad>,
}

/// A workload of a figure: its label and what runs.
struct Case {
    fig: AppFig,
    label: String,
    workload: Workload,
    /// The db_bench benchmark whose line is the result.
    measured: Option<&'static str>,
}

/// k of Fig. 9 (F = c / k in the guest; docs/apps.md, "One dilation for
/// CPU and device"): the cores its workloads kept busy on the paper's
/// machine. The paper does not say, and its personalities run 16-211
/// threads: k is the one at which the guest's CPU stops bounding them,
/// measured on OLTP (guest CPU 99 % busy at c, 95 % at c / 10, 51-53 % at
/// c / 100, where ZRAID / RAIZN+ became 1.081) and fileserver 4 KiB (86 %
/// at c / 10, 25-27 % at c / 100).
pub const FIG9_CORES: f64 = 100.0;

/// k of Fig. 10, chosen the same way: db_bench's 4 threads and 16
/// background jobs with the paper's 8 000-byte values kept the guest's CPU
/// 79-95 % busy at c / 100 (every run but one CPU-bound, ZRAID / RAIZN+
/// 1.003) and 8-12 % at c / 1000 (1.113); the guest spends 510-910 µs of CPU
/// an operation at c / 100, against 55 µs for the calibration's 100-byte
/// fillrandom (docs/apps.md, "Fig. 10 device-bound").
pub const FIG10_CORES: f64 = 1000.0;

/// k of each figure.
pub fn fig_cores(fig: AppFig) -> f64 {
    match fig {
        AppFig::Fig9 => FIG9_CORES,
        AppFig::Fig10 => FIG10_CORES,
    }
}

const FIG9_VARIANTS: [&str; 3] = ["raizn", "raizn+", "zraid"];
const FIG10_VARIANTS: [&str; 5] = ["raizn+", "z", "z+s", "z+s+m", "zraid"];

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The workloads of `fig`, at the scale `quick` asks for (docs/apps.md
/// gives the scaling against the paper's).
fn cases(fig: AppFig, quick: bool) -> Vec<Case> {
    let runtime = if quick { "8" } else { "30" };
    match fig {
        AppFig::Fig9 => {
            // filebench's iosize → the job file's IOSIZE, RMIX (reads in %
            // of calls), APCT (% of writes per append size): the table in
            // workloads/filebench/fileserver.fio (fio 3.33 has no
            // arithmetic in job files)
            let sizes: &[(&str, &str, &str, &str)] = if quick {
                &[("4k", "4k", "49", "1")]
            } else {
                &[
                    ("4k", "4k", "49", "1"),
                    ("16k", "16k", "47", "3"),
                    ("64k", "64k", "42", "7"),
                    ("256k", "128k", "35", "12"),
                    ("1m", "128k", "33", "12"),
                ]
            };
            // files per thread (50 threads; filebench: 200, the paper 40x)
            let nfiles = if quick { "4" } else { "40" };
            let mut v: Vec<Case> = sizes
                .iter()
                .map(|(label, io, rmix, apct)| Case {
                    fig,
                    label: format!("fileserver-{label}"),
                    workload: Workload::Fio {
                        personality: "fileserver".into(),
                        vars: vars(&[
                            ("IOSIZE", io),
                            ("RMIX", rmix),
                            ("APCT", apct),
                            ("NFILES", nfiles),
                            ("RUNTIME", runtime),
                            ("DIRECT", "1"),
                        ]),
                    },
                    measured: None,
                })
                .collect();
            if !quick {
                // filebench's 10 data files of 10 MiB, shared by every thread
                let datafiles: Vec<String> = (0..10).map(|i| format!("oltp/d{i}")).collect();
                let datafiles = datafiles.join(":");
                v.push(Case {
                    fig,
                    label: "oltp".into(),
                    workload: Workload::Fio {
                        personality: "oltp".into(),
                        vars: vars(&[
                            ("IOSIZE", "4k"),
                            ("DATAFILES", &datafiles),
                            ("RUNTIME", runtime),
                            ("DIRECT", "1"),
                        ]),
                    },
                    measured: None,
                });
                // files per thread (16 threads): 63 is filebench's 1000
                v.push(Case {
                    fig,
                    label: "varmail".into(),
                    workload: Workload::Fio {
                        personality: "varmail".into(),
                        vars: vars(&[("NFILES", "63"), ("RUNTIME", runtime), ("DIRECT", "0")]),
                    },
                    measured: None,
                });
            }
            v
        }
        AppFig::Fig10 => {
            let num = if quick { "2000" } else { "20000" };
            let common = |benchmarks: &str| -> Vec<String> {
                [
                    format!("--benchmarks={benchmarks}"),
                    format!("--num={num}"),
                    "--value_size=8000".into(),
                    "--threads=4".into(),
                    "--max_background_jobs=16".into(),
                    "--use_direct_reads=true".into(),
                    "--use_direct_io_for_flush_and_compaction=true".into(),
                    "--histogram=1".into(),
                    "--progress_reports=false".into(),
                ]
                .into()
            };
            let mut v = vec![Case {
                fig,
                label: "fillseq".into(),
                workload: Workload::DbBench {
                    args: common("fillseq"),
                },
                measured: Some("fillseq"),
            }];
            if !quick {
                v.push(Case {
                    fig,
                    label: "fillrandom".into(),
                    workload: Workload::DbBench {
                        args: common("fillrandom"),
                    },
                    measured: Some("fillrandom"),
                });
                // overwrite needs a database: the run fills it first (its
                // counters include that fill; docs/apps.md)
                v.push(Case {
                    fig,
                    label: "overwrite".into(),
                    workload: Workload::DbBench {
                        args: common("fillrandom,overwrite"),
                    },
                    measured: Some("overwrite"),
                });
            }
            v
        }
    }
}

/// The figure as the paper names it.
fn fig_title(fig: AppFig) -> &'static str {
    match fig {
        AppFig::Fig9 => "Fig. 9",
        AppFig::Fig10 => "Fig. 10",
    }
}

fn fig_name(fig: AppFig) -> &'static str {
    match fig {
        AppFig::Fig9 => "fig9",
        AppFig::Fig10 => "fig10",
    }
}

fn variants(fig: AppFig) -> &'static [&'static str] {
    match fig {
        AppFig::Fig9 => &FIG9_VARIANTS,
        AppFig::Fig10 => &FIG10_VARIANTS,
    }
}

/// The value of `key` among a workload's variables.
fn var<'a>(vars: &'a [(String, String)], key: &str) -> &'a str {
    vars.iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

/// `case` run by the user's programs where there are some: a fio
/// personality by filebench's own (workloads/filebench/*.f, at the same
/// scale: files in all = files per thread × its threads, the label's
/// iosize uncapped, direct I/O as the personality had it), db_bench on
/// F2FS by the user's db_bench on ZenFS. filebench gets at least its
/// default file count (below).
fn with_programs(case: Case, programs: &Programs) -> Case {
    let workload = match (&case.workload, programs) {
        (
            Workload::Fio { personality, vars },
            Programs {
                filebench: Some(fb),
                ..
            },
        ) => {
            // threads of each personality (fio's jobs, filebench's
            // instances) and filebench's default file count, the least it
            // gets: with fewer (200 files, 1000) filebench's createfile
            // finds no free entry within seconds and stops the run
            let (threads, least): (u64, u64) = match personality.as_str() {
                "fileserver" => (50, 10_000),
                "varmail" => (16, 1_000),
                _ => (1, 0),
            };
            let files = (var(vars, "NFILES").parse::<u64>().unwrap_or(0) * threads).max(least);
            let iosize = case
                .label
                .strip_prefix("fileserver-")
                .unwrap_or(var(vars, "IOSIZE"));
            let direct = if var(vars, "DIRECT") == "1" {
                ",directio"
            } else {
                ""
            };
            Workload::Filebench {
                program: fb.clone(),
                personality: personality.clone(),
                vars: [
                    ("NFILES", files.to_string()),
                    ("IOSIZE", iosize.to_string()),
                    ("RUNTIME", var(vars, "RUNTIME").to_string()),
                    ("DIRECTIO", direct.to_string()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            }
        }
        (
            Workload::DbBench { args },
            Programs {
                db_bench: Some(db), ..
            },
        ) => Workload::ZenfsDbBench {
            db_bench: db.clone(),
            zenfs: db.with_file_name(programs::ZENFS_UTILITY),
            args: args.clone(),
        },
        _ => return case,
    };
    Case { workload, ..case }
}

/// Every run of the figures, in order: (case, variant, rep).
fn plan(opts: &ZraidAppOptions) -> Vec<(Case, &'static str, u32)> {
    let mut runs = Vec::new();
    let reps = if opts.quick { 1 } else { opts.reps.max(1) };
    for &fig in &opts.figs {
        for rep in 0..reps {
            for case in cases(fig, opts.quick) {
                let case = with_programs(case, &opts.programs);
                // variants interleaved within a repetition, so that a slow
                // spell of the host spreads over all of them
                for &v in variants(fig) {
                    let c = Case {
                        fig: case.fig,
                        label: case.label.clone(),
                        workload: case.workload.clone(),
                        measured: case.measured,
                    };
                    runs.push((c, v, rep));
                }
            }
        }
    }
    runs
}

/// Members per array (4 data + parity, as the paper's arrays).
const MEMBERS: u64 = 5;

/// `opts.meta` with its conventional namespace made large enough for F2FS
/// on the array: three of the array's zones (mkfs.f2fs wants two zones'
/// worth of metadata device, docs/serve.md), at least its own size; written
/// as a profile file in the work directory; its path.
fn meta_profile(opts: &ZraidAppOptions) -> Result<String, AppError> {
    use zns_device::{NamespaceProfile, Profile};
    let member = Profile::load(&opts.member)
        .map_err(|e| crate::step(e).context(format!("--member {}", opts.member)))?;
    let zone_lbas = member
        .first_zoned()
        .and_then(|i| match &member.namespaces[i] {
            NamespaceProfile::Zoned(z) => Some(z.zone_size_lbas),
            NamespaceProfile::Conventional(_) => None,
        })
        .ok_or_else(|| {
            AppError::Invalid(format!("--member {}: no zoned namespace", opts.member))
        })?;
    let meta = Profile::load(&opts.meta).map_err(|e| crate::step(e).context(&opts.meta))?;
    let (index, own) = meta
        .namespaces
        .iter()
        .enumerate()
        .find_map(|(i, n)| match n {
            NamespaceProfile::Conventional(c) => Some((i, c.capacity_lbas)),
            NamespaceProfile::Zoned(_) => None,
        })
        .ok_or_else(|| {
            AppError::Invalid(format!(
                "{}: no conventional namespace for F2FS's metadata",
                opts.meta
            ))
        })?;
    let lbas = own.max(3 * (MEMBERS - 1) * zone_lbas);
    let meta = meta
        .with_overrides(&[(format!("namespace.{index}.capacity_lbas"), lbas.to_string())])
        .map_err(|e| crate::step(e).context(&opts.meta))?;
    let dir = opts.out_dir.join("runs");
    std::fs::create_dir_all(&dir).map_err(AppError::file(&dir))?;
    let path = dir.join("meta.toml");
    std::fs::write(&path, meta.to_toml()).map_err(AppError::file(&path))?;
    Ok(path.to_string_lossy().into_owned())
}

/// The number of runs `opts` makes (for progress and time estimates).
pub fn run_count(opts: &ZraidAppOptions) -> usize {
    plan(opts).len()
}

/// The `zns serve` options of every run but the speed.
fn zones_args(opts: &ZraidAppOptions) -> Vec<String> {
    vec!["--zones".into(), opts.member_zones.to_string()]
}

/// The `zns serve` options of `fig`'s runs.
fn serve_args(opts: &ZraidAppOptions, fig: AppFig) -> Vec<String> {
    let mut args = zones_args(opts);
    args.extend(["--speed".into(), opts.speeds.of(fig).to_string()]);
    args
}

/// The speed check (zns_apps::calibrate) on a ZRAID array of the members, at
/// each speed the figures run at (one check when they share it); written
/// to `out_dir/calibration.{json,csv}`.
pub fn calibrate_speed(
    opts: &ZraidAppOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Calibration>, AppError> {
    let array = format!("raid:{MEMBERS}x{},variant=zraid", opts.member);
    let dir = opts.out_dir.join("runs");
    std::fs::create_dir_all(&dir).map_err(AppError::file(&dir))?;
    let runtime_s = if opts.quick { 5 } else { 15 };
    let mut cal = Vec::new();
    let mut checked: Vec<f64> = Vec::new();
    for &fig in &opts.figs {
        let speed = opts.speeds.of(fig);
        if checked.contains(&speed) {
            continue;
        }
        progress(&format!(
            "speed check: fio through the served {array} at --speed {speed} against zns bench"
        ));
        // (the first check keeps the name runs from before per-figure
        // speeds used)
        let stats = if checked.is_empty() {
            dir.join("calibration.serve.json")
        } else {
            dir.join(format!("calibration-{}.serve.json", fig_name(fig)))
        };
        checked.push(speed);
        let c = calibrate(
            &opts.zns,
            &array,
            &serve_args(opts, fig),
            speed,
            runtime_s,
            &stats,
        )
        .map_err(|e| e.context("speed check"))?;
        cal.extend(c);
    }
    let mut csv = Table::new([
        "job",
        "target",
        "speed",
        "served_mib_per_s",
        "bench_mib_per_s",
        "ratio",
    ]);
    for c in &cal {
        csv.push([
            Cell::text(c.job.as_str()),
            Cell::Quoted(c.target.clone()),
            Cell::text(c.speed.to_string()),
            Cell::fixed(c.served_mib_per_s, 3),
            Cell::fixed(c.bench_mib_per_s, 3),
            Cell::fixed(c.ratio, 4),
        ]);
    }
    outfiles::write(&opts.out_dir, "calibration.csv", csv.to_csv())?;
    outfiles::write_json(&opts.out_dir, "calibration.json", &cal)?;
    Ok(cal)
}

/// The speed check a run wrote to `dir/calibration.json`.
pub fn read_calibration(dir: &std::path::Path) -> Result<Vec<Calibration>, AppError> {
    outfiles::read_json(dir, "calibration.json")
}

/// The speed check as a Markdown table.
pub fn calibration_markdown(cal: &[Calibration]) -> String {
    let mut s = String::from(
        "| speed check (device-bound: 1) | --speed | fio through ublk, MiB/s | zns bench × speed, MiB/s | ratio |\n|---|---|---|---|---|\n",
    );
    for c in cal {
        let _ = writeln!(
            s,
            "| {} on {} | {} | {:.2} | {:.2} | {:.3} |",
            c.job,
            c.target,
            c.speed,
            c.served_mib_per_s,
            c.bench_mib_per_s * c.speed,
            c.ratio
        );
    }
    let worst = cal.iter().map(|c| c.ratio).fold(f64::INFINITY, f64::min);
    if worst < 0.9 {
        let _ = writeln!(
            s,
            "\nWarning: at this speed the host reaches only {:.0} % of the device's throughput: the host, not the emulated device, bounds the runs, and the figures below measure it; use a lower --speed.",
            worst * 100.0
        );
    }
    s
}

/// Runs the figures; `progress` gets a line per run.
pub fn run(
    opts: &ZraidAppOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<AppPoint>, AppError> {
    let env_of = |fig| RunEnv {
        zns: opts.zns.clone(),
        work_dir: opts.out_dir.join("runs"),
        serve_args: serve_args(opts, fig),
    };
    let work_dir = opts.out_dir.join("runs");
    let meta = meta_profile(opts)?;
    let series = SeriesOptions {
        serve_args: zones_args(opts),
        speeds: opts.speeds,
        member: opts.member.clone(),
        meta: opts.meta.clone(),
        quick: opts.quick,
        programs: [
            opts.programs.fig9_program().into(),
            opts.programs.fig10_program().into(),
        ],
    };
    if opts.resume {
        let said = work_dir.join("series.json");
        match outfiles::read_json::<SeriesOptions>(&work_dir, "series.json") {
            Ok(earlier) if earlier != series => {
                return Err(AppError::Invalid(format!(
                    "--resume: {} holds runs of other options ({earlier:?}, now {series:?}): use another --out or drop --resume",
                    work_dir.display()
                )))
            }
            Ok(_) => {}
            // (written by a zns from before the figures had their own
            // speeds, or damaged: which options its runs had is unknown)
            Err(e) if said.exists() => {
                return Err(AppError::Invalid(format!(
                    "--resume: cannot tell which options the runs in {} had ({e}): use another --out or drop --resume",
                    work_dir.display()
                )))
            }
            Err(_) => progress(&format!(
                "--resume: {} does not say which options its runs had (no series.json): keeping the runs that finished, assuming they had these",
                work_dir.display()
            )),
        }
    }
    outfiles::write_json(&work_dir, "series.json", &series)?;
    let runs = plan(opts);
    if !opts.resume {
        // a fresh series: what an earlier one left under these names must
        // not be taken for this one's by a later --resume
        for (case, variant, rep) in &runs {
            let label = run_label(case, variant, *rep);
            for ext in ["report", "serve.json"] {
                let _ = std::fs::remove_file(work_dir.join(format!("{label}.{ext}")));
            }
        }
    }
    let total = runs.len();
    let mut points = Vec::new();
    for (i, (case, variant, rep)) in runs.into_iter().enumerate() {
        let fig = fig_name(case.fig);
        let array = format!("raid:{MEMBERS}x{},variant={variant}", opts.member);
        let label = run_label(&case, variant, rep);
        let env = env_of(case.fig);
        let kept = opts
            .resume
            .then(|| earlier_run(&env, &case.workload, &label))
            .flatten();
        progress(&format!(
            "[{}/{total}] {fig} {} on {variant}, rep {rep}{}",
            i + 1,
            case.label,
            if kept.is_some() {
                " (kept: finished by an earlier run)"
            } else {
                ""
            }
        ));
        let r = match (kept, &case.workload) {
            (Some(r), _) => Ok(r),
            (None, Workload::ZenfsDbBench { .. }) => {
                run_on_zenfs(&env, &array, &case.workload, &label)
            }
            (None, _) => run_on_f2fs(&env, &array, &meta, &case.workload, &label),
        }
        .map_err(|e| e.context(format!("{fig} {} on {variant}", case.label)))?;
        let mut pt = point(fig, &case, variant, rep, &array, r)?;
        pt.program = match case.fig {
            AppFig::Fig9 => opts.programs.fig9_program(),
            AppFig::Fig10 => opts.programs.fig10_program(),
        }
        .to_string();
        points.push(pt);
    }
    Ok(points)
}

/// The name of a run's raw report and server stats in `runs/`.
fn run_label(case: &Case, variant: &str, rep: u32) -> String {
    format!(
        "{}-{}-{}-rep{rep}",
        fig_name(case.fig),
        case.label,
        variant.replace('+', "p")
    )
}

fn point(
    fig: &'static str,
    case: &Case,
    variant: &'static str,
    rep: u32,
    array: &str,
    r: RunResult,
) -> Result<AppPoint, AppError> {
    let (ops_per_s, mb_per_s) = match (&r.fio, case.measured) {
        (Some(f), _) => (f.ops_per_s(), Some(f.read_mib_per_s + f.write_mib_per_s)),
        (None, None) if r.filebench.is_some() => {
            let f = r.filebench.as_ref().map(|f| (f.ops_per_s, f.mb_per_s));
            f.unwrap_or_default()
        }
        (None, Some(bench)) => {
            let b = r
                .db_bench
                .iter()
                .find(|b| b.benchmark == bench)
                .ok_or_else(|| AppError::Report {
                    program: "db_bench".into(),
                    what: format!("printed no {bench} line"),
                })?;
            (b.ops_per_sec, b.mb_per_s)
        }
        (None, None) => {
            return Err(AppError::Report {
                program: case.label.to_string(),
                what: "neither fio nor db_bench figures".into(),
            })
        }
    };
    let stats = r
        .served
        .get("devices")
        .and_then(|d| d.get(array))
        .and_then(|a| a.get("raid"))
        .and_then(|raid| raid.get("counters"))
        .and_then(|c| serde_json::from_value::<RaidStats>(c.clone()).ok());
    let device_s = r.served["virtual_ns"].as_f64().unwrap_or(0.0) / 1e9;
    Ok(AppPoint {
        fig: fig.to_string(),
        workload: case.label.clone(),
        variant: variant.to_string(),
        rep,
        ops_per_s,
        mb_per_s,
        stats,
        device_s,
        report_file: r.report_file,
        program: String::new(),
        load: r.load,
    })
}

/// The points a run wrote to `dir/points.json`.
pub fn read_points(dir: &std::path::Path) -> Result<Vec<AppPoint>, AppError> {
    outfiles::read_json(dir, "points.json")
}

/// The points as CSV (one row per run, the array's counters included).
pub fn points_csv(points: &[AppPoint]) -> String {
    let mut t = Table::new([
        "fig",
        "workload",
        "variant",
        "rep",
        "ops_per_s",
        "mb_per_s",
        "device_s",
        "flash_waf",
        "host_blocks",
        "data_blocks",
        "parity_blocks",
        "pp_temporary_blocks",
        "pp_permanent_blocks",
        "pp_header_blocks",
        "pp_related_blocks",
        "pp_gc_count",
        "program",
        "cpu_busy_share",
        "cpu_bound",
        "array_reads",
        "array_read_sectors",
        "array_writes",
        "array_write_sectors",
        "array_flushes",
        "array_io_ticks_ms",
        "report",
    ]);
    for p in points {
        let st = p.stats.unwrap_or_default();
        let mut row = vec![
            Cell::text(p.fig.as_str()),
            Cell::text(p.workload.as_str()),
            Cell::text(p.variant.as_str()),
            Cell::text(p.rep.to_string()),
            Cell::fixed(p.ops_per_s, 1),
            Cell::opt(p.mb_per_s, |m| format!("{m:.2}")),
            Cell::fixed(p.device_s, 3),
            Cell::fixed(st.flash_waf(), 4),
        ];
        row.extend(
            [
                st.host_blocks,
                st.data_blocks,
                st.parity_blocks,
                st.temporary_pp_blocks(),
                st.permanent_pp_blocks(),
                st.pp_header_blocks,
                st.pp_related_blocks(),
                st.pp_gc_count,
            ]
            .map(|n| Cell::text(n.to_string())),
        );
        let load = p.load.as_ref();
        row.push(Cell::text(p.program.as_str()));
        row.push(Cell::opt(load.map(|l| l.cpu_busy_share), |b| {
            format!("{b:.4}")
        }));
        row.push(Cell::opt(load.map(RunLoad::cpu_bound), |b| b.to_string()));
        let array = load.and_then(|l| l.block.get("array"));
        row.extend(
            [
                |a: &BlockCounters| a.reads,
                |a: &BlockCounters| a.read_sectors,
                |a: &BlockCounters| a.writes,
                |a: &BlockCounters| a.write_sectors,
                |a: &BlockCounters| a.flushes,
                |a: &BlockCounters| a.io_ticks_ms,
            ]
            .map(|f| Cell::opt(array.map(f), |n| n.to_string())),
        );
        row.push(Cell::text(p.report_file.display().to_string()));
        t.push(row);
    }
    t.to_csv()
}

/// One workload's throughput per variant, normalized to RAIZN+.
#[derive(Debug, Clone, Serialize)]
pub struct Normalized {
    pub fig: String,
    pub workload: String,
    pub variant: String,
    pub mean_ops_per_s: f64,
    /// Mean, min and max over the repetitions, divided by RAIZN+'s mean.
    pub normalized: f64,
    pub normalized_min: f64,
    pub normalized_max: f64,
    pub mean_flash_waf: f64,
    pub reps: usize,
    /// The highest CPU busy share of its runs (None: not kept).
    pub cpu_busy_share_max: Option<f64>,
}

/// Every (fig, workload, variant) normalized to RAIZN+ of the same
/// workload (none when RAIZN+ was not run).
pub fn normalize(points: &[AppPoint]) -> Vec<Normalized> {
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&AppPoint>> = BTreeMap::new();
    for p in points {
        groups
            .entry((p.fig.as_str(), p.workload.as_str(), p.variant.as_str()))
            .or_default()
            .push(p);
    }
    let mean_of = |fig: &str, w: &str, v: &str| -> Option<f64> {
        let ps = groups.get(&(fig, w, v))?;
        spread(&ps.iter().map(|p| p.ops_per_s).collect::<Vec<_>>()).map(|s| s.0)
    };
    let mut out = Vec::new();
    for ((fig, w, v), ps) in &groups {
        let Some(base) = mean_of(fig, w, "raizn+").filter(|b| *b > 0.0) else {
            continue;
        };
        let ops: Vec<f64> = ps.iter().map(|p| p.ops_per_s).collect();
        let Some((mean, min, max)) = spread(&ops) else {
            continue;
        };
        let wafs: Vec<f64> = ps
            .iter()
            .filter_map(|p| Some(p.stats?.flash_waf()))
            .collect();
        out.push(Normalized {
            fig: fig.to_string(),
            workload: w.to_string(),
            variant: v.to_string(),
            mean_ops_per_s: mean,
            normalized: mean / base,
            normalized_min: min / base,
            normalized_max: max / base,
            mean_flash_waf: spread(&wafs).map(|s| s.0).unwrap_or(0.0),
            reps: ps.len(),
            cpu_busy_share_max: busiest(ps.iter().copied()),
        });
    }
    // variants in the paper's order within each workload
    let order = |v: &str| {
        FIG10_VARIANTS
            .iter()
            .chain(&FIG9_VARIANTS)
            .position(|x| *x == v)
    };
    out.sort_by(|a, b| {
        (&a.fig, &a.workload, order(&a.variant)).cmp(&(&b.fig, &b.workload, order(&b.variant)))
    });
    out
}

/// What ran `fig`'s points, as a summary row says it (` [fio
/// personalities (stand-ins for filebench)]`; nothing when none ran or
/// none said).
fn program_tag(points: &[AppPoint], fig: &str) -> String {
    let mut names: Vec<&str> = points
        .iter()
        .filter(|p| p.fig == fig && !p.program.is_empty())
        .map(|p| p.program.as_str())
        .collect();
    names.dedup();
    if names.is_empty() {
        String::new()
    } else {
        format!(" [{}]", names.join(", "))
    }
}

/// The highest CPU busy share of `points` (None when none kept one).
fn busiest<'a>(points: impl Iterator<Item = &'a AppPoint>) -> Option<f64> {
    points
        .filter_map(|p| Some(p.load.as_ref()?.cpu_busy_share))
        .reduce(f64::max)
}

/// What a summary row says when the CPU bounded some of its runs: their
/// figure measures the CPU (the instructions of each variant's path), not
/// the arrays.
fn cpu_bound_note(points: &[AppPoint], fig: &str, workload: Option<&str>) -> String {
    let busy = busiest(
        points
            .iter()
            .filter(|p| p.fig == fig && workload.map_or(true, |w| p.workload == w)),
    );
    match busy {
        Some(b) if b > CPU_BOUND_BUSY_SHARE => format!(
            "; CPU-BOUND (guest CPU up to {:.0} % busy, above {:.0} %): a CPU figure, not the device's",
            b * 100.0,
            CPU_BOUND_BUSY_SHARE * 100.0
        ),
        // (one decimal under 10 %: ZenFS's db_bench at c / 1000 kept it
        // under 1 %)
        Some(b) if b < 0.1 => format!("; guest CPU up to {:.1} % busy", b * 100.0),
        Some(b) => format!("; guest CPU up to {:.0} % busy", b * 100.0),
        None => String::new(),
    }
}

fn norm_of(n: &[Normalized], fig: &str, w: &str, v: &str) -> Option<f64> {
    n.iter()
        .find(|x| x.fig == fig && x.workload == w && x.variant == v)
        .map(|x| x.normalized)
}

/// The array counters of `variant`'s runs of `fig` (workloads matching
/// `workload`, all when None), summed.
fn stats_sum(
    points: &[AppPoint],
    fig: &str,
    variant: &str,
    workload: Option<&str>,
) -> Option<RaidStats> {
    let mut sum: Option<RaidStats> = None;
    for p in points.iter().filter(|p| {
        p.fig == fig && p.variant == variant && workload.map_or(true, |w| p.workload == w)
    }) {
        let s = p.stats?;
        *sum.get_or_insert_with(RaidStats::default) += s;
    }
    sum
}

fn gain_note(ours: Option<f64>, paper_gain_pct: f64) -> String {
    match ours {
        None => "not run".into(),
        Some(r) => {
            let g = (r - 1.0) * 100.0;
            let dir = if g >= 0.0 { "ahead of" } else { "behind" };
            format!(
                "ZRAID {dir} RAIZN+ by {:.1} % (paper {paper_gain_pct:+.1} %)",
                g.abs()
            )
        }
    }
}

/// The paper's numbers of Fig. 9, Fig. 10 and §6.4 beside ours.
pub fn summary(points: &[AppPoint]) -> Vec<PaperRow> {
    let n = normalize(points);
    let mut rows = Vec::new();
    let mut ratio = |what: &str, paper: &str, fig: &str, w: &str, gain: f64| {
        let ours = norm_of(&n, fig, w, "zraid");
        rows.push(PaperRow {
            what: what.to_string() + &program_tag(points, fig),
            paper: paper.into(),
            ours,
            note: gain_note(ours, gain) + &cpu_bound_note(points, fig, Some(w)),
            ..PaperRow::default()
        });
    };
    ratio(
        "Fig. 9 fileserver 4 KiB: ZRAID / RAIZN+",
        "1.14",
        "fig9",
        "fileserver-4k",
        14.0,
    );
    ratio(
        "Fig. 9 fileserver 1 MiB: ZRAID / RAIZN+",
        "≈ 1.0",
        "fig9",
        "fileserver-1m",
        0.0,
    );
    ratio("Fig. 9 OLTP: ZRAID / RAIZN+", "1.128", "fig9", "oltp", 12.8);
    ratio(
        "Fig. 9 VARMAIL: ZRAID / RAIZN+",
        "1.162",
        "fig9",
        "varmail",
        16.2,
    );
    let varmail_raizn = stats_sum(points, "fig9", "raizn", Some("varmail")).map(|s| s.flash_waf());
    rows.push(PaperRow {
        what: "Fig. 9 VARMAIL: RAIZN flash WAF".into(),
        paper: "2.44".into(),
        ours: varmail_raizn,
        note: varmail_raizn.map_or("not run".into(), |w| {
            format!("{:+.1} % from the paper", (w / 2.44 - 1.0) * 100.0)
        }),
        ..PaperRow::default()
    });
    let fig10: Vec<f64> = ["fillseq", "fillrandom", "overwrite"]
        .iter()
        .filter_map(|w| norm_of(&n, "fig10", w, "zraid"))
        .collect();
    let mean10 = spread(&fig10).map(|s| s.0);
    rows.push(PaperRow {
        what: format!(
            "Fig. 10 db_bench: ZRAID / RAIZN+, mean of {} workloads{}",
            fig10.len(),
            program_tag(points, "fig10")
        ),
        paper: "1.145".into(),
        ours: mean10,
        note: gain_note(mean10, 14.5) + &cpu_bound_note(points, "fig10", None),
        ..PaperRow::default()
    });
    let waf = |v: &str, w: Option<&str>| stats_sum(points, "fig10", v, w).map(|s| s.flash_waf());
    let mut add = |what: &str, paper: &str, ours: Option<f64>, note: String| {
        rows.push(PaperRow {
            what: what.into(),
            paper: paper.into(),
            ours,
            note,
            ..PaperRow::default()
        })
    };
    let waf_note = |ours: Option<f64>, paper: f64| {
        ours.map_or("not run".into(), |w| {
            format!("{:+.1} % from the paper", (w / paper - 1.0) * 100.0)
        })
    };
    let z = waf("zraid", None);
    add(
        "§6.4 ZRAID flash WAF (db_bench)",
        "1.25",
        z,
        waf_note(z, 1.25),
    );
    let p = waf("raizn+", None);
    add(
        "§6.4 RAIZN+ flash WAF, all db_bench runs",
        "1.6",
        p,
        waf_note(p, 1.6),
    );
    let pf = waf("raizn+", Some("fillseq"));
    add(
        "§6.4 RAIZN+ flash WAF, FILLSEQ",
        "2.0",
        pf,
        waf_note(pf, 2.0),
    );
    let gc = |v: &str| stats_sum(points, "fig10", v, None).map(|s| s.pp_gc_count as f64);
    add(
        "§6.4 PP-log GCs, RAIZN+ (three workloads)",
        "345",
        gc("raizn+"),
        "our runs write far less than the paper's 10 M keys of 8000 B: the count scales with the data written".into(),
    );
    add(
        "§6.4 PP-log GCs, ZRAID",
        "0",
        gc("zraid"),
        "ZRAID has no PP log zones".into(),
    );
    let pp = |v: &str| stats_sum(points, "fig10", v, None).map(|s| s.pp_related_blocks() as f64);
    let change = match (pp("zraid"), pp("raizn+")) {
        (Some(z), Some(r)) if r > 0.0 => Some((z / r - 1.0) * 100.0),
        _ => None,
    };
    add(
        "§6.4 PP-related writes, ZRAID vs RAIZN+ (%)",
        "−24",
        change,
        "PP blocks (ZRWA, logged, GC'd) and PP headers, summed over the db_bench runs".into(),
    );
    let per_data = |v: &str, f: fn(&RaidStats) -> u64| {
        stats_sum(points, "fig10", v, Some("fillseq"))
            .filter(|s| s.data_blocks > 0)
            .map(|s| f(&s) as f64 / s.data_blocks as f64)
    };
    add(
        "§6.4 FILLSEQ permanent PP / data, RAIZN+",
        "0.75 (98 GB of 130 GB)",
        per_data("raizn+", RaidStats::permanent_pp_blocks),
        String::new(),
    );
    add(
        "§6.4 FILLSEQ permanent PP / data, ZRAID",
        "0.0002 (26 MB of 130 GB)",
        per_data("zraid", RaidStats::permanent_pp_blocks),
        String::new(),
    );
    add(
        "§6.4 FILLSEQ temporary PP / data, ZRAID",
        "0.5 (65 GB of 130 GB)",
        per_data("zraid", RaidStats::temporary_pp_blocks),
        String::new(),
    );
    rows
}

/// The summary as a Markdown table.
pub fn summary_markdown(rows: &[PaperRow]) -> String {
    compare::markdown(rows, "paper")
}

/// Writes the figures' files into `dir`: points.json (what
/// [`read_points`] reads back), points.csv, normalized.csv, summary.md,
/// summary.json and, with `plots`, a PNG per figure (throughput normalized
/// to RAIZN+, min–max over the repetitions; drawing needs fonts, which the
/// guest lacks: its points are plotted on the host); returns their paths.
pub fn write_outputs(
    points: &[AppPoint],
    dir: &std::path::Path,
    plots: bool,
) -> Result<Vec<PathBuf>, AppError> {
    std::fs::create_dir_all(dir).map_err(AppError::file(dir))?;
    let mut files = Vec::new();
    files.push(outfiles::write_json(dir, "points.json", points)?);
    let mut write = |name: &str, text: String| -> Result<(), AppError> {
        files.push(outfiles::write(dir, name, text)?);
        Ok(())
    };
    write("points.csv", points_csv(points))?;
    let n = normalize(points);
    let mut csv = Table::new([
        "fig",
        "workload",
        "variant",
        "reps",
        "mean_ops_per_s",
        "normalized",
        "normalized_min",
        "normalized_max",
        "mean_flash_waf",
        "cpu_busy_share_max",
        "cpu_bound",
    ]);
    for x in &n {
        csv.push([
            Cell::text(x.fig.as_str()),
            Cell::text(x.workload.as_str()),
            Cell::text(x.variant.as_str()),
            Cell::text(x.reps.to_string()),
            Cell::fixed(x.mean_ops_per_s, 1),
            Cell::fixed(x.normalized, 4),
            Cell::fixed(x.normalized_min, 4),
            Cell::fixed(x.normalized_max, 4),
            Cell::fixed(x.mean_flash_waf, 4),
            Cell::opt(x.cpu_busy_share_max, |b| format!("{b:.4}")),
            Cell::opt(x.cpu_busy_share_max, |b| {
                (b > CPU_BOUND_BUSY_SHARE).to_string()
            }),
        ]);
    }
    write("normalized.csv", csv.to_csv())?;
    let rows = summary(points);
    write("summary.md", summary_markdown(&rows))?;
    write(
        "summary.json",
        serde_json::to_string_pretty(&rows).map_err(AppError::file(&dir.join("summary.json")))?,
    )?;
    if !plots {
        return Ok(files);
    }
    for (fig, title) in [
        (
            "fig9",
            "Fig. 9: filebench personalities on F2FS (fio), 5-member arrays",
        ),
        ("fig10", "Fig. 10: db_bench on F2FS, 5-member arrays"),
    ] {
        let of_fig: Vec<&Normalized> = n.iter().filter(|x| x.fig == fig).collect();
        if of_fig.is_empty() {
            continue;
        }
        let mut groups: Vec<String> = Vec::new();
        for x in &of_fig {
            if !groups.contains(&x.workload) {
                groups.push(x.workload.clone());
            }
        }
        let vs: &[&str] = if fig == "fig9" {
            &FIG9_VARIANTS
        } else {
            &FIG10_VARIANTS
        };
        let series = vs
            .iter()
            .map(|v| {
                let bars = groups
                    .iter()
                    .map(|g| {
                        of_fig
                            .iter()
                            .find(|x| &x.workload == g && x.variant == *v)
                            .map_or((f64::NAN, None), |x| {
                                (x.normalized, Some((x.normalized_min, x.normalized_max)))
                            })
                    })
                    .collect();
                (v.to_uppercase(), bars)
            })
            .collect();
        let path = dir.join(format!("{fig}.png"));
        // each design in its colour of every figure (zns_plot::raid_style)
        let color_of = |i: usize, name: &str| {
            zns_plot::raid_style(name).map_or(zns_plot::color(i), |s| s.color)
        };
        zns_plot::bar_chart_colored(
            &zns_plot::BarChart {
                title: title.into(),
                y_label: "throughput normalized to RAIZN+".into(),
                groups,
                series,
                references: vec![zns_plot::Reference::plain(1.0)],
            },
            "workload",
            &color_of,
            &path,
        )
        .map_err(crate::step)?;
        files.push(path);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn p(fig: &str, w: &str, v: &str, rep: u32, ops: f64) -> AppPoint {
        AppPoint {
            fig: fig.into(),
            workload: w.into(),
            variant: v.into(),
            rep,
            ops_per_s: ops,
            mb_per_s: None,
            stats: None,
            device_s: 0.0,
            report_file: PathBuf::new(),
            program: String::new(),
            load: None,
        }
    }

    /// With the user's programs, Fig. 9 runs filebench's personalities at
    /// the stand-ins' scale and Fig. 10 db_bench on ZenFS; without, the
    /// stand-ins stay; the summary says which ran.
    #[test]
    fn the_users_programs_replace_the_stand_ins_and_the_summary_says_so() {
        let programs = Programs {
            filebench: Some(PathBuf::from("/u/filebench")),
            db_bench: Some(PathBuf::from("/u/db_bench")),
        };
        let fig9: Vec<Case> = cases(AppFig::Fig9, false)
            .into_iter()
            .map(|c| with_programs(c, &programs))
            .collect();
        let fb = |label: &str| match &fig9.iter().find(|c| c.label == label).unwrap().workload {
            Workload::Filebench {
                program,
                personality,
                vars,
            } => {
                assert_eq!(program, Path::new("/u/filebench"));
                (personality.clone(), vars.clone())
            }
            w => panic!("{label}: {w:?}"),
        };
        let (personality, v) = fb("fileserver-1m");
        assert_eq!(personality, "fileserver");
        assert_eq!(var(&v, "IOSIZE"), "1m", "filebench's iosize, uncapped");
        assert_eq!(var(&v, "NFILES"), "10000", "filebench's default at least");
        assert_eq!(var(&v, "DIRECTIO"), ",directio");
        let (_, v) = fb("varmail");
        assert_eq!((var(&v, "NFILES"), var(&v, "DIRECTIO")), ("1008", ""));
        let quick = with_programs(cases(AppFig::Fig9, true).remove(0), &programs);
        match quick.workload {
            Workload::Filebench { vars, .. } => assert_eq!(var(&vars, "NFILES"), "10000"),
            w => panic!("{w:?}"),
        }
        match &with_programs(cases(AppFig::Fig10, true).remove(0), &programs).workload {
            Workload::ZenfsDbBench { zenfs, args, .. } => {
                assert_eq!(zenfs, Path::new("/u/zenfs"));
                assert!(args.contains(&"--benchmarks=fillseq".to_string()));
            }
            w => panic!("{w:?}"),
        }
        let none = with_programs(cases(AppFig::Fig9, true).remove(0), &Programs::default());
        assert!(matches!(none.workload, Workload::Fio { .. }));
        let mut pt = p("fig9", "oltp", "zraid", 0, 1.0);
        pt.program = Programs::default().fig9_program().into();
        let rows = summary(&[p("fig9", "oltp", "raizn+", 0, 1.0), pt]);
        let oltp = rows
            .iter()
            .find(|r| r.what.starts_with("Fig. 9 OLTP"))
            .unwrap();
        assert!(
            oltp.what
                .ends_with("[fio personalities (stand-ins for filebench)]"),
            "{}",
            oltp.what
        );
    }

    /// A summary row whose runs kept the CPU busier than the threshold says
    /// so; one below it gives the busy share only.
    #[test]
    fn cpu_bound_rows_are_flagged_in_the_summary() {
        let busy = |mut pt: AppPoint, share: f64| {
            pt.load = Some(RunLoad {
                cpu_busy_share: share,
                ..RunLoad::default()
            });
            pt
        };
        let points = [
            busy(p("fig9", "oltp", "raizn+", 0, 100.0), 0.99),
            busy(p("fig9", "oltp", "zraid", 0, 101.0), 0.5),
            busy(p("fig9", "varmail", "raizn+", 0, 100.0), 0.3),
            busy(p("fig9", "varmail", "zraid", 0, 110.0), 0.4),
        ];
        let rows = summary(&points);
        let note = |what: &str| {
            rows.iter()
                .find(|r| r.what.starts_with(what))
                .unwrap()
                .note
                .clone()
        };
        assert!(note("Fig. 9 OLTP").contains("CPU-BOUND (guest CPU up to 99 % busy"));
        let varmail = note("Fig. 9 VARMAIL: ZRAID");
        assert!(!varmail.contains("CPU-BOUND") && varmail.contains("up to 40 % busy"));
        let n = normalize(&points);
        assert_eq!(n[0].cpu_busy_share_max, Some(0.99));
        let csv = points_csv(&points);
        assert!(
            csv.lines().nth(1).unwrap().contains(",0.9900,true,"),
            "{csv}"
        );
    }

    #[test]
    fn throughput_is_normalized_to_raizn_plus_with_its_spread() {
        let points = [
            p("fig9", "oltp", "raizn+", 0, 100.0),
            p("fig9", "oltp", "raizn+", 1, 300.0),
            p("fig9", "oltp", "zraid", 0, 220.0),
            p("fig9", "oltp", "zraid", 1, 260.0),
            p("fig9", "oltp", "raizn", 0, 150.0),
            p("fig9", "varmail", "zraid", 0, 50.0),
        ];
        let n = normalize(&points);
        // varmail has no RAIZN+ point: not normalized
        assert_eq!(n.len(), 3);
        let z = n.iter().find(|x| x.variant == "zraid").unwrap();
        assert!((z.normalized - 1.2).abs() < 1e-9);
        assert!((z.normalized_min - 1.1).abs() < 1e-9);
        assert!((z.normalized_max - 1.3).abs() < 1e-9);
        assert_eq!(z.reps, 2);
        assert_eq!(n[0].variant, "raizn+");
        assert!((n[0].normalized - 1.0).abs() < 1e-9);
    }

    /// Quick options of both figures at one speed, 32 zones per member.
    fn quick_options() -> ZraidAppOptions {
        ZraidAppOptions {
            figs: vec![AppFig::Fig9, AppFig::Fig10],
            quick: true,
            reps: 1,
            speeds: FigSpeeds::all(0.01),
            member: "zn540".into(),
            member_zones: 32,
            meta: "zn540-cns".into(),
            out_dir: PathBuf::from("/tmp/x"),
            zns: PathBuf::from("zns"),
            resume: false,
            programs: Programs::default(),
        }
    }

    #[test]
    fn the_plan_interleaves_variants_and_quick_is_small() {
        let opts = ZraidAppOptions {
            reps: 3,
            ..quick_options()
        };
        let runs = plan(&opts);
        assert_eq!(runs.len(), 3 + 5);
        assert_eq!(runs[0].1, "raizn");
        assert_eq!(runs[1].1, "raizn+");
        let full = ZraidAppOptions {
            quick: false,
            ..opts
        };
        // (5 fileserver sizes + oltp + varmail) x 3 variants + 3 x 5, x 3 reps
        assert_eq!(run_count(&full), (7 * 3 + 3 * 5) * 3);
    }

    /// Each figure runs at its own speed (its serve options, the summary's
    /// words), and one check per distinct speed.
    #[test]
    fn each_figure_runs_at_its_own_speed() {
        let opts = ZraidAppOptions {
            speeds: FigSpeeds {
                fig9: 0.00194,
                fig10: 0.000194,
            },
            ..quick_options()
        };
        assert_eq!(
            serve_args(&opts, AppFig::Fig10),
            ["--zones", "32", "--speed", "0.000194"]
        );
        assert_eq!(serve_args(&opts, AppFig::Fig9)[3], "0.00194");
        assert_eq!(
            opts.speeds.describe(&opts.figs),
            "Fig. 9 at --speed 0.00194, Fig. 10 at --speed 0.000194"
        );
        assert_eq!(opts.speeds.describe(&[AppFig::Fig10]), "--speed 0.000194");
        let one = FigSpeeds::all(0.01);
        assert_eq!(one.describe(&opts.figs), "--speed 0.01");
    }

    /// `--resume` refuses runs of other speeds, and runs whose options it
    /// cannot read (a series.json from before the figures had their own
    /// speeds), before anything runs.
    #[test]
    fn resume_refuses_other_speeds_and_unreadable_series() {
        let dir = tempfile::tempdir().unwrap();
        let opts = ZraidAppOptions {
            figs: vec![AppFig::Fig10],
            out_dir: dir.path().to_path_buf(),
            // never started: the check comes first
            zns: dir.path().join("no-such-zns"),
            resume: true,
            ..quick_options()
        };
        let runs = dir.path().join("runs");
        std::fs::create_dir_all(&runs).unwrap();
        let mut series = SeriesOptions {
            serve_args: zones_args(&opts),
            speeds: FigSpeeds::all(0.02),
            member: opts.member.clone(),
            meta: opts.meta.clone(),
            quick: true,
            programs: stand_ins(),
        };
        let said = runs.join("series.json");
        std::fs::write(&said, serde_json::to_string(&series).unwrap()).unwrap();
        let e = run(&opts, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("holds runs of other options"), "{e}");
        // the older form: --speed among the serve options, no speeds
        series.speeds = opts.speeds;
        let mut old = serde_json::to_value(&series).unwrap();
        old.as_object_mut().unwrap().remove("speeds");
        old["serve_args"] = serde_json::json!(["--zones", "32", "--speed", "0.01"]);
        std::fs::write(&said, old.to_string()).unwrap();
        let e = run(&opts, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("cannot tell which options"), "{e}");
    }
}
