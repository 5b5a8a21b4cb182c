//! `zns bench`: run fio job files or fio-style `--name=… --rw=…` job
//! options against emulated devices in virtual time; print fio's normal
//! output or fio's JSON.
//!
//! The arguments are parsed by hand rather than by clap, because they follow
//! fio's shapes: any `--option=value` that is not one of `zns bench`'s own
//! flags is a job option (checked against zns-bench's option table), words
//! are job files, and `--name` starts a new job.

use std::path::PathBuf;
use std::process::ExitCode;

use zns_bench::job::{self, JobSpec};
use zns_bench::run::{self, RunError, RunReport};

use crate::CliError;

pub const HELP: &str = "\
Run fio jobs against emulated ZNS devices in deterministic virtual time.

Usage: zns bench [OPTIONS] [JOBFILE|-]... [--JOBOPTION=VALUE]...

A job is described like fio's: an INI job file ([global] plus one section
per job) or fio-style options on the command line, where each --name=NAME
starts a new job and options before the first --name apply to all jobs. With
job files, command-line job options (no --name) act as global options that
the files' own sections override, as with `fio --filename=... job.fio`.
Several job files run one after another, as fio runs them (each file is a
new reporting group), on the same devices: a read file can follow the file
that writes its data. The device is `filename=`: a built-in profile (`zns
info --list` lists them: zn540, zn540-cns, the sn540 block SSDs, tiny, ...),
a profile TOML file, an image made by `zns create`, a `raid:` array or a real
zoned device (/dev/…, linux:…) (docs/targets.md); each `zns bench` starts
from fresh devices, except an image, which keeps what earlier runs wrote.

Options:
      --output-format=FMT  normal (fio's text, default), json, json+ (json
                           with latency histogram bins), terse (fio's
                           semicolon line per job, version 3), or a list
                           (json,normal: the JSON document, then the text),
                           like fio
      --minimal            the terse format, as fio's --minimal
      --output=FILE        write the report to FILE instead of stdout
      --seed=N             seed of the virtual-time run (default 0): the same
                           jobs and seed give the same numbers, bit for bit
      --section=NAME       run only the job named NAME (repeatable)
      --eta=WHEN           progress bar on stderr: auto (default: only when
                           stderr is a terminal), always, never
      --cmdhelp[=OPTION]   list the job options (or explain one), like fio
  -h, --help               this help

Examples:
  zns bench examples/fio/seqwrite.fio
        the fio ZNS examples page's sequential write (14 jobs, 8 zones each)
  zns bench --host_stack=spdk examples/fio/seqwrite.fio
        the same through a modelled SPDK host stack (command-line job
        options act as [global]; the file's own settings win over them)
  zns bench --name=seqwrite --filename=zn540 --rw=write --bs=64k --direct=1 \\
            --zonemode=zbd --offset_increment=8z --size=8z --numjobs=14 \\
            --group_reporting
        the same job written as fio arguments
  zns bench examples/fio/write-prepare.fio examples/fio/seqread.fio
        write the zones, then read them back (the files run in turn)
  zns bench --output-format=json examples/fio/write-prepare.fio \\
            examples/fio/randread.fio | jq '.jobs[1].read.iops'
        fio's JSON: jobs[].read/write with bw (KiB/s), iops, clat_ns percentiles
  zns bench --cmdhelp=zonemode
        what a job option does and what it takes

Exit codes: 0 ok; 1 an I/O failed during the run (the NVMe status is
printed); 2 wrong arguments; 3 a bad job file or job (unknown option, bad
value, a job the device cannot run); 4 a file could not be read or written.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Normal,
    Json,
    JsonPlus,
    /// fio's terse v3 lines (printed first, as fio prints them per job).
    Terse,
}

pub use crate::progress::Eta;

#[derive(Debug)]
struct BenchArgs {
    files: Vec<PathBuf>,
    job_args: Vec<String>,
    /// The report's formats; several are printed as fio prints them: the
    /// JSON document first, then the text.
    formats: Vec<Format>,
    output: Option<PathBuf>,
    seed: u64,
    sections: Vec<String>,
    eta: Eta,
    cmdhelp: Option<Option<String>>,
    help: bool,
}

/// zns bench's own flags, each taking a value (`--flag=V` or `--flag V`).
const OWN_FLAGS: [&str; 5] = ["output-format", "output", "seed", "section", "eta"];

fn parse(args: Vec<String>) -> Result<BenchArgs, CliError> {
    let mut a = BenchArgs {
        files: Vec::new(),
        job_args: Vec::new(),
        formats: vec![Format::Normal],
        output: None,
        seed: 0,
        sections: Vec::new(),
        eta: Eta::Auto,
        cmdhelp: None,
        help: false,
    };
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        if arg == "-h" || arg == "--help" {
            a.help = true;
            continue;
        }
        let Some(body) = arg.strip_prefix("--") else {
            if arg.starts_with('-') && arg.len() > 1 {
                return Err(CliError::Usage(format!(
                    "bench: unknown flag `{arg}` (job options are written --option=value; see zns bench --help)"
                )));
            }
            a.files.push(PathBuf::from(arg));
            continue;
        };
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (body, None),
        };
        if key == "cmdhelp" || key == "help-options" {
            a.cmdhelp = Some(value.filter(|v| !v.is_empty() && v != "all"));
            continue;
        }
        if key == "minimal" && value.is_none() {
            // fio's --minimal: the terse format alone
            a.formats = vec![Format::Terse];
            continue;
        }
        if key == "json" {
            return Err(CliError::Usage(
                "bench: --json: zns bench takes fio's --output-format=json (or json+)".into(),
            ));
        }
        if !OWN_FLAGS.contains(&key) {
            a.job_args.push(arg);
            continue;
        }
        let value = match value {
            Some(v) => v,
            None => it.next().ok_or_else(|| {
                CliError::Usage(format!("bench: --{key} needs a value (--{key}=VALUE)"))
            })?,
        };
        match key {
            "output-format" => {
                a.formats.clear();
                for f in value.split(',').map(str::trim) {
                    let f = match f {
                        "normal" => Format::Normal,
                        "json" => Format::Json,
                        "json+" => Format::JsonPlus,
                        "terse" => Format::Terse,
                        other => {
                            return Err(CliError::Usage(format!(
                                "bench: --output-format={other}: expected normal, terse, json or json+, or a comma-separated list of them (json,normal)"
                            )))
                        }
                    };
                    if !a.formats.contains(&f) {
                        a.formats.push(f);
                    }
                }
            }
            "output" => a.output = Some(PathBuf::from(value)),
            "seed" => {
                a.seed = value.trim().parse().map_err(|_| {
                    CliError::Usage(format!(
                        "bench: --seed={value}: expected a non-negative integer"
                    ))
                })?
            }
            "section" => a.sections.push(value),
            "eta" => {
                a.eta = value
                    .parse()
                    .map_err(|e| CliError::Usage(format!("bench: {e}")))?
            }
            _ => unreachable!("OWN_FLAGS covers the keys matched above"),
        }
    }
    Ok(a)
}

/// `--cmdhelp`: every option, or one option explained.
fn cmdhelp(which: Option<&str>) -> Result<String, CliError> {
    let Some(name) = which else {
        return Ok(job::option_help());
    };
    let def = job::find_option(name).ok_or_else(|| {
        let hint = job::suggest_option(name)
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        CliError::Usage(format!(
            "bench: --cmdhelp={name}: no such job option{hint}; `zns bench --cmdhelp` lists them"
        ))
    })?;
    let mut s = format!("{:<20}: {}\n", def.name, def.help);
    if !def.aliases.is_empty() {
        s.push_str(&format!("{:<20}: {}\n", "alias", def.aliases.join(", ")));
    }
    s.push_str(&format!("{:<20}: {}\n", "type", def.kind.expected()));
    if let Some(d) = def.default {
        s.push_str(&format!("{:<20}: {d}\n", "default"));
    }
    if def.extension {
        s.push_str(&format!(
            "{:<20}: a znskit extension, not a stock fio option\n",
            "note"
        ));
    }
    Ok(s)
}

/// The jobs the arguments describe.
fn specs(a: &BenchArgs) -> Result<Vec<JobSpec>, CliError> {
    if a.files.is_empty() {
        if a.job_args.is_empty() {
            return Err(CliError::Usage(
                "bench: no jobs: give a job file or job options starting with --name=NAME \
                 (see zns bench --help)"
                    .into(),
            ));
        }
        return job::parse_args(&a.job_args).map_err(|e| CliError::Input(e.to_string()));
    }
    if let Some(n) = a
        .job_args
        .iter()
        .find(|s| s.starts_with("--name=") || *s == "--name")
    {
        return Err(CliError::Usage(format!(
            "bench: `{n}` cannot be combined with a job file: put the job in a file, or run it on its own"
        )));
    }
    let mut files: Vec<Vec<JobSpec>> = Vec::new();
    for path in &a.files {
        // `-`: the job file on stdin, as `fio -` reads it
        let text = if path.as_os_str() == "-" {
            let mut t = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
                .map_err(|e| CliError::Input(format!("-: the job file on stdin: {e}")))?;
            t
        } else {
            crate::read_text(path, "fio job file")?
        };
        // fio's text rules first: `include FILE` lines and `${NAME}`s
        let text =
            zns_bench::jobtext::expand(&text, path, &|name| std::env::var(name).ok(), &|p| {
                std::fs::read_to_string(p).map_err(|e| e.to_string())
            })
            .map_err(CliError::Input)?;
        files.push(
            job::parse_job_file_with_args(&text, &path.display().to_string(), &a.job_args)
                .map_err(|e| CliError::Input(e.to_string()))?,
        );
    }
    Ok(job::chain_files(files))
}

fn select_sections(specs: Vec<JobSpec>, sections: &[String]) -> Result<Vec<JobSpec>, CliError> {
    if sections.is_empty() {
        return Ok(specs);
    }
    if let Some(missing) = sections
        .iter()
        .find(|s| !specs.iter().any(|j| &j.name == *s))
    {
        let names: Vec<&str> = specs.iter().map(|j| j.name.as_str()).collect();
        return Err(CliError::Usage(format!(
            "bench: --section={missing}: no such job (jobs: {})",
            names.join(", ")
        )));
    }
    Ok(specs
        .into_iter()
        .filter(|j| sections.contains(&j.name))
        .collect())
}

/// Whether files named `PREFIX_….log` (fio's log naming) can be made: the
/// prefix's directory exists and takes a new file.
fn check_writable_dir(prefix: &str) -> std::io::Result<()> {
    let dir = match std::path::Path::new(prefix).parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let probe = dir.join(format!(".zns-bench-log-check.{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

/// Whether a device that could not be opened failed on the OS's side (an
/// image another process holds, a file the OS refused): exit 4, as every
/// other command gives for it, not bad input.
fn os_side(e: &zns_target::TargetError) -> bool {
    use zns_device::{DeviceError, StoreError};
    match e {
        zns_target::TargetError::Device {
            source: DeviceError::Store(StoreError::Io { .. } | StoreError::InUse { .. }),
            ..
        } => true,
        zns_target::TargetError::Context { source, .. } => os_side(source),
        _ => false,
    }
}

fn run_error(e: RunError) -> CliError {
    match e {
        RunError::Io { .. } => CliError::Failed(e.to_string()),
        RunError::Target { ref source, .. } if os_side(source) => CliError::Io(e.to_string()),
        // a setup error, or one a later version adds: the jobs' fault
        _ => CliError::Input(e.to_string()),
    }
}

/// Runs the jobs, with a progress bar on stderr when asked for.
fn execute(specs: &[JobSpec], seed: u64, eta: Eta) -> Result<RunReport, CliError> {
    let interrupted = &|| crate::interrupt::received();
    crate::interrupt::watch();
    let Some(bar) = crate::progress::bar(
        eta,
        1000,
        "{prefix} [{bar:30}] {percent:>3}% {msg} (host {elapsed})",
    ) else {
        let say = &mut |p: &run::Progress| {
            for note in &p.notes {
                eprintln!("zns bench: note: {note}");
            }
        };
        return run::run_jobs_interruptible(specs, seed, say, interrupted).map_err(run_error);
    };
    let mut last_group = u32::MAX;
    let r = run::run_jobs_interruptible(
        specs,
        seed,
        &mut |p: &run::Progress| {
            for note in &p.notes {
                bar.suspend(|| eprintln!("zns bench: note: {note}"));
            }
            if p.group != last_group {
                last_group = p.group;
                bar.set_prefix(format!("group {}/{}", p.group + 1, p.groups.max(1)));
            }
            let groups = u64::from(p.groups.max(1));
            let done = (u64::from(p.group) * 1000
                + (p.done_fraction.clamp(0.0, 1.0) * 1000.0) as u64)
                / groups;
            bar.set_position(done.min(1000));
            bar.set_message(format!(
                "virtual {:.3}s, {} reads, {} writes",
                p.virtual_ns as f64 / 1e9,
                p.read_ios,
                p.write_ios
            ));
        },
        interrupted,
    );
    bar.finish_and_clear();
    r.map_err(run_error)
}

/// The report in the chosen format.
pub fn render(report: &RunReport, plus: bool, normal: bool) -> String {
    let json = if plus {
        report.to_fio_json_plus()
    } else {
        report.to_fio_json()
    };
    if normal {
        return zns_bench::text::fio_text(&json);
    }
    let mut s = serde_json::to_string_pretty(&json).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

pub fn bench(args: Vec<String>) -> Result<ExitCode, CliError> {
    let a = parse(args)?;
    if a.help {
        outln!("{HELP}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(which) = &a.cmdhelp {
        out!("{}", cmdhelp(which.as_deref())?);
        return Ok(ExitCode::SUCCESS);
    }
    let specs = select_sections(specs(&a)?, &a.sections)?;
    // a real device that is not there is an I/O error on a file (exit 4),
    // found before anything runs
    for name in specs.iter().filter_map(|j| j.filename.as_deref()) {
        if let Some(path) = zns_target::spec::linux_device_path(name) {
            if !std::path::Path::new(path).exists() {
                return Err(CliError::Io(format!(
                    "filename={name}: {path}: no such device"
                )));
            }
        }
    }
    // every output is checked before the run (as fio opens its output
    // first): a report that cannot be written is not found out after hours
    let io_err = |path: &std::path::Path, e: std::io::Error| {
        CliError::Io(format!("{}: {e}", path.display()))
    };
    let mut output = match &a.output {
        Some(path) => Some(std::fs::File::create(path).map_err(|e| io_err(path, e))?),
        None => None,
    };
    for prefix in specs.iter().flat_map(|j| {
        let l = &j.logs;
        [&l.lat, &l.bw, &l.iops].into_iter().flatten()
    }) {
        check_writable_dir(prefix).map_err(|e| CliError::Io(format!("{prefix}: {e}")))?;
    }
    let report = execute(&specs, a.seed, a.eta)?;
    // json+ includes json; the JSON document, then the text (fio's order)
    let has = |f: Format| a.formats.contains(&f);
    let mut text = String::new();
    if has(Format::Terse) {
        text.push_str(&zns_bench::terse::fio_terse(&report.to_fio_json()));
    }
    if has(Format::JsonPlus) || has(Format::Json) {
        text.push_str(&render(&report, has(Format::JsonPlus), false));
    }
    if has(Format::Normal) {
        text.push_str(&render(&report, false, true));
    }
    match (&mut output, &a.output) {
        (Some(file), Some(path)) => {
            std::io::Write::write_all(file, text.as_bytes()).map_err(|e| io_err(path, e))?
        }
        // a full disk loses the report: an error (exit 4), not success
        _ => out!("{text}"),
    }
    // fio's log files, where fio writes them: the working directory
    for log in &report.io_logs {
        for (name, text) in log.files() {
            std::fs::write(&name, text).map_err(|e| CliError::Io(format!("{name}: {e}")))?;
        }
    }
    if report.interrupted {
        eprintln!(
            "zns bench: interrupted ({}): the report covers what ran until then",
            crate::interrupt::name()
        );
        return Ok(crate::interrupt::exit_code());
    }
    // a job that ended on an I/O error is in the report (fio's `error`,
    // `err=`), and the run fails after it (exit 1), as fio's does
    let failures = report.failures();
    if !failures.is_empty() {
        return Err(CliError::Failed(failures.join("; ")));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sorts_own_flags_files_and_job_options() {
        let a = parse(v(&[
            "--size=1z",
            "job.fio",
            "--output-format=json+",
            "--seed",
            "7",
            "--section=write",
            "--output",
            "out.json",
            "--eta=never",
        ]))
        .unwrap();
        assert_eq!(a.files, vec![PathBuf::from("job.fio")]);
        assert_eq!(a.job_args, v(&["--size=1z"]));
        assert_eq!(a.formats, vec![Format::JsonPlus]);
        assert_eq!(a.seed, 7);
        let both = parse(v(&["--output-format=json,normal", "-"])).unwrap();
        assert_eq!(both.formats, vec![Format::Json, Format::Normal]);
        assert_eq!(
            parse(v(&["--minimal"])).unwrap().formats,
            vec![Format::Terse]
        );
        let terse = parse(v(&["--output-format=terse,json"])).unwrap();
        assert_eq!(terse.formats, vec![Format::Terse, Format::Json]);
        assert_eq!(both.files, vec![PathBuf::from("-")]);
        assert_eq!(a.sections, v(&["write"]));
        assert_eq!(a.output, Some(PathBuf::from("out.json")));
        assert_eq!(a.eta, Eta::Never);
        assert!(parse(v(&["--cmdhelp"])).unwrap().cmdhelp == Some(None));
        assert!(parse(v(&["--cmdhelp=all"])).unwrap().cmdhelp == Some(None));
        assert_eq!(
            parse(v(&["--cmdhelp=bs"])).unwrap().cmdhelp,
            Some(Some("bs".into()))
        );
    }

    #[test]
    fn usage_errors() {
        for bad in [
            &["--output-format=xml"][..],
            &["--output-format=json,xml"],
            &["--output-format=terse,csv"],
            &["--json"],
            &["--seed=x"],
            &["--eta=sometimes"],
            &["-x"],
            &["--output"],
        ] {
            assert!(matches!(parse(v(bad)), Err(CliError::Usage(_))), "{bad:?}");
        }
        let a = parse(v(&["job.fio", "--name=x"])).unwrap();
        assert!(matches!(specs(&a), Err(CliError::Usage(_))));
        let a = parse(v(&[])).unwrap();
        assert!(matches!(specs(&a), Err(CliError::Usage(_))));
    }

    #[test]
    fn cmdhelp_explains_an_option() {
        let s = cmdhelp(Some("zonemode")).unwrap();
        assert!(s.starts_with("zonemode"), "{s}");
        assert!(s.contains("zbd"), "{s}");
        assert!(cmdhelp(None).unwrap().lines().count() > 20);
        match cmdhelp(Some("blocksiz")) {
            Err(CliError::Usage(m)) => assert!(m.contains("did you mean"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
