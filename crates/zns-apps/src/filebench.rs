//! filebench itself, where the user has it (`--filebench PATH`,
//! [`crate::programs`]): the personalities of workloads/filebench/*.f
//! (znskit's own text of FILESERVER, OLTP and VARMAIL with the ZRAID
//! paper's changes), their `@NAME@` placeholders filled in, run under
//! `setarch ARCH -R` (filebench hangs with address-space randomisation on:
//! its processes map shared memory at the address the first one got), and
//! the figures of its `IO Summary:` line.

use std::path::Path;

use serde::Serialize;

use crate::{run, AppError};

/// The personalities, embedded so that `zns` needs no checkout.
pub const PERSONALITIES: [(&str, &str); 3] = [
    (
        "fileserver",
        include_str!("../../../workloads/filebench/fileserver.f"),
    ),
    ("oltp", include_str!("../../../workloads/filebench/oltp.f")),
    (
        "varmail",
        include_str!("../../../workloads/filebench/varmail.f"),
    ),
];

/// The figures of filebench's summary line (`IO Summary: 1234 ops 20.565
/// ops/s 9/10 rd/wr 1.2mb/s 48.6ms/op`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FilebenchResult {
    pub ops: u64,
    pub ops_per_s: f64,
    pub mb_per_s: Option<f64>,
    pub ms_per_op: Option<f64>,
}

/// The personality `name` with `vars` (`NAME` → value) put in for its
/// `@NAME@` placeholders; an error names a placeholder left unset.
pub fn personality(name: &str, vars: &[(String, String)]) -> Result<String, AppError> {
    let mut text = PERSONALITIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t.to_string())
        .ok_or_else(|| AppError::Invalid(format!("no filebench personality {name}")))?;
    for (k, v) in vars {
        text = text.replace(&format!("@{k}@"), v);
    }
    // (placeholders are upper-case words between '@'s; the comments name
    // them too, so look in the lines filebench reads)
    if let Some(line) = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find(|l| l.split('@').skip(1).step_by(2).any(is_placeholder))
    {
        return Err(AppError::Invalid(format!(
            "filebench personality {name}: a placeholder is not set: {line}"
        )));
    }
    Ok(text)
}

fn is_placeholder(word: &str) -> bool {
    !word.is_empty() && word.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
}

/// The summary line's figures in a filebench report.
pub fn parse_report(report: &str) -> Option<FilebenchResult> {
    let line = report.lines().rev().find(|l| l.contains("IO Summary:"))?;
    let words: Vec<&str> = line[line.find("IO Summary:")? + 11..]
        .split_whitespace()
        .collect();
    let before = |unit: &str| -> Option<&str> {
        let i = words.iter().position(|w| *w == unit)?;
        words.get(i.checked_sub(1)?).copied()
    };
    let suffixed = |suffix: &str| -> Option<f64> {
        words
            .iter()
            .find_map(|w| w.strip_suffix(suffix))
            .and_then(|v| v.parse().ok())
    };
    Some(FilebenchResult {
        ops: before("ops")?.parse().ok()?,
        ops_per_s: before("ops/s")?.parse().ok()?,
        mb_per_s: suffixed("mb/s"),
        ms_per_op: suffixed("ms/op"),
    })
}

/// Runs `filebench -f JOB` under `setarch ARCH -R`; the figures and the
/// report (stdout and stderr).
pub fn run_filebench(filebench: &Path, job: &Path) -> Result<(FilebenchResult, String), AppError> {
    let program = filebench.to_string_lossy();
    let job = job.to_string_lossy();
    let out = run(
        "setarch",
        &[std::env::consts::ARCH, "-R", &program, "-f", &job],
        &[],
    )?;
    let result = parse_report(&out).ok_or_else(|| AppError::Report {
        program: "filebench".into(),
        what: format!("no IO Summary line in its report:\n{out}"),
    })?;
    Ok((result, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_gives_the_figures() {
        let report = "0.000: Allocated 177MB of shared memory\n\
            62.001: Shutting down processes\n\
            62.003: IO Summary: 135227 ops 2253.690 ops/s 205/410 rd/wr  53.4mb/s 21.974ms/op\n";
        assert_eq!(
            parse_report(report),
            Some(FilebenchResult {
                ops: 135227,
                ops_per_s: 2253.69,
                mb_per_s: Some(53.4),
                ms_per_op: Some(21.974),
            })
        );
        assert_eq!(parse_report("62.001: Shutting down processes\n"), None);
        assert_eq!(parse_report("IO Summary: x ops 1 ops/s\n"), None);
    }

    #[test]
    fn personalities_are_filled_in_and_an_unset_placeholder_is_refused() {
        let vars = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let all = vars(&[
            ("DIR", "/mnt"),
            ("NFILES", "200"),
            ("IOSIZE", "4k"),
            ("RUNTIME", "8"),
            ("DIRECTIO", ",directio"),
        ]);
        for (name, _) in PERSONALITIES {
            let text = personality(name, &all).unwrap();
            assert!(
                text.contains("set $dir=/mnt") && text.contains("run 8"),
                "{name}"
            );
        }
        let fs = personality("fileserver", &all).unwrap();
        assert!(fs.contains("iosize=$iosize,directio"), "{fs}");
        let err = personality("fileserver", &all[..3])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("@RUNTIME@") || err.contains("@DIRECTIO@"),
            "{err}"
        );
        assert!(personality("webserver", &all).is_err());
    }
}
