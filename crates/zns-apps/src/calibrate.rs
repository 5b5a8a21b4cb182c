//! The check that a speed factor keeps results meaningful (docs/apps.md,
//! "The guest in virtual time"): fio through a served device at `--speed F`
//! against `zns bench` running the same jobs on the same device in virtual
//! time. When the device, not the host (a TCG guest's CPU, the block layer,
//! ublk, the server), bounds the applications, the served throughput is F
//! times `zns bench`'s: the ratio below is 1. A ratio well under 1 says the
//! host is the bottleneck at that F, and the applications' figures would
//! measure the host.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fio::{summarize, FioResult};
use crate::served::Server;
use crate::{run, AppError};

/// One job, served and in virtual time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub job: String,
    pub target: String,
    pub speed: f64,
    /// fio through the served device, in MiB/s of wall-clock time.
    pub served_mib_per_s: f64,
    /// `zns bench`, in MiB/s of virtual time.
    pub bench_mib_per_s: f64,
    /// served / (bench × speed): 1 when the device bounds the run.
    pub ratio: f64,
}

/// The calibration jobs as fio options (after `--filename`), in one run:
/// the kinds of I/O the applications make — larger sequential writes at a
/// queue depth, then (stonewall) random 4 KiB reads of what they wrote
/// (zonemode=zbd reads only below write pointers).
pub const JOBS: [&str; 2] = ["write-64k-qd8", "randread-4k-qd32"];

/// The jobs' options; `runtime` is fio's `--runtime` value.
fn job_options(runtime: &str) -> Vec<String> {
    let mut v: Vec<String> = [
        "--direct=1",
        "--ioengine=libaio",
        "--zonemode=zbd",
        "--time_based",
        "--output-format=json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(format!("--runtime={runtime}"));
    for s in [
        "--name=write-64k-qd8",
        "--rw=write",
        "--bs=64k",
        "--iodepth=8",
        "--size=2z",
        "--name=randread-4k-qd32",
        "--stonewall",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=32",
        "--size=2z",
    ] {
        v.push(s.to_string());
    }
    v
}

/// Runs `program ARGS` (fio or `zns bench`) and returns each job's figures.
fn run_jobs(program: &str, label: &str, args: &[String]) -> Result<Vec<FioResult>, AppError> {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(program, &refs, &[])?;
    let start = out.find('{').unwrap_or(0);
    let doc: serde_json::Value =
        serde_json::from_str(&out[start..]).map_err(|e| AppError::Report {
            program: label.into(),
            what: format!("its JSON report: {e}"),
        })?;
    JOBS.iter()
        .map(|name| {
            let job = doc["jobs"]
                .as_array()
                .and_then(|jobs| jobs.iter().find(|j| j["jobname"] == *name))
                .ok_or_else(|| AppError::Report {
                    program: label.into(),
                    what: format!("no job {name} in its report"),
                })?;
            summarize(&serde_json::json!({ "jobs": [job] })).map_err(|what| AppError::Report {
                program: label.into(),
                what,
            })
        })
        .collect()
}

/// The least device time each job of the check covers: at a low F the
/// served run is stretched to it (at c / 1000 a 15 s window was 2.9 ms of
/// device time, about 190 of the writes at QD 8, and the writes in flight
/// when fio stops went unmeasured: writes 0.889; at c / 100, 29 ms: 1.022).
pub const CHECK_MIN_DEVICE_S: f64 = 0.025;

/// The served run's seconds for a check of `runtime_s` at `speed`: at
/// least [`CHECK_MIN_DEVICE_S`] of device time.
pub fn served_runtime_s(runtime_s: u32, speed: f64) -> u32 {
    // (`as` saturates at u32::MAX)
    f64::from(runtime_s).max((CHECK_MIN_DEVICE_S / speed).ceil()) as u32
}

/// The device time `runtime_s` seconds of a served run are at `speed`, as
/// a fio `--runtime` in whole microseconds (at least one).
fn device_runtime(runtime_s: u32, speed: f64) -> String {
    let us = (f64::from(runtime_s) * speed * 1e6).round().max(1.0);
    format!("{us}us")
}

fn mib_per_s(r: &FioResult) -> f64 {
    r.read_mib_per_s + r.write_mib_per_s
}

/// Serves `target` with `serve_args` (which set the speed `speed`), runs
/// the jobs through it with fio for `runtime_s` seconds (stretched to
/// [`CHECK_MIN_DEVICE_S`] of device time: [`served_runtime_s`]), then the same jobs
/// with `zns bench` in virtual time for the device time those seconds are
/// at F (`runtime_s` × F): both sides then ask the device for the same
/// work. A device's throughput depends on how much was written (its write
/// buffer absorbs a burst; random reads of a few MiB fall on a few dies),
/// so a bench of `runtime_s` device seconds against `runtime_s` × F of
/// them in the served run would compare two workloads, and at low F
/// (c / 1000: writes 1.22, reads 0.54) it did; `stats` is the server's
/// statistics file.
pub fn calibrate(
    zns: &Path,
    target: &str,
    serve_args: &[String],
    speed: f64,
    runtime_s: u32,
    stats: &Path,
) -> Result<Vec<Calibration>, AppError> {
    let runtime_s = served_runtime_s(runtime_s, speed);
    let mut args = vec![target.to_string()];
    args.extend(serve_args.iter().cloned());
    let server = Server::start(zns, &args, stats)?;
    let dev = server
        .path_of(target)
        .ok_or_else(|| AppError::Io(format!("zns serve did not list {target}")))?
        .to_string();
    let mut fio_args = vec![format!("--filename={dev}")];
    fio_args.extend(job_options(&format!("{runtime_s}s")));
    let served = run_jobs("fio", "fio", &fio_args)?;
    server.stop()?;
    let mut bench_args = vec!["bench".to_string(), format!("--filename={target}")];
    bench_args.extend(job_options(&device_runtime(runtime_s, speed)));
    let bench = run_jobs(&zns.to_string_lossy(), "zns bench", &bench_args)?;
    Ok(JOBS
        .iter()
        .zip(served.iter().zip(&bench))
        .map(|(job, (s, b))| {
            let (s, b) = (mib_per_s(s), mib_per_s(b));
            Calibration {
                job: job.to_string(),
                target: target.to_string(),
                speed,
                served_mib_per_s: s,
                bench_mib_per_s: b,
                ratio: if b > 0.0 { s / (b * speed) } else { 0.0 },
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bench_runs_the_device_time_of_the_served_run() {
        assert_eq!(device_runtime(15, 0.000194), "2910us");
        assert_eq!(device_runtime(5, 0.00194), "9700us");
        assert_eq!(device_runtime(15, 1.0), "15000000us");
        assert_eq!(device_runtime(1, 1e-9), "1us");
    }

    #[test]
    fn a_low_speed_stretches_the_served_run_to_the_least_device_time() {
        // c / 100 and faster: the asked seconds (15 s x 0.00194 = 29 ms)
        assert_eq!(served_runtime_s(15, 0.00194), 15);
        assert_eq!(served_runtime_s(5, 0.00194), 13);
        assert_eq!(served_runtime_s(15, 0.01), 15);
        assert_eq!(served_runtime_s(5, 1.0), 5);
        // c / 1000: 129 s, 25 ms of device time
        assert_eq!(served_runtime_s(15, 0.000194), 129);
        assert_eq!(device_runtime(129, 0.000194), "25026us");
        assert_eq!(served_runtime_s(15, 1e-12), u32::MAX);
    }
}
