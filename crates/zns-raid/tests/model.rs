//! Property test: a RaidArray behaves as a ZNS device. Random command
//! sequences (writes at and off the write pointer, concurrent bursts, appends,
//! reads, open/close/finish/reset, flush) run on the array and on a reference
//! (`ZoneSet` with the array's logical configuration plus a block map); every
//! status and every zone descriptor must match, reads return what was written,
//! and at the end the same data reads back degraded (one member failed), after
//! a rebuild onto a spare, and after reopening the array (recovery).

mod support;

use std::collections::HashMap;
use std::rc::Rc;

use proptest::prelude::*;
use support::*;
use zns_core::{
    IoFlags, NvmeError, ReportFilter, ZoneAction, ZoneSendCmd, ZoneSet, ZoneState, ZonedDevice,
};
use zns_raid::{Policy, RaidArray, RaidOptions, Variant};
use zns_sim::Runtime;

#[derive(Debug, Clone)]
enum Op {
    Write { zone: u32, nlb: u64, fua: bool },
    WriteOff { zone: u32, delta: u64 },
    Burst { zone: u32, k: usize, nlb: u64 },
    Append { zone: u32, nlb: u64 },
    Read { zone: u32, at: u64, nlb: u64 },
    Mgmt { zone: u32, action: u8 },
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    let z = 0u32..3;
    prop_oneof![
        6 => (z.clone(), 1u64..80, any::<bool>()).prop_map(|(zone, nlb, fua)| Op::Write { zone, nlb, fua }),
        1 => (z.clone(), 1u64..5).prop_map(|(zone, delta)| Op::WriteOff { zone, delta }),
        3 => (z.clone(), 2usize..6, 1u64..40).prop_map(|(zone, k, nlb)| Op::Burst { zone, k, nlb }),
        1 => (z.clone(), 1u64..40).prop_map(|(zone, nlb)| Op::Append { zone, nlb }),
        2 => (z.clone(), 0u64..10_000, 1u64..64).prop_map(|(zone, at, nlb)| Op::Read { zone, at, nlb }),
        1 => (z, 0u8..4).prop_map(|(zone, action)| Op::Mgmt { zone, action }),
        1 => Just(Op::Flush),
    ]
}

struct Model {
    zones: ZoneSet,
    data: HashMap<u64, Vec<u8>>,
    b: usize,
}

impl Model {
    fn expected(&self, slba: u64, nlb: u64) -> Vec<u8> {
        let mut out = vec![0u8; nlb as usize * self.b];
        let zone = self.zones.zone_of(slba).unwrap();
        let wp = self.zones.write_pointer(zone).unwrap();
        for i in 0..nlb {
            if slba + i < wp {
                if let Some(d) = self.data.get(&(slba + i)) {
                    out[i as usize * self.b..(i as usize + 1) * self.b].copy_from_slice(d);
                }
            }
        }
        out
    }
}

fn status(r: Result<(), NvmeError>) -> Result<(), zns_core::NvmeStatus> {
    r.map_err(|e| e.status)
}

#[allow(clippy::too_many_arguments)]
fn run_case(
    profile_name: &str,
    n: usize,
    chunk_kib: u64,
    policy: Policy,
    variant: Variant,
    seed: u64,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let p = if profile_name == "tiny" {
        tiny_keep()
    } else {
        small_zn540()
    };
    let mut rt = Runtime::new(seed);
    let opts = RaidOptions {
        chunk_bytes: chunk_kib * 1024,
        policy,
        variant,
        flush_before_advance: false,
        ..RaidOptions::default()
    };
    let (mut ctrls, array) = create(&mut rt, &p, n, opts).unwrap();
    let cfg = array.config().clone();
    let b = cfg.lba_bytes as usize;
    let mut m = Model {
        zones: ZoneSet::new(cfg.clone()).unwrap(),
        data: HashMap::new(),
        b,
    };
    let mut salt = 0u64;
    let zstart = |z: u32| z as u64 * cfg.zone_size_lbas;
    let mk = |slba: u64, nlb: u64, salt: u64| -> Vec<u8> {
        (0..nlb)
            .flat_map(|i| block_data(slba + i, salt, b))
            .collect()
    };
    // a member dies before step `fail_at` (after the last step: at rest) and
    // the array finds out by itself; the rest runs degraded
    let victim = (seed % n as u64) as usize;
    let fail_at = (seed / n as u64) as usize % (ops.len() + 1);
    for (step, op) in ops.iter().enumerate() {
        salt += 1;
        if step == fail_at {
            ctrls[victim].fail();
        }
        match op {
            Op::Write { zone, nlb, fua } => {
                let slba = m.zones.write_pointer(*zone).unwrap();
                let data = mk(slba, *nlb, salt);
                let expect = m.zones.write(slba, *nlb).map(|_| ());
                let got = rt.block_on(array.write(slba, &data, IoFlags::with_fua(*fua)));
                prop_assert_eq!(status(got), expect, "step {} {:?}", step, op);
                if expect.is_ok() {
                    for i in 0..*nlb {
                        m.data.insert(
                            slba + i,
                            data[i as usize * b..(i as usize + 1) * b].to_vec(),
                        );
                    }
                }
            }
            Op::WriteOff { zone, delta } => {
                let slba = m.zones.write_pointer(*zone).unwrap() + delta;
                let data = mk(slba, 1, salt);
                let expect = m.zones.write(slba, 1).map(|_| ());
                let got = rt.block_on(array.write(slba, &data, IoFlags::NONE));
                prop_assert_eq!(status(got), expect, "step {} {:?}", step, op);
                if expect.is_ok() {
                    m.data.insert(slba, data);
                }
            }
            Op::Burst { zone, k, nlb } => {
                let mut handles = Vec::new();
                let mut expects = Vec::new();
                let h = rt.handle();
                for _ in 0..*k {
                    let slba = m.zones.write_pointer(*zone).unwrap();
                    let data = mk(slba, *nlb, salt);
                    salt += 1;
                    let expect = m.zones.write(slba, *nlb).map(|_| ());
                    if expect.is_ok() {
                        for i in 0..*nlb {
                            m.data.insert(
                                slba + i,
                                data[i as usize * b..(i as usize + 1) * b].to_vec(),
                            );
                        }
                    }
                    expects.push(expect);
                    let a = array.clone();
                    handles.push(h.spawn(async move { a.write(slba, &data, IoFlags::NONE).await }));
                }
                let got: Vec<_> = rt.block_on(async {
                    let mut v = Vec::new();
                    for h in handles {
                        v.push(status(h.await));
                    }
                    v
                });
                prop_assert_eq!(got, expects, "step {} {:?}", step, op);
            }
            Op::Append { zone, nlb } => {
                let slba = zstart(*zone);
                let wp = m.zones.write_pointer(*zone).unwrap();
                let data = mk(wp, *nlb, salt);
                let expect = m.zones.append(slba, *nlb).map(|e| e.slba);
                let got = rt
                    .block_on(array.append(slba, &data, IoFlags::NONE))
                    .map_err(|e| e.status);
                prop_assert_eq!(got, expect, "step {} {:?}", step, op);
                if let Ok(at) = expect {
                    for i in 0..*nlb {
                        m.data
                            .insert(at + i, data[i as usize * b..(i as usize + 1) * b].to_vec());
                    }
                }
            }
            Op::Read { zone, at, nlb } => {
                let slba = zstart(*zone) + at % cfg.zone_capacity_lbas;
                let mut buf = vec![0u8; *nlb as usize * b];
                let expect = m.zones.check_read(slba, *nlb);
                let got = rt.block_on(array.read(slba, &mut buf));
                prop_assert_eq!(status(got), expect, "step {} {:?}", step, op);
                if expect.is_ok() {
                    prop_assert!(
                        buf == m.expected(slba, *nlb),
                        "step {} {:?}: data differs",
                        step,
                        op
                    );
                }
            }
            Op::Mgmt { zone, action } => {
                let action = match action {
                    0 => ZoneAction::Open { zrwa: false },
                    1 => ZoneAction::Close,
                    2 => ZoneAction::Finish,
                    _ => ZoneAction::Reset,
                };
                let cmd = ZoneSendCmd {
                    action,
                    slba: zstart(*zone),
                    select_all: false,
                };
                let expect = m.zones.zone_send(cmd).map(|_| ());
                if action == ZoneAction::Reset && expect.is_ok() {
                    let (s, e) = (zstart(*zone), zstart(*zone) + cfg.zone_size_lbas);
                    m.data.retain(|l, _| *l < s || *l >= e);
                }
                let got = rt.block_on(array.zone_send(cmd));
                prop_assert_eq!(status(got), expect, "step {} {:?}", step, op);
            }
            Op::Flush => {
                prop_assert!(rt.block_on(array.flush()).is_ok());
            }
        }
        let got = rt
            .block_on(array.report_zones(0, ReportFilter::All, 100))
            .unwrap();
        let want = m.zones.report(0, ReportFilter::All, 100).unwrap();
        prop_assert_eq!(got, want, "step {} {:?}", step, op);
    }
    rt.block_on(array.quiesce());
    let check_all =
        |rt: &mut Runtime, a: &RaidArray, m: &Model, what: &str| -> Result<(), TestCaseError> {
            for z in 0..3u32 {
                let start = zstart(z);
                let wp = m.zones.write_pointer(z).unwrap();
                let mut x = start;
                while x < wp {
                    let n = (wp - x).min(cfg.max_transfer_lbas as u64);
                    let mut buf = vec![0u8; n as usize * b];
                    rt.block_on(a.read(x, &mut buf)).unwrap();
                    prop_assert!(
                        buf == m.expected(x, n),
                        "{}: zone {} at {} differs",
                        what,
                        z,
                        x - start
                    );
                    x += n;
                }
            }
            Ok(())
        };
    check_all(&mut rt, &array, &m, "normal read")?;
    // degraded: one member failed
    ctrls[victim].fail();
    array.fail_member(victim); // reads may not have touched it yet
    check_all(&mut rt, &array, &m, "degraded read")?;
    prop_assert_eq!(array.failed_members(), vec![victim]);
    if variant != Variant::Zraid {
        // rebuild and power-loss recovery are ZRAID's (the others refuse them)
        return Ok(());
    }
    // rebuild onto a spare
    let spare = controllers(&rt, &p, 1).remove(0);
    let spare_dev: Rc<dyn ZonedDevice> = Rc::new(spare.first_zoned().unwrap());
    rt.block_on(array.rebuild(victim, spare_dev)).unwrap();
    ctrls[victim] = spare;
    check_all(&mut rt, &array, &m, "after rebuild")?;
    // a write after the rebuild, then reopen (recovery) from the media
    for z in 0..3u32 {
        let wp = m.zones.write_pointer(z).unwrap();
        let st = m.zones.descriptor(z).unwrap().state;
        if st != ZoneState::Full
            && wp < zstart(z) + cfg.zone_capacity_lbas
            && m.zones.write(wp, 1).is_ok()
        {
            let d = mk(wp, 1, 999);
            let r = rt.block_on(array.write(wp, &d, IoFlags::FUA));
            prop_assert!(
                r.is_ok(),
                "write after rebuild, zone {}: {:?} member wps {:?}",
                z,
                r,
                array.member_write_pointers(z)
            );
            m.data.insert(wp, d);
        }
    }
    rt.block_on(array.shutdown()).unwrap();
    drop(array);
    let h = rt.handle();
    let reopened = rt
        .block_on(RaidArray::open(&h, devs(&ctrls), opts))
        .unwrap();
    let got = rt
        .block_on(reopened.report_zones(0, ReportFilter::All, 3))
        .unwrap();
    for (z, d) in got.iter().enumerate() {
        let want = m.zones.descriptor(z as u32).unwrap();
        // open zones come back closed, as on a device after a power cycle
        let want_state = if want.state.is_open() {
            ZoneState::Closed
        } else {
            want.state
        };
        let want_state = if want_state == ZoneState::Closed && want.write_pointer == want.start_lba
        {
            ZoneState::Empty
        } else {
            want_state
        };

        if policy == Policy::Stripe {
            // whole stripes only: the rest of the zone's data is given up
            prop_assert!(d.write_pointer <= want.write_pointer || d.state == ZoneState::Full);
            let keep = d.write_pointer;
            let end = zstart(z as u32) + cfg.zone_size_lbas;
            m.data.retain(|l, _| *l < keep || *l >= end);
            if d.state != ZoneState::Full {
                m.zones = ZoneSet::from_snapshot(
                    cfg.clone(),
                    &rt.block_on(reopened.report_zones(0, ReportFilter::All, 100))
                        .unwrap()
                        .iter()
                        .map(|d| zns_core::ZoneRecord {
                            state: d.state,
                            write_pointer: if d.state == ZoneState::Full {
                                d.start_lba + cfg.zone_capacity_lbas
                            } else {
                                d.write_pointer
                            },
                            zrwa: false,
                            finished_early: false,
                            finished_by_controller: false,
                        })
                        .collect::<Vec<_>>(),
                )
                .unwrap();
            }
            continue;
        }
        prop_assert_eq!(d.state, want_state, "reopen zone {}", z);
        if want.state != ZoneState::Full {
            prop_assert_eq!(d.write_pointer, want.write_pointer, "reopen zone {}", z);
        }
    }
    check_all(&mut rt, &reopened, &m, "after reopen")?;
    // the rebuilt member's partial parity (Rule-1 slots, metadata-zone
    // records near a zone end) must serve a later failure of another one
    let other = (victim + 1) % n;
    ctrls[other].fail();
    reopened.fail_member(other);
    check_all(
        &mut rt,
        &reopened,
        &m,
        "rebuilt and reopened, another member failed",
    )?;
    Ok(())
}

/// Property-test cases: `default`, or `ZNS_CASES` for a longer hunt (with
/// `ZNS_SHUFFLE_TIES`, for instance).
fn cases(default: u32) -> u32 {
    std::env::var("ZNS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), ..ProptestConfig::default() })]

    #[test]
    fn zn540_array_behaves_like_a_zns_device(
        seed in 0u64..1000,
        n in 3usize..6,
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        run_case("zn540", n, 64, Policy::WpLog, Variant::Zraid, seed, &ops)?;
    }

    #[test]
    fn every_variant_array_behaves_like_a_zns_device_degraded_too(
        seed in 0u64..1000,
        n in 3usize..6,
        variant in prop_oneof![
            Just(Variant::Raizn),
            Just(Variant::RaiznPlus),
            Just(Variant::Z),
            Just(Variant::ZS),
            Just(Variant::ZSM),
        ],
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        run_case("zn540", n, 64, Policy::WpLog, variant, seed, &ops)?;
    }

    #[test]
    fn tiny_array_with_one_row_pp_distance_behaves_like_a_zns_device(
        seed in 0u64..1000,
        n in 3usize..6,
        policy in prop_oneof![Just(Policy::WpLog), Just(Policy::Chunk), Just(Policy::Stripe)],
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        run_case("tiny", n, 32, policy, Variant::Zraid, seed, &ops)?;
    }
}

/// Regression (proptest seed `cc d39eb81e…`): one chunk written to zone 0, the
/// zone reset, member 0 failed and rebuilt, a 1-block FUA write, then a clean
/// shutdown and reopen: the reopened zone must be at WP 1, not Empty.
#[test]
fn one_block_after_reset_survives_shutdown_and_reopen() {
    let ops = [
        Op::Write {
            zone: 0,
            nlb: 16,
            fua: false,
        },
        Op::Mgmt { zone: 0, action: 3 },
    ];
    run_case("zn540", 3, 64, Policy::WpLog, Variant::Zraid, 0, &ops).unwrap();
}
