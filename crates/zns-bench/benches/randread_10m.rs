//! Host cost of the runner: 10 million 4 KiB random reads at QD32 on the
//! emulated ZN540 (issue 3's figure: < 5 host seconds). Prints host seconds,
//! simulated I/Os per host second and the virtual IOPS.
//!
//! `cargo bench -p zns-bench --bench randread_10m` (set ZNS_BENCH_IOS to
//! change the count).

// a benchmark measures host time (clippy.toml's determinism guardrails do not apply)
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Instant;

use zns_bench::job::parse_args;
use zns_bench::run::run_jobs;

fn main() {
    let ios: u64 = std::env::var("ZNS_BENCH_IOS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let args: Vec<String> = format!(
        "--name=randread --filename=zn540 --ioengine=io_uring --direct=1 --rw=randread --bs=4k --iodepth=32 --size=8z --number_ios={ios}"
    )
    .split_whitespace()
    .map(String::from)
    .collect();
    let specs = parse_args(args).expect("job parses");
    let t0 = Instant::now();
    let report = run_jobs(&specs, 1).expect("job runs");
    let host_s = t0.elapsed().as_secs_f64();
    let read = &report.jobs[0].read;
    assert_eq!(read.total_ios, ios);
    let virt_s = report.jobs[0].runtime_ns as f64 / 1e9;
    println!(
        "randread 4k QD32: {ios} I/Os in {host_s:.2} host-s ({:.2} M I/Os per host-s); virtual {virt_s:.2} s = {:.0} KIOPS, mean lat {:.1} us",
        ios as f64 / host_s / 1e6,
        ios as f64 / virt_s / 1e3,
        read.mean() / 1e3
    );
}
