//! Host cost of a RAID array: one simulated second of 8 KiB sequential
//! writes at QD 64 into 12 zones of a 5 × ZN540 ZRAID array (its full 8 KiB
//! write speed; issue 5's figure: ≤ 1 host second). Prints host seconds,
//! the virtual throughput and host seconds per simulated second.
//!
//! `cargo bench -p zns-bench --bench raid_8k_1s` (ZNS_BENCH_VARIANT=raizn+
//! for another variant, ZNS_BENCH_RUNTIME_MS for another length).

// a benchmark measures host time (clippy.toml's determinism guardrails do not apply)
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Instant;

use zns_bench::job::parse_args;
use zns_bench::run::run_jobs;

fn main() {
    let variant = std::env::var("ZNS_BENCH_VARIANT").unwrap_or_else(|_| "zraid".into());
    let ms: u64 = std::env::var("ZNS_BENCH_RUNTIME_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let args: Vec<String> = format!(
        "--name=seqwrite --filename=raid:5xzn540,variant={variant} --ioengine=libaio --direct=1 --rw=write --bs=8k --iodepth=64 --zonemode=zbd --size=1z --offset_increment=1z --numjobs=12 --max_open_zones=12 --runtime={ms}ms --time_based --group_reporting"
    )
    .split_whitespace()
    .map(String::from)
    .collect();
    let specs = parse_args(args).expect("job parses");
    let t0 = Instant::now();
    let report = run_jobs(&specs, 1).expect("job runs");
    let host_s = t0.elapsed().as_secs_f64();
    let w = &report.jobs[0].write;
    let virt_s = report.virtual_ns as f64 / 1e9;
    let run_s = report.jobs[0].runtime_ns as f64 / 1e9;
    println!(
        "{variant} 5 x zn540, 8 KiB seq write, 12 zones QD64: {:.0} MB/s, {} writes; {virt_s:.3} simulated s in {host_s:.2} host s = {:.2} host s per simulated s",
        w.io_bytes as f64 / run_s / 1e6,
        w.total_ios,
        host_s / virt_s
    );
}
