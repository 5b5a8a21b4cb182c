//! The ZNCache reproduction's findings read from real runs: (a)'s finding
//! on the block drive's first writes reads the run's time series (the
//! windowed device WAF of a preconditioned FTL drive): it names the block
//! run only, with the device WAF up to its first chunk writes.

use zns_cache::{
    run_cache, CacheConfig, DeviceSpec, Distribution, Policy, Precondition, RemoteLatency,
    RunReport, RunSpec, WorkloadSpec,
};
use zns_device::{Profile, StoreKind};
use zns_repro::zncache::{gc_transient_finding, LabelledRun};

fn block_run() -> RunReport {
    let mut d = DeviceSpec::new(Profile::builtin("tiny-ftl").unwrap());
    d.nsid = Some(1);
    d.region_bytes = Some(1 << 20);
    d.store = StoreKind::None;
    d.precondition = Precondition::RandomSteady;
    let cache = CacheConfig {
        policy: Policy::Zplru,
        chunk_bytes: 128 << 10,
        zones: Some(8),
        zone_high: 1,
        zone_low: 2,
        ..CacheConfig::default()
    };
    let workload = WorkloadSpec::Generated {
        distribution: Distribution::Uniform,
        ratio: 2.0,
        requests: 3000,
        seed: 1,
    };
    let mut s = RunSpec::new(d, cache, workload);
    s.workers = 8;
    s.remote = RemoteLatency::Fixed { ns: 0 };
    s.interval_ns = 200_000;
    run_cache(&s, &mut |_| {}).unwrap()
}

fn zns_run() -> RunReport {
    let mut d = DeviceSpec::new(Profile::builtin("zn540").unwrap());
    d.store = StoreKind::None;
    let cache = CacheConfig {
        policy: Policy::Zplru,
        chunk_bytes: 256 << 20,
        zones: Some(4),
        zone_high: 1,
        zone_low: 2,
        ..CacheConfig::default()
    };
    let workload = WorkloadSpec::Generated {
        distribution: Distribution::Uniform,
        ratio: 10.0,
        requests: 8,
        seed: 1,
    };
    run_cache(&RunSpec::new(d, cache, workload), &mut |_| {}).unwrap()
}

#[test]
fn the_gc_transient_finding_names_the_block_run_and_its_device_waf() {
    let r = block_run();
    let z = zns_run();
    let labelled = |label: &str, report: RunReport| LabelledRun {
        label: label.into(),
        report,
    };
    let first_write_s = r.samples.iter().find_map(|x| x.disk_write_mean_ms).unwrap() / 1e3;
    let (zns, block) = (labelled("ZNS-x", z), labelled("Block-x", r));
    assert_eq!(gc_transient_finding(std::slice::from_ref(&zns)), None);
    let f = gc_transient_finding(&[zns, block]).unwrap();
    assert!(
        f.contains(&format!("Block-x {first_write_s:.0} s")) && !f.contains("ZNS-x"),
        "{f}"
    );
    let waf: f64 = f
        .split("WAF up to ")
        .nth(1)
        .and_then(|t| t.split(')').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{f}"));
    assert!(waf >= 1.0, "{f}");
}
