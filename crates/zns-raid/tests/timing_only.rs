//! A timing-only array (`RaidOptions::timing_only`, what `zns bench`'s
//! `raid:` targets use) sends its members the same commands as an array that
//! computes parity: same counters, same member write pointers, same virtual
//! time, for every variant (the RAIZN family's PP log zone GC included).

mod support;

use rand::Rng;
use support::*;
use zns_core::{IoFlags, ZonedDevice};
use zns_raid::{RaidArray, RaidOptions, RaidStats, Variant};
use zns_sim::timing::HostStack;
use zns_sim::{Runtime, SimRng};

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
    let ctrls = controllers(&rt, &small_zn540(), 5);
    let stack = if variant.members_mq_deadline() {
        HostStack::IoUringMqDeadline
    } else {
        HostStack::IoUringNone
    };
    for c in &ctrls {
        c.set_host_stack(stack);
    }
    let h = rt.handle();
    let a = rt
        .block_on(RaidArray::create(&h, devs(&ctrls), opts))
        .unwrap();
    let cfg = a.config().clone();
    let b = cfg.lba_bytes as u64;
    let mut rng = SimRng::from_seed_u64(seed);
    let mut n = 0u64;
    for z in 0..zones {
        let start = z as u64 * cfg.zone_size_lbas;
        let mut off = 0;
        let mut batch = Vec::new();
        while off < cfg.zone_capacity_lbas {
            let nlb = rng.gen_range(1..=40u64).min(cfg.zone_capacity_lbas - off);
            let data: Vec<u8> = (0..nlb)
                .flat_map(|i| block_data(start + off + i, 3, b as usize))
                .collect();
            n += 1;
            let flags = if n % 7 == 0 {
                IoFlags::FUA
            } else {
                IoFlags::NONE
            };
            let a2 = a.clone();
            let slba = start + off;
            batch.push(h.spawn(async move { a2.write(slba, &data, flags).await }));
            off += nlb;
            if batch.len() >= 16 {
                rt.block_on(async {
                    for t in batch.drain(..) {
                        t.await.unwrap();
                    }
                });
            }
        }
        rt.block_on(async {
            for t in batch.drain(..) {
                t.await.unwrap();
            }
        });
    }
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
