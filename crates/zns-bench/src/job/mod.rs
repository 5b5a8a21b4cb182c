//! fio job descriptions: INI job files and fio-style `--name=… --rw=…`
//! command lines, parsed into fully resolved, typed [`JobSpec`]s.
//!
//! Every option znskit understands is one row of [`OPTIONS`] (name, aliases,
//! kind, default, help, whether it is a znskit extension). Parsing is driven
//! by that table: a value is checked against the row's [`OptKind`], defaults
//! are parsed by the same code as user input, and the typed [`JobSpec`] is
//! extracted at the end. Unknown options, malformed values and out-of-range
//! values are errors that name the option and where it was given; nothing is
//! silently ignored, and no input makes the parser panic.
//!
//! Sizes follow fio's default `kb_base=1024`: `k`/`K`/`KB` mean 1024 and, as
//! fio documents for that default, the IEC-looking `Ki`/`KiB` mean 1000
//! (fio keeps the prefixes "opposite" to the standards for old scripts).
//! `%` and the `z` (zones) suffix are kept symbolic in [`SizeSpec`] and
//! resolved later against a device.
//!
//! Files: `options` holds the option table and its look-ups, `value` the
//! values options take and their parsers, `spec` a job's options as given
//! and the typed [`JobSpec`] extracted from them, `error` the errors; this
//! module the job-file and command-line parsers.

mod error;
mod options;
mod spec;
mod value;

pub use error::{JobError, Location};
pub use options::{
    find_option, option_help, suggest_option, OptKind, OptionDef, DEFAULT_PERCENTILES, OPTIONS,
};
pub use spec::{HostStack, IoEngine, JobSpec, Precondition, Rw, ZoneMode, ZoneOp};
pub use value::{
    parse_cpu_list, parse_size, parse_time, parse_zone_fill, BlockSizeDist, BlockSizes, Ddir,
    LogSpec, RateSpec, SizeSpec, Value, ZoneFill,
};

use spec::{resolve, OptSet, Section};

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// Collects sections in order, applying each `[global]` to later jobs only.
#[derive(Default)]
struct Builder {
    global: OptSet,
    jobs: Vec<Section>,
    in_global: bool,
}

impl Builder {
    fn start_job(&mut self, name: &str, at: Location) -> Result<(), JobError> {
        if self.jobs.iter().any(|j| j.name == name) {
            return Err(JobError::DuplicateSection {
                at,
                section: name.to_string(),
            });
        }
        self.in_global = false;
        let mut opts = self.global.clone();
        opts.name_set_locally = false;
        self.jobs.push(Section {
            name: name.to_string(),
            at,
            opts,
        });
        Ok(())
    }

    /// Sets option `key` in the section being read (`[global]` or the
    /// current job).
    fn set(&mut self, key: &str, value: Option<&str>, at: &Location) -> Result<(), JobError> {
        match self.current() {
            Some(set) => set.set(key, value, at),
            None => Err(JobError::OutsideSection {
                at: at.clone(),
                option: key.to_string(),
            }),
        }
    }

    fn current(&mut self) -> Option<&mut OptSet> {
        if self.in_global {
            Some(&mut self.global)
        } else {
            self.jobs.last_mut().map(|j| &mut j.opts)
        }
    }

    fn finish(self, file: Option<&str>) -> Result<Vec<JobSpec>, JobError> {
        if self.jobs.is_empty() {
            return Err(JobError::NoJobs(file.map(str::to_string)));
        }
        let mut out = Vec::with_capacity(self.jobs.len());
        let mut group = 0u32;
        for (i, s) in self.jobs.into_iter().enumerate() {
            let spec = resolve(&s, group)?;
            if spec.stonewall && i > 0 {
                group = group.saturating_add(1);
            }
            let spec = JobSpec { group, ..spec };
            out.push(spec);
        }
        Ok(out)
    }
}

/// Parse an INI fio job file. `file` is used in error messages.
pub fn parse_job_file(text: &str, file: &str) -> Result<Vec<JobSpec>, JobError> {
    parse_job_file_with_args(text, file, &[] as &[&str])
}

/// Parse an INI fio job file with command-line job options given before it
/// (`fio --filename=/dev/nvme0n2 job.fio`): those `--option=value`
/// arguments act as an initial `[global]` section, so the file's own
/// `[global]` and job sections override them.
pub fn parse_job_file_with_args<S: AsRef<str>>(
    text: &str,
    file: &str,
    cli_globals: &[S],
) -> Result<Vec<JobSpec>, JobError> {
    let mut b = Builder::default();
    for_each_arg(cli_globals, |at, arg, key, value| {
        if key == "name" {
            return Err(JobError::Syntax {
                at,
                text: arg.to_string(),
                reason: "--name cannot be combined with a job file".into(),
            });
        }
        b.global.set(key, value, &at)
    })?;
    let mut have_section = false;
    for (idx, raw_line) in text.lines().enumerate() {
        let at = Location::Line {
            file: file.to_string(),
            line: idx + 1,
        };
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            // (a comment may follow the header: `[job] ; why`, as fio allows)
            let rest = strip_trailing_comment(rest);
            let Some(name) = rest.strip_suffix(']') else {
                return Err(JobError::Syntax {
                    at,
                    text: line.to_string(),
                    reason: "section header is missing `]`".into(),
                });
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(JobError::Syntax {
                    at,
                    text: line.to_string(),
                    reason: "empty section name".into(),
                });
            }
            have_section = true;
            if name == "global" {
                b.in_global = true;
            } else {
                b.start_job(name, at)?;
            }
            continue;
        }
        // strip a trailing comment introduced by whitespace + ; or #
        let line = strip_trailing_comment(line);
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (line.trim(), None),
        };
        if key.is_empty() {
            return Err(JobError::Syntax {
                at,
                text: line.to_string(),
                reason: "missing option name before `=`".into(),
            });
        }
        if !have_section {
            return Err(JobError::OutsideSection {
                at,
                option: key.to_string(),
            });
        }
        b.set(key, value, &at)?;
    }
    b.finish(Some(file))
}

fn strip_trailing_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        if (c == b';' || c == b'#') && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            return line[..i].trim_end();
        }
    }
    line
}

/// Parse fio-style command-line job options (`--name=a --rw=write …`). Each
/// `--name` starts a new job; options before the first `--name` are global.
/// Only job options are accepted here (the caller handles `--output-format`
/// and job-file paths).
pub fn parse_args<I, S>(args: I) -> Result<Vec<JobSpec>, JobError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut b = Builder {
        in_global: true,
        ..Builder::default()
    };
    for_each_arg(args, |at, _, key, value| {
        if key == "name" {
            let name = value.map(str::trim).unwrap_or("");
            if name.is_empty() {
                return Err(JobError::BadValue {
                    at,
                    option: "name".into(),
                    value: String::new(),
                    expected: OptKind::Str.expected(),
                });
            }
            return b.start_job(name, at);
        }
        b.set(key, value, &at)
    })?;
    b.finish(None)
}

/// Hands each command-line argument (`--option[=value]`) to `f` with where
/// it was given, the argument, its option name and its value, stopping at
/// the first error.
fn for_each_arg<S: AsRef<str>>(
    args: impl IntoIterator<Item = S>,
    mut f: impl FnMut(Location, &str, &str, Option<&str>) -> Result<(), JobError>,
) -> Result<(), JobError> {
    for (index, arg) in args.into_iter().enumerate() {
        let arg = arg.as_ref();
        let at = Location::Arg {
            index,
            arg: arg.to_string(),
        };
        let (key, value) = split_arg(arg, &at)?;
        f(at, arg, key, value)?;
    }
    Ok(())
}

/// Split `--key[=value]`.
fn split_arg<'a>(arg: &'a str, at: &Location) -> Result<(&'a str, Option<&'a str>), JobError> {
    let syntax = |reason: &str| JobError::Syntax {
        at: at.clone(),
        text: arg.to_string(),
        reason: reason.into(),
    };
    let body = arg
        .strip_prefix("--")
        .ok_or_else(|| syntax("expected `--option=value`"))?;
    let (key, value) = match body.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v)),
        None => (body.trim(), None),
    };
    if key.is_empty() {
        return Err(syntax("missing option name"));
    }
    Ok((key, value))
}
/// Jobs of several job files run one after another, as fio runs them:
/// each file's groups follow the previous file's (so every file starts a new
/// reporting group, as if its first job had `stonewall`), on the same
/// devices, so a read file can follow the file that writes its data.
pub fn chain_files(files: impl IntoIterator<Item = Vec<JobSpec>>) -> Vec<JobSpec> {
    let mut all: Vec<JobSpec> = Vec::new();
    for mut jobs in files {
        let base = all.last().map_or(0, |j| j.group + 1);
        for j in &mut jobs {
            j.group += base;
        }
        all.extend(jobs);
    }
    all
}
