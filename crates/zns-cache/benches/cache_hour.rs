//! Host cost of one simulated hour of ZNCache's 64-worker 64 KiB workload
//! on the emulated ZN540 (issue 4 target: < 60 host seconds).
//!
//! `cargo bench -p zns-cache --bench cache_hour` runs the hour for the
//! heaviest shape (YCSB Zipf 1:2: ~93% hits, the most device commands per
//! virtual second) and the lightest (uniform 1:10), 40 zones of 1077 MiB as
//! in the paper's 64 KiB runs, remote latency 40.6 ms, ZPLRU, watermarks 1/2;
//! each with ZNCache's miss path (a miss holds its zone across the fetch: at
//! most 14 misses in flight, the default) and with fetch-first (all 64
//! workers' misses in flight: about 7× the gets per virtual hour, the
//! heaviest case). Pass a different virtual duration in seconds as the
//! first argument (`-- 600` for ten minutes).

// a benchmark measures host time (clippy.toml's determinism guardrails do not apply)
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Instant;

use zns_cache::{
    run_cache, CacheConfig, DeviceSpec, Distribution, FetchOrder, Policy, RemoteLatency, RunSpec,
    WorkloadSpec,
};
use zns_device::Profile;

fn main() {
    let secs: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3600);
    for (dist, ratio, order) in [
        (Distribution::Zipfian, 2.0, FetchOrder::HoldZone),
        (Distribution::Uniform, 10.0, FetchOrder::HoldZone),
        (Distribution::Zipfian, 2.0, FetchOrder::FetchFirst),
        (Distribution::Uniform, 10.0, FetchOrder::FetchFirst),
    ] {
        let cache = CacheConfig {
            policy: Policy::Zplru,
            chunk_bytes: 64 << 10,
            zones: Some(40),
            zone_high: 1,
            zone_low: 2,
            fetch_order: order,
            ..CacheConfig::default()
        };
        let mut spec = RunSpec::new(
            DeviceSpec::new(Profile::builtin("zn540").expect("zn540 profile")),
            cache,
            WorkloadSpec::Generated {
                distribution: dist,
                ratio,
                requests: 19_660_800,
                seed: 1,
            },
        );
        spec.workers = 64;
        spec.remote = RemoteLatency::Measured;
        spec.duration_ns = Some(secs * 1_000_000_000);
        spec.iterations = 100;
        spec.interval_ns = 60_000_000_000;
        let t = Instant::now();
        let r = run_cache(&spec, &mut |_| {}).expect("run");
        let host_s = t.elapsed().as_secs_f64();
        println!(
            "{:>7} 1:{:<2} {:<11} {secs} virtual s: {:.2} host s ({:.0} gets, {:.0} gets/host-s), hit ratio {:.4}, {:.4} GiB/s get",
            dist.name(),
            ratio,
            order.name(),
            host_s,
            r.counters.gets as f64,
            r.counters.gets as f64 / host_s,
            r.hit_ratio,
            r.get_gib_s
        );
    }
}
