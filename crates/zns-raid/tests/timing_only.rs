//! A timing-only array (`RaidOptions::timing_only`, what `zns bench`'s
//! `raid:` targets use) sends its members the same commands as an array that
//! computes parity: same counters, same member write pointers, same virtual
//! time, for every variant (the RAIZN family's PP log zone GC included).

mod support;

use support::*;
use zns_raid::{RaidOptions, RaidStats, Variant};
use zns_sim::Runtime;

/// What one run left behind that depends on the commands sent.
#[derive(Debug, PartialEq)]
struct Outcome {
    array: RaidStats,
    members: Vec<zns_device::ControllerStats>,
    member_wps: Vec<Vec<u64>>,
    end_ns: u64,
}

/// Writes `zones` logical zones full (random sizes of 1–40 blocks, QD 16,
/// every 7th write FUA) and returns what the members saw.
fn run(variant: Variant, timing_only: bool, seed: u64, zones: u32) -> Outcome {
    let mut rt = Runtime::new(seed);
    let opts = RaidOptions {
        variant,
        timing_only,
        ..RaidOptions::default()
    };
    let (ctrls, a) = variant_array(&mut rt, opts);
    fill_zones(&mut rt, &a, zones, 16, seed, 3, 7);
    rt.block_on(a.quiesce());
    Outcome {
        array: a.stats(),
        members: ctrls.iter().map(|c| c.stats()).collect(),
        member_wps: (0..zones).map(|z| a.member_write_pointers(z)).collect(),
        end_ns: rt.now_ns(),
    }
}

#[test]
fn a_timing_only_array_sends_the_same_commands_at_the_same_instants() {
    for variant in Variant::ALL {
        let with_bytes = run(variant, false, 11, 3);
        let timing_only = run(variant, true, 11, 3);
        assert!(
            with_bytes.array.host_blocks > 0,
            "{variant}: nothing written"
        );
        assert_eq!(with_bytes, timing_only, "{variant}");
    }
}

/// The PP log zone GC of the RAIZN family re-appends the open zones' partial
/// stripes; a timing-only array must re-append as many blocks.
#[test]
fn a_timing_only_raizn_array_collects_its_pp_log_zones_the_same_way() {
    let with_bytes = run(Variant::RaiznPlus, false, 5, 4);
    let timing_only = run(Variant::RaiznPlus, true, 5, 4);
    assert!(
        with_bytes.array.pp_gc_count > 0,
        "the run must fill a PP log zone: {:?}",
        with_bytes.array
    );
    assert_eq!(with_bytes, timing_only);
}
