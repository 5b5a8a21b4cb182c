//! Errors of job parsing: [`JobError`], each naming the option and where it
//! was given ([`Location`]), with user text clipped and a "did you mean".

use std::fmt;

use thiserror::Error;

/// Where an option came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// Line of a job file (1-based).
    Line { file: String, line: usize },
    /// Command-line argument (0-based index among the parsed args).
    Arg { index: usize, arg: String },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line { file, line } => write!(f, "{file}:{line}"),
            Location::Arg { index, arg } => write!(f, "argument {index} `{arg}`"),
        }
    }
}

fn did_you_mean(s: &Option<&'static str>) -> String {
    match s {
        Some(n) => format!(" (did you mean `{n}`?)"),
        None => String::new(),
    }
}

/// User text quoted in an error, cut to 80 characters: a 10 MB option
/// name must not make a 10 MB message.
fn clip(text: &str) -> String {
    const MAX_CHARS: usize = 80;
    match text.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
        None => text.to_string(),
    }
}

#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum JobError {
    #[error("{at}: unknown option `{}`{}", clip(.option), did_you_mean(.suggestion))]
    UnknownOption {
        at: Location,
        option: String,
        suggestion: Option<&'static str>,
    },
    #[error("{at}: bad value `{}` for option `{option}`: expected {expected}", clip(.value))]
    BadValue {
        at: Location,
        option: String,
        value: String,
        expected: String,
    },
    #[error("{at}: value `{}` out of range for option `{option}`: {reason}", clip(.value))]
    OutOfRange {
        at: Location,
        option: String,
        value: String,
        reason: String,
    },
    #[error("{at}: duplicate job section `{}`", clip(.section))]
    DuplicateSection { at: Location, section: String },
    #[error("{at}: option `{}` appears before any [section]", clip(.option))]
    OutsideSection { at: Location, option: String },
    #[error("{at}: cannot parse `{}`: {reason}", clip(.text))]
    Syntax {
        at: Location,
        text: String,
        reason: String,
    },
    #[error("{at}: job `{}`: {reason}", clip(.job))]
    Conflict {
        at: Location,
        job: String,
        reason: String,
    },
    #[error("no jobs defined{}", .0.as_ref().map(|f| format!(" in {f}")).unwrap_or_default())]
    NoJobs(Option<String>),
}
