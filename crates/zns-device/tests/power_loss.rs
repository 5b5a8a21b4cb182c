//! Power cut at many seeded instants during a write workload: after power-on,
//! every write acknowledged with FUA or followed by a completed flush reads back
//! intact, and nothing beyond the reported write pointers is claimed.

#[path = "support/ctrl.rs"]
mod test_ctrl;

use std::cell::RefCell;
use std::rc::Rc;

use rand::Rng;
use zns_core::{IoFlags, ReportFilter, ZoneState, ZonedDevice};
use zns_device::store::stamp;
use zns_device::trace::fill_stamps;
use zns_device::{Controller, Profile, StoreKind};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

const ZONES_WRITTEN: u32 = 4;

fn tag_for(lba: u64) -> u64 {
    lba.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

#[derive(Default)]
struct Log {
    /// (zone, end LBA, completion instant, fua) of acknowledged writes.
    acked: Vec<(u32, u64, u64, bool)>,
    /// Submission instants of flushes that completed.
    flushes_done: Vec<u64>,
}

/// Runs one trial; returns (durable LBAs, acknowledged LBAs that were lost).
fn run_trial(seed: u64, store: StoreKind) -> (u64, u64) {
    let mut rt = Runtime::new(seed);
    let handle = rt.handle();
    let profile = Profile::builtin("tiny").unwrap();
    let ctrl = test_ctrl::open(&handle, profile, store, HostStack::Spdk);
    let dev = ctrl.first_zoned().unwrap();
    let cfg = dev.config().clone();
    let lba_bytes = cfg.lba_bytes as usize;
    let log = Rc::new(RefCell::new(Log::default()));
    let mut rng = handle.rng();
    // Roughly: one zone of 192 blocks takes ~40 writes of ~20 µs; cut somewhere in the first few ms.
    let cut_at_ns = rng.gen_range(1_000..3_000_000u64);

    let mut tasks = Vec::new();
    for z in 0..ZONES_WRITTEN {
        let dev = dev.clone();
        let log = log.clone();
        let h = handle.clone();
        let mut rng = handle.rng();
        tasks.push(handle.spawn(async move {
            let start = z as u64 * cfg.zone_size_lbas;
            let end = start + cfg.zone_capacity_lbas;
            let mut wp = start;
            while wp < end {
                let nlb = rng.gen_range(1..=8u64).min(end - wp);
                let fua = rng.gen_bool(0.3);
                let mut buf = vec![0u8; nlb as usize * lba_bytes];
                for (i, b) in buf.chunks_mut(lba_bytes).enumerate() {
                    stamp::fill_block(tag_for(wp + i as u64), b);
                }
                let flags = if fua { IoFlags::FUA } else { IoFlags::NONE };
                if dev.write(wp, &buf, flags).await.is_err() {
                    return;
                }
                wp += nlb;
                log.borrow_mut().acked.push((z, wp, h.now_ns(), fua));
                if rng.gen_bool(0.1) {
                    let submitted = h.now_ns();
                    if dev.flush().await.is_err() {
                        return;
                    }
                    log.borrow_mut().flushes_done.push(submitted);
                }
            }
        }));
    }
    let cutter = {
        let ctrl = ctrl.clone();
        let h = handle.clone();
        handle.spawn(async move {
            h.sleep_until(cut_at_ns).await;
            ctrl.power_cut();
        })
    };
    rt.block_on(async {
        cutter.await;
        for t in tasks {
            t.await;
        }
    });
    ctrl.power_on();

    let log = log.borrow();
    let mut durable_lbas = 0;
    let mut lost_acked_lbas = 0;
    let zones = rt
        .block_on(dev.report_zones(0, ReportFilter::All, cfg.zone_count as usize))
        .unwrap();
    for z in 0..ZONES_WRITTEN {
        let desc = zones[z as usize];
        assert!(
            !desc.state.is_open(),
            "seed {seed}: zone {z} is {:?} after power-on (open zones come back closed)",
            desc.state
        );
        let start = desc.start_lba;
        let wp = if desc.state == ZoneState::Full {
            start + cfg.zone_capacity_lbas
        } else {
            desc.write_pointer
        };
        // Durable: acked with FUA, or acked before the submission of a flush that completed.
        let durable_end = log
            .acked
            .iter()
            .filter(|(zz, _, done, fua)| {
                *zz == z && (*fua || log.flushes_done.iter().any(|f| *f >= *done))
            })
            .map(|(_, end, _, _)| *end)
            .max()
            .unwrap_or(start);
        assert!(
            wp >= durable_end,
            "seed {seed}: zone {z} WP {wp:#x} lost durable data up to {durable_end:#x}"
        );
        let acked_end = log
            .acked
            .iter()
            .filter(|(zz, ..)| *zz == z)
            .map(|(_, end, _, _)| *end)
            .max()
            .unwrap_or(start);
        durable_lbas += durable_end - start;
        lost_acked_lbas += acked_end.saturating_sub(wp);
        if store == StoreKind::None {
            continue;
        }
        // Everything below the WP reads back as written; nothing at or beyond it is claimed.
        let mut buf = vec![0u8; lba_bytes];
        for lba in start..start + cfg.zone_capacity_lbas {
            rt.block_on(dev.read(lba, &mut buf)).unwrap();
            let tag = stamp::tag_of(&buf);
            if lba < wp {
                assert_eq!(
                    tag,
                    Some(tag_for(lba)),
                    "seed {seed}: lba {lba:#x} below WP {wp:#x} is not what was written"
                );
            } else {
                assert!(
                    buf.iter().all(|b| *b == 0),
                    "seed {seed}: lba {lba:#x} beyond WP {wp:#x} holds data"
                );
            }
        }
    }
    assert_eq!(ctrl.injected_faults().len(), 1);
    (durable_lbas, lost_acked_lbas)
}

/// Sums trials so a test can check that both outcomes occurred (the checks are not vacuous).
fn run_trials(seeds: std::ops::Range<u64>, store: StoreKind) {
    let (mut durable, mut lost, mut trials_with_loss) = (0, 0, 0);
    for seed in seeds {
        let (d, l) = run_trial(seed, store);
        durable += d;
        lost += l;
        trials_with_loss += (l > 0) as u32;
    }
    assert!(
        durable > 0,
        "no trial had durable data: the workload never used FUA or flush"
    );
    assert!(
        trials_with_loss > 0 && lost > 0,
        "no trial lost an unflushed write: the power-loss policy was never exercised"
    );
}

#[test]
fn power_cut_at_many_seeded_instants_keeps_every_durable_write() {
    run_trials(0..150, StoreKind::Stamp);
}

#[test]
fn power_cut_with_the_none_store_keeps_write_pointers_at_least_durable() {
    run_trials(1000..1050, StoreKind::None);
}

#[test]
fn commands_fail_while_powered_off_and_work_after_power_on() {
    let mut rt = Runtime::new(7);
    let ctrl = test_ctrl::open_default(&rt.handle(), Profile::builtin("tiny").unwrap());
    let dev = ctrl.first_zoned().unwrap();
    let mut buf = vec![0u8; 4096];
    fill_stamps(&mut buf, 4096, 1);
    ctrl.power_cut();
    let err = rt.block_on(dev.write(0, &buf, IoFlags::NONE)).unwrap_err();
    assert_eq!(err.status, zns_core::NvmeStatus::NamespaceNotReady);
    assert!(err.injected);
    ctrl.power_on();
    rt.block_on(dev.write(0, &buf, IoFlags::NONE)).unwrap();
}

/// A controller of the built-in profile `name` with `overrides`, keeping
/// stamps, and its zone at `zslba` opened with a ZRWA.
fn zrwa_zone_on(
    rt: &mut Runtime,
    name: &str,
    overrides: &[(&str, &str)],
    zslba: u64,
) -> (Controller, zns_device::EmulatedZns) {
    let overrides: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let profile = Profile::builtin(name)
        .unwrap()
        .with_overrides(&overrides)
        .unwrap();
    let ctrl = test_ctrl::open(&rt.handle(), profile, StoreKind::Stamp, HostStack::Spdk);
    let dev = ctrl.first_zoned().unwrap();
    rt.block_on(dev.zone_send(zns_core::ZoneSendCmd {
        action: zns_core::ZoneAction::Open { zrwa: true },
        slba: zslba,
        select_all: false,
    }))
    .unwrap();
    (ctrl, dev)
}

/// ZRWA power-loss policy: `keep` keeps the data written into a ZRWA (above the
/// WP) and the allocation; `discard` loses it and releases the ZRWA.
#[test]
fn zrwa_contents_follow_the_profile_policy() {
    for (policy, kept) in [("keep", true), ("discard", false)] {
        let mut rt = Runtime::new(11);
        let zslba = 256;
        let (ctrl, dev) = zrwa_zone_on(
            &mut rt,
            "tiny",
            &[
                ("power_loss.zrwa", &format!("\"{policy}\"")),
                ("power_loss.completed_unflushed", "\"keep\""),
            ],
            zslba,
        );
        let mut buf = vec![0u8; 8 * 4096];
        fill_stamps(&mut buf, 4096, 500);
        rt.block_on(dev.write(zslba, &buf, IoFlags::NONE)).unwrap();
        // Commit the first 4 blocks; blocks 4..8 stay in the ZRWA.
        rt.block_on(dev.zone_send(zns_core::ZoneSendCmd {
            action: zns_core::ZoneAction::FlushZrwa,
            slba: zslba + 3,
            select_all: false,
        }))
        .unwrap();
        rt.block_on(dev.flush()).unwrap();
        ctrl.power_cut();
        ctrl.power_on();
        let z = rt
            .block_on(dev.report_zones(zslba, ReportFilter::All, 1))
            .unwrap()[0];
        assert_eq!(z.write_pointer, zslba + 4, "{policy}: committed data stays");
        assert_eq!(z.state, ZoneState::Closed, "{policy}");
        assert_eq!(z.attributes.zrwa_valid, kept, "{policy}: ZRWA allocation");
        let mut one = vec![0u8; 4096];
        rt.block_on(dev.read(zslba + 5, &mut one)).unwrap();
        let expected = if kept { Some(505) } else { None };
        assert_eq!(
            stamp::tag_of(&one),
            expected,
            "{policy}: uncommitted ZRWA data"
        );
    }
}

/// In a zone holding a ZRWA, writes land in any order inside the window, so a
/// completed FUA write makes only its own data durable: a lower write still in
/// flight at the power cut follows the in-flight policy (here: dropped).
#[test]
fn a_fua_write_in_a_zrwa_does_not_make_a_lower_write_in_flight_durable() {
    let mut rt = Runtime::new(5);
    // the ZN540 has a power-loss-protected buffer: FUA costs nothing extra
    let zslba = 524_288;
    let (ctrl, dev) = zrwa_zone_on(
        &mut rt,
        "zn540",
        &[
            ("power_loss.zrwa", "\"keep\""),
            ("power_loss.in_flight", "\"drop\""),
        ],
        zslba,
    );
    let h = rt.handle();
    let (d1, d2) = (dev.clone(), dev.clone());
    // B: blocks 8..12 with FUA, submitted first, completes first
    let b = h.spawn(async move {
        let mut buf = vec![0u8; 4 * 4096];
        fill_stamps(&mut buf, 4096, 900 + 8);
        d1.write(zslba + 8, &buf, IoFlags::FUA).await
    });
    // A: blocks 0..8, lower in the window, still in flight when B completes
    let a = h.spawn(async move {
        let mut buf = vec![0u8; 8 * 4096];
        fill_stamps(&mut buf, 4096, 900);
        d2.write(zslba, &buf, IoFlags::NONE).await
    });
    let c = ctrl.clone();
    let a_result = rt.block_on(async move {
        b.await.unwrap();
        c.power_cut();
        a.await
    });
    assert!(a_result.is_err(), "A must still be in flight at the cut");
    ctrl.power_on();
    let read_tag = |rt: &mut Runtime, lba: u64| {
        let mut one = vec![0u8; 4096];
        rt.block_on(dev.read(lba, &mut one)).unwrap();
        stamp::tag_of(&one)
    };
    assert_eq!(
        read_tag(&mut rt, zslba + 9),
        Some(909),
        "the FUA data survives"
    );
    assert_eq!(
        read_tag(&mut rt, zslba + 1),
        None,
        "the in-flight write below it is dropped"
    );
}
