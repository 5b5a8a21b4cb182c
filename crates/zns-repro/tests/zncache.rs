//! The ZNCache reproduction's findings read from real runs: (a)'s finding
//! on the block drive's first writes reads the run's time series (the
//! windowed device WAF of a preconditioned FTL drive): it names the block
//! run only, with the device WAF up to its first chunk writes.

use zns_cache::{run_cache, CacheRunParams, RunReport};
use zns_repro::zncache::{gc_transient_finding, LabelledRun};

/// A run given as a sweep point's keys would give it.
fn run(params: serde_json::Value) -> RunReport {
    let p: CacheRunParams = serde_json::from_value(params).unwrap();
    run_cache(&p.spec(None).unwrap(), &mut |_| {}).unwrap()
}

/// A preconditioned FTL drive (its GC shows in the windowed device WAF)
/// under ZPLRU with 128 KiB chunks.
fn block_run() -> RunReport {
    run(serde_json::json!({
        "device": "tiny-ftl", "nsid": 1, "region": "1m", "precondition": "random-steady",
        "chunk": "128k", "zones": 8, "high": 1, "low": 2,
        "distribution": "uniform", "ratio": 2.0, "requests": 3000, "workload_seed": 1,
        "workers": 8, "remote_latency": "0", "interval": "200us",
    }))
}

/// The ZN540 with 256 MiB chunks on 4 zones: no device GC.
fn zns_run() -> RunReport {
    run(serde_json::json!({
        "device": "zn540", "chunk": "256m", "zones": 4, "high": 1, "low": 2,
        "distribution": "uniform", "ratio": 10.0, "requests": 8, "workload_seed": 1,
    }))
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
