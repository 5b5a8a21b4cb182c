//! The host time of each application run in the ublk guest. The guest's
//! own figures are in guest time (the instruction clock); what a run cost
//! the machine that emulated it is the host's, which only the harness sees:
//! `guest_watch` (scripts/lib/guest.sh) writes every run's progress line
//! ("[  75 s] [1/15] fig10 fillseq on raizn+, rep 0") and the end of the
//! repro step with the host seconds since QEMU started into the console
//! log's `.times` file. A run's host time is from its line to the next run's
//! (the last one's to the end of the step). Host times depend on the host
//! and its load: they go beside the results (`host-times.csv`), never into
//! them.

use std::path::Path;

use crate::{outfiles, AppError};

/// One run's host time.
#[derive(Debug, Clone, PartialEq)]
pub struct RunHostTime {
    /// "1/15".
    pub run: String,
    /// "fig10 fillseq on raizn+, rep 0".
    pub label: String,
    /// Guest seconds (`zns repro`'s clock) and host seconds (since QEMU
    /// started) at the run's start.
    pub guest_start_s: f64,
    pub host_start_s: f64,
    /// Host seconds the run took.
    pub host_s: f64,
}

/// The runs in a `.times` file's text, in order; lines of other steps are
/// skipped, and a run without an end (a guest that was cut short) is left
/// out.
pub fn parse(times: &str) -> Vec<RunHostTime> {
    let mut runs: Vec<RunHostTime> = Vec::new();
    let mut open: Option<RunHostTime> = None;
    for line in times.lines() {
        let Some((host, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(host_s) = host.parse::<f64>() else {
            continue;
        };
        let run = run_line(rest);
        let ends_step = rest.starts_with("=== ZNSKIT END repro");
        if run.is_some() || ends_step {
            if let Some(mut r) = open.take() {
                r.host_s = host_s - r.host_start_s;
                runs.push(r);
            }
        }
        if let Some((guest_start_s, n, label)) = run {
            open = Some(RunHostTime {
                run: n.to_string(),
                label: label.to_string(),
                guest_start_s,
                host_start_s: host_s,
                host_s: 0.0,
            });
        }
    }
    runs
}

/// "[  75 s] [1/15] LABEL" → (75, "1/15", LABEL).
fn run_line(line: &str) -> Option<(f64, &str, &str)> {
    let rest = line.strip_prefix('[')?;
    let (guest, rest) = rest.split_once(" s] [")?;
    let guest_s = guest.trim().parse().ok()?;
    let (n, label) = rest.split_once("] ")?;
    let (i, of) = n.split_once('/')?;
    (i.parse::<u32>().is_ok() && of.parse::<u32>().is_ok()).then_some((guest_s, n, label))
}

/// Writes `host-times.csv` into `out` from the `.times` file `times`;
/// returns the runs' count and their host seconds in all. A missing file
/// (an older harness) writes nothing.
pub fn write_csv(times: &Path, out: &Path) -> Result<Option<(usize, f64)>, AppError> {
    let Ok(text) = std::fs::read_to_string(times) else {
        return Ok(None);
    };
    let runs = parse(&text);
    let mut csv = String::from("run,label,guest_start_s,host_start_s,host_s\n");
    for r in &runs {
        csv += &format!(
            "{},\"{}\",{:.0},{:.1},{:.1}\n",
            r.run,
            r.label.replace('"', "\"\""),
            r.guest_start_s,
            r.host_start_s,
            r.host_s
        );
    }
    outfiles::write(out, "host-times.csv", csv)?;
    Ok(Some((runs.len(), runs.iter().map(|r| r.host_s).sum())))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMES: &str = "16.7 === ZNSKIT BEGIN boot
22.5 === ZNSKIT END boot rc=0 (guest uptime 5.75 s)
22.5 === ZNSKIT BEGIN repro
100.0 [   75 s] [1/3] fig10 fillseq on raizn+, rep 0
340.5 [ 1582 s] [2/3] fig10 fillseq on z, rep 0
400.0 [ 1590 s] speed check: not a run
580.0 [ 2908 s] [3/3] fig10 fillseq on \"z+s\", rep 0
700.25 === ZNSKIT END repro rc=0
701.0 === ZNSKIT BEGIN share-back
";

    #[test]
    fn each_run_lasts_until_the_next_and_the_last_until_the_step_ends() {
        let runs = parse(TIMES);
        let got: Vec<(&str, f64, f64, f64)> = runs
            .iter()
            .map(|r| (r.run.as_str(), r.guest_start_s, r.host_start_s, r.host_s))
            .collect();
        assert_eq!(
            got,
            [
                ("1/3", 75.0, 100.0, 240.5),
                ("2/3", 1582.0, 340.5, 239.5),
                ("3/3", 2908.0, 580.0, 120.25)
            ]
        );
        assert_eq!(runs[1].label, "fig10 fillseq on z, rep 0");
    }

    #[test]
    fn a_run_cut_short_is_left_out() {
        let cut = "10.0 [ 0 s] [1/2] a\n20.0 [ 5 s] [2/2] b\n";
        let runs = parse(cut);
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].label.as_str(), runs[0].host_s), ("a", 10.0));
    }

    #[test]
    fn the_csv_quotes_labels() {
        let dir = tempfile::tempdir().unwrap();
        let times = dir.path().join("console.log.times");
        std::fs::write(&times, TIMES).unwrap();
        let (n, total) = write_csv(&times, dir.path()).unwrap().unwrap();
        assert_eq!(n, 3);
        assert!((total - 600.25).abs() < 1e-9);
        let csv = std::fs::read_to_string(dir.path().join("host-times.csv")).unwrap();
        assert!(
            csv.contains("3/3,\"fig10 fillseq on \"\"z+s\"\", rep 0\",2908,580.0,120.2"),
            "{csv}"
        );
        assert!(write_csv(&dir.path().join("none"), dir.path())
            .unwrap()
            .is_none());
    }
}
