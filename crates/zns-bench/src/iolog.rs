//! fio's per-I/O log files (`write_lat_log`, `write_bw_log`,
//! `write_iops_log`): what a run records for them ([`LoggedIo`], one per
//! measured I/O) and the files' text in fio's format, checked against fio
//! 3.33's output (docs/bench.md, "Log files"). Writing them is the caller's
//! (the CLI writes them into the working directory, as fio does).

use crate::job::{Ddir, LogSpec};

/// One measured I/O: when it completed, how long it took, what it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedIo {
    /// Completion, ns after the job's measured start (after ramp_time).
    pub done_ns: u64,
    /// Submission to completion, ns (znskit's clat and lat are one).
    pub lat_ns: u64,
    pub dir: Ddir,
    pub bytes: u64,
    pub offset_bytes: u64,
}

/// The log of one job clone, numbered as fio numbers its threads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobIoLog {
    /// fio's thread number: the clone's place in the run, from 1.
    pub number: u32,
    pub spec: LogSpec,
    pub ios: Vec<LoggedIo>,
}

impl JobIoLog {
    /// Every file this log asks for: (file name, text).
    pub fn files(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let n = self.number;
        if let Some(p) = &self.spec.lat {
            let lat = self.lines(|io| io.lat_ns, Avg::Mean);
            out.push((format!("{p}_lat.{n}.log"), lat.clone()));
            out.push((format!("{p}_clat.{n}.log"), lat));
            // no separate submission latency is modelled: fio's JSON from
            // znskit has slat N = 0, and fio writes an empty slat log for
            // the engines that have none
            out.push((format!("{p}_slat.{n}.log"), String::new()));
        }
        if let Some(p) = &self.spec.bw {
            let bw = self.lines(
                |io| (io.bytes * 1_000_000).checked_div(io.lat_ns).unwrap_or(0),
                Avg::KibPerSecond,
            );
            out.push((format!("{p}_bw.{n}.log"), bw));
        }
        if let Some(p) = &self.spec.iops {
            out.push((
                format!("{p}_iops.{n}.log"),
                self.lines(|_| 1, Avg::PerSecond),
            ));
        }
        out
    }

    /// One line per I/O (`msec, value, ddir, bytes[, offset], prio`), or
    /// with `avg_msec` one per window and direction.
    fn lines(&self, value: impl Fn(&LoggedIo) -> u64, avg: Avg) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        if self.spec.avg_msec == 0 {
            for io in &self.ios {
                let _ = write!(
                    s,
                    "{}, {}, {}, {}",
                    io.done_ns / 1_000_000,
                    value(io),
                    io.dir.fio_index(),
                    io.bytes
                );
                if self.spec.offset {
                    let _ = write!(s, ", {}", io.offset_bytes);
                }
                s.push_str(", 0\n");
            }
            return s;
        }
        let window_ns = self.spec.avg_msec * 1_000_000;
        let Some(last) = self.ios.iter().map(|io| io.done_ns).max() else {
            return s;
        };
        let dirs = [Ddir::Read, Ddir::Write, Ddir::Trim];
        let has = |dir: Ddir| self.ios.iter().any(|io| io.dir == dir);
        // per window and direction: (ios, bytes, sum of values)
        let windows = (last / window_ns + 1) as usize;
        let mut acc = vec![[(0u64, 0u64, 0u128); 3]; windows];
        for io in &self.ios {
            let w = &mut acc[(io.done_ns / window_ns) as usize][usize::from(io.dir.fio_index())];
            w.0 += 1;
            w.1 += io.bytes;
            w.2 += u128::from(value(io));
        }
        for (i, w) in acc.iter().enumerate() {
            let end_ms = (i as u64 + 1) * self.spec.avg_msec;
            for (dir, &(ios, bytes, sum)) in dirs.into_iter().zip(w.iter()) {
                if !has(dir) {
                    continue;
                }
                let v = match avg {
                    // a window without I/O has no mean latency
                    Avg::Mean if ios == 0 => continue,
                    Avg::Mean => (sum / u128::from(ios)) as u64,
                    Avg::KibPerSecond => bytes * 1000 / (self.spec.avg_msec * 1024),
                    Avg::PerSecond => ios * 1000 / self.spec.avg_msec,
                };
                let _ = write!(s, "{end_ms}, {v}, {}, 0", dir.fio_index());
                if self.spec.offset {
                    s.push_str(", 0");
                }
                s.push_str(", 0\n");
            }
        }
        s
    }
}

/// How a window of samples is summarised.
#[derive(Clone, Copy)]
enum Avg {
    Mean,
    KibPerSecond,
    PerSecond,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(done_ms: u64, lat_ns: u64, is_read: bool) -> LoggedIo {
        LoggedIo {
            done_ns: done_ms * 1_000_000 + 5,
            lat_ns,
            dir: if is_read { Ddir::Read } else { Ddir::Write },
            bytes: 4096,
            offset_bytes: 8192,
        }
    }

    #[test]
    fn per_io_lines_as_fio_writes_them() {
        let log = JobIoLog {
            number: 2,
            spec: LogSpec {
                lat: Some("j".into()),
                bw: Some("j".into()),
                iops: Some("j".into()),
                ..LogSpec::default()
            },
            ios: vec![io(0, 9083, false), io(1, 311, true)],
        };
        let files = log.files();
        let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "j_lat.2.log",
                "j_clat.2.log",
                "j_slat.2.log",
                "j_bw.2.log",
                "j_iops.2.log"
            ]
        );
        assert_eq!(files[0].1, "0, 9083, 1, 4096, 0\n1, 311, 0, 4096, 0\n");
        assert_eq!(files[2].1, "");
        // fio 3.33 logged 450952 for a 4 KiB write of 9083 ns clat
        assert_eq!(
            files[3].1,
            "0, 450952, 1, 4096, 0\n1, 13170418, 0, 4096, 0\n"
        );
        assert_eq!(files[4].1, "0, 1, 1, 4096, 0\n1, 1, 0, 4096, 0\n");
        let with_offset = JobIoLog {
            spec: LogSpec {
                offset: true,
                ..log.spec.clone()
            },
            ..log
        };
        assert!(with_offset.files()[0]
            .1
            .starts_with("0, 9083, 1, 4096, 8192, 0\n"));
    }

    #[test]
    fn averaged_windows() {
        let log = JobIoLog {
            number: 1,
            spec: LogSpec {
                lat: Some("a".into()),
                bw: Some("a".into()),
                avg_msec: 100,
                ..LogSpec::default()
            },
            // two reads in the first window, none in the second, one in the third
            ios: vec![io(10, 100, true), io(50, 300, true), io(250, 50, true)],
        };
        let files = log.files();
        assert_eq!(files[0].1, "100, 200, 0, 0, 0\n300, 50, 0, 0, 0\n");
        // 8192 bytes in 100 ms = 80 KiB/s; an empty window is a 0 sample
        assert_eq!(
            files[3].1,
            "100, 80, 0, 0, 0\n200, 0, 0, 0, 0\n300, 40, 0, 0, 0\n"
        );
    }
}
