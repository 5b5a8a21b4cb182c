//! Rebuild onto a spare, checked byte for byte against the member it replaces;
//! metadata-zone switching; recovery that continues writing.

mod support;

use std::cell::Cell;
use std::rc::Rc;

use support::*;
use zns_core::{IoFlags, ReportFilter, ZoneAction, ZoneSendCmd, ZoneState, ZonedDevice};
use zns_raid::{Policy, RaidArray, RaidOptions};
use zns_sim::Runtime;

fn write_blocks(rt: &mut Runtime, a: &RaidArray, slba: u64, nlb: u64, salt: u64, fua: bool) {
    let b = a.config().lba_bytes as usize;
    let data: Vec<u8> = (0..nlb)
        .flat_map(|i| block_data(slba + i, salt, b))
        .collect();
    rt.block_on(a.write(slba, &data, IoFlags::with_fua(fua)))
        .unwrap();
}

fn read_member(rt: &mut Runtime, d: &Rc<dyn ZonedDevice>, slba: u64, nlb: u64) -> Vec<u8> {
    let b = d.config().lba_bytes as usize;
    let mut out = vec![0u8; nlb as usize * b];
    let step = d.config().max_transfer_lbas as u64;
    let mut x = 0;
    while x < nlb {
        let n = step.min(nlb - x);
        rt.block_on(d.read(slba + x, &mut out[x as usize * b..(x + n) as usize * b]))
            .unwrap();
        x += n;
    }
    out
}

#[test]
fn rebuild_reproduces_the_failed_member_byte_for_byte() {
    for (victim, n) in [(0usize, 5usize), (2, 5), (4, 5), (1, 3), (3, 4)] {
        let mut rt = Runtime::new(7 + victim as u64);
        let (ctrls, a) = create(&mut rt, &small_zn540(), n, RaidOptions::default()).unwrap();
        let cfg = a.config().clone();
        let l = a.layout();
        let zs = cfg.zone_size_lbas;
        // zone 0 full, zone 1 ending inside a chunk, zone 2 ending on a chunk
        let mut x = 0;
        while x < cfg.zone_capacity_lbas {
            let nlb = (37 + x % 50).min(cfg.zone_capacity_lbas - x);
            write_blocks(&mut rt, &a, x, nlb, 1, x % 3 == 0);
            x += nlb;
        }
        for i in 0..3 {
            write_blocks(&mut rt, &a, zs + 100 * i, 100, 2, true);
        }
        write_blocks(&mut rt, &a, 2 * zs, 3 * l.chunk_lbas, 3, false);
        rt.block_on(a.quiesce());
        let members = devs(&ctrls);
        let old = members[victim].clone();
        let mzs = old.config().zone_size_lbas;
        let before_desc = rt
            .block_on(old.report_zones(0, ReportFilter::All, 3))
            .unwrap();
        let mut before = Vec::new();
        for z in 0..3u32 {
            let wp = a.member_write_pointers(z)[victim];
            // what is committed, plus the partial stripe row (data in the ZRWA)
            let d = a.completed_lbas(z);
            let row_end = ((d / l.stripe_lbas()) + 1) * l.chunk_lbas;
            let span = wp.max(row_end.min(l.rows * l.chunk_lbas));
            before.push((wp, span, read_member(&mut rt, &old, z as u64 * mzs, span)));
        }
        ctrls[victim].fail();
        a.fail_member(victim);
        let spare_ctrl = controllers(&rt, &small_zn540(), 1).remove(0);
        let spare: Rc<dyn ZonedDevice> = Rc::new(spare_ctrl.first_zoned().unwrap());
        rt.block_on(a.rebuild(victim, spare.clone())).unwrap();
        let after_desc = rt
            .block_on(spare.report_zones(0, ReportFilter::All, 3))
            .unwrap();
        for z in 0..3u32 {
            let (wp, span, bytes) = &before[z as usize];
            assert_eq!(
                a.member_write_pointers(z)[victim],
                *wp,
                "n={n} victim {victim} zone {z}"
            );
            let bd = before_desc[z as usize];
            let ad = after_desc[z as usize];
            assert_eq!(bd.state == ZoneState::Full, ad.state == ZoneState::Full);
            if bd.state != ZoneState::Full {
                assert_eq!(
                    bd.write_pointer, ad.write_pointer,
                    "n={n} victim {victim} zone {z}"
                );
            }
            let now = read_member(&mut rt, &spare, z as u64 * mzs, *span);
            assert!(
                now == *bytes,
                "n={n} victim {victim} zone {z}: rebuilt bytes differ (first at block {:?})",
                now.chunks(4096)
                    .zip(bytes.chunks(4096))
                    .position(|(x, y)| x != y)
            );
        }
        // and the array keeps working on the spare
        let wp1 = rt
            .block_on(a.report_zones(zs, ReportFilter::All, 1))
            .unwrap()[0]
            .write_pointer;
        write_blocks(&mut rt, &a, wp1, 40, 9, true);
        let mut buf = vec![0u8; 40 * 4096];
        rt.block_on(a.read(wp1, &mut buf)).unwrap();
        let want: Vec<u8> = (0..40).flat_map(|i| block_data(wp1 + i, 9, 4096)).collect();
        assert!(buf == want);
    }
}

#[test]
fn metadata_zones_switch_when_full_and_recovery_reads_both() {
    // tiny metadata zones hold 192 blocks: every reset logs 2 blocks on each
    // member, and near-end PP goes there too
    let mut rt = Runtime::new(3);
    let opts = RaidOptions {
        chunk_bytes: 32 * 1024,
        policy: Policy::WpLog,
        flush_before_advance: false,
        ..RaidOptions::default()
    };
    let (ctrls, a) = create(&mut rt, &tiny_keep(), 3, opts).unwrap();
    let cap = a.config().zone_capacity_lbas;
    for round in 0..150u64 {
        write_blocks(&mut rt, &a, 0, 5 + round % 7, round, true);
        rt.block_on(a.zone_send(ZoneSendCmd {
            action: ZoneAction::Reset,
            slba: 0,
            select_all: false,
        }))
        .unwrap();
    }
    // fill zone 1 with small writes: its last row logs PP in the metadata zone
    let zs = a.config().zone_size_lbas;
    let mut x = 0;
    while x < cap - 3 {
        let nlb = 3.min(cap - 3 - x);
        write_blocks(&mut rt, &a, zs + x, nlb, 500, true);
        x += nlb;
    }
    write_blocks(&mut rt, &a, 0, 9, 1000, true);
    assert!(a.stats().md_blocks > 2 * 192, "{:?}", a.stats());
    rt.block_on(a.quiesce());
    drop(a);
    // power cycle with member 1 failed: the PP of zone 1's last (partial)
    // stripe comes from the metadata zone
    for c in &ctrls {
        c.power_cut();
        c.power_on();
    }
    ctrls[1].fail();
    let h = rt.handle();
    let a = rt
        .block_on(RaidArray::open(&h, devs(&ctrls), opts))
        .unwrap();
    let d = rt
        .block_on(a.report_zones(0, ReportFilter::All, 2))
        .unwrap();
    assert_eq!(d[0].write_pointer, 9);
    assert_eq!(d[1].write_pointer, zs + cap - 3);
    let mut buf = vec![0u8; 9 * 4096];
    rt.block_on(a.read(0, &mut buf)).unwrap();
    let want: Vec<u8> = (0..9).flat_map(|i| block_data(i, 1000, 4096)).collect();
    assert!(buf == want);
    let mut x = 0;
    while x < cap - 3 {
        let nlb = 3.min(cap - 3 - x);
        let mut buf = vec![0u8; nlb as usize * 4096];
        rt.block_on(a.read(zs + x, &mut buf)).unwrap();
        let want: Vec<u8> = (0..nlb)
            .flat_map(|i| block_data(zs + x + i, 500, 4096))
            .collect();
        assert!(buf == want, "zone 1 at {x}");
        x += nlb;
    }
    // and writing on completes the zone
    write_blocks(&mut rt, &a, zs + cap - 3, 3, 501, true);
    let d = rt
        .block_on(a.report_zones(zs, ReportFilter::All, 1))
        .unwrap();
    assert_eq!(d[0].state, ZoneState::Full);
}

/// Writes `nlb` blocks of pattern `salt` from `slba` in requests of `step`
/// blocks, one after the other (a task's body); counts the completed writes
/// in `done`.
async fn write_run(
    a: Rc<RaidArray>,
    slba: u64,
    nlb: u64,
    step: u64,
    salt: u64,
    done: Rc<Cell<u64>>,
) {
    let mut x = 0;
    while x < nlb {
        let n = step.min(nlb - x);
        let data: Vec<u8> = (0..n)
            .flat_map(|i| block_data(slba + x + i, salt, 4096))
            .collect();
        a.write(slba + x, &data, IoFlags::with_fua(x % 3 == 0))
            .await
            .unwrap();
        done.set(done.get() + 1);
        x += n;
    }
}

fn check_blocks(rt: &mut Runtime, a: &RaidArray, slba: u64, nlb: u64, salt: u64, what: &str) {
    let step = u64::from(a.config().max_transfer_lbas);
    let mut x = 0;
    while x < nlb {
        let n = step.min(nlb - x);
        let mut buf = vec![0u8; n as usize * 4096];
        rt.block_on(a.read(slba + x, &mut buf)).unwrap();
        for i in 0..n {
            let got = &buf[i as usize * 4096..(i as usize + 1) * 4096];
            assert!(
                got == block_data(slba + x + i, salt, 4096).as_slice(),
                "{what}: block {} differs",
                slba + x + i
            );
        }
        x += n;
    }
}

/// The story: `rebuild` used to wait only for the writes in flight when it
/// started. A write issued during the rebuild went to the spare before the
/// rebuild had opened that zone on it, and failed (Invalid Field) — or, had
/// it landed, would have been overwritten by the rebuild. Commands now wait
/// at a gate while the rebuild runs.
#[test]
fn writes_issued_while_a_rebuild_runs_are_kept_and_the_spare_is_consistent() {
    let mut rt = Runtime::new(11);
    let (ctrls, a) = create(&mut rt, &small_zn540(), 5, RaidOptions::default()).unwrap();
    let a = Rc::new(a);
    let zs = a.config().zone_size_lbas;
    let chunk = a.layout().chunk_lbas;
    // zone 0: 7 chunks and a bit; zone 1: 2 chunks and a bit
    write_blocks(&mut rt, &a, 0, 7 * chunk + 5, 1, true);
    write_blocks(&mut rt, &a, zs, 2 * chunk + 3, 2, false);
    rt.block_on(a.quiesce());
    let victim = 2;
    ctrls[victim].fail();
    a.fail_member(victim);
    let spare_ctrl = controllers(&rt, &small_zn540(), 1).remove(0);
    let spare: Rc<dyn ZonedDevice> = Rc::new(spare_ctrl.first_zoned().unwrap());
    let h = rt.handle();
    // three writers run degraded (zones 0 and 1 go on, zone 2 is new); the
    // rebuild starts while they are writing, and a read comes in during it
    let done: Rc<Cell<u64>> = Rc::default();
    let writers = vec![
        h.spawn(write_run(
            a.clone(),
            7 * chunk + 5,
            90 * chunk,
            3,
            1,
            done.clone(),
        )),
        h.spawn(write_run(
            a.clone(),
            zs + 2 * chunk + 3,
            95 * chunk,
            5,
            2,
            done.clone(),
        )),
        h.spawn(write_run(
            a.clone(),
            2 * zs,
            100 * chunk + 7,
            7,
            3,
            done.clone(),
        )),
    ];
    let (h2, a2, done2) = (h.clone(), a.clone(), done.clone());
    let (before, after_rebuild) = rt.block_on(async move {
        h2.sleep(300_000).await;
        let before = done2.get();
        let rebuild = {
            let (a, spare) = (a2.clone(), spare.clone());
            h2.spawn(async move { a.rebuild(victim, spare).await })
        };
        h2.sleep(1_000).await;
        let mut buf = vec![0u8; 16 * 4096];
        a2.read(0, &mut buf).await.unwrap();
        let want: Vec<u8> = (0..16).flat_map(|i| block_data(i, 1, 4096)).collect();
        assert!(buf == want, "a read during the rebuild");
        rebuild.await.unwrap();
        let after_rebuild = done2.get();
        for w in writers {
            w.await;
        }
        (before, after_rebuild)
    });
    let total = done.get();
    assert!(
        before > 0 && after_rebuild > before && total > after_rebuild,
        "the writes must run before, across and after the rebuild: {before} / {after_rebuild} / {total}"
    );
    rt.block_on(a.quiesce());
    let spans = [
        (0, 97 * chunk + 5, 1),
        (zs, 97 * chunk + 3, 2),
        (2 * zs, 100 * chunk + 7, 3),
    ];
    for (slba, nlb, salt) in spans {
        check_blocks(&mut rt, &a, slba, nlb, salt, "after the rebuild");
    }
    // the spare must hold what parity says: fail another member and read
    // everything through reconstruction
    let other = 0;
    ctrls[other].fail();
    a.fail_member(other);
    for (slba, nlb, salt) in spans {
        check_blocks(&mut rt, &a, slba, nlb, salt, "degraded, after the rebuild");
    }
}

#[test]
fn a_member_failing_under_writes_is_survived_and_rebuilt() {
    for victim in 0..5usize {
        let mut rt = Runtime::new(21 + victim as u64);
        let (ctrls, a) = create(&mut rt, &small_zn540(), 5, RaidOptions::default()).unwrap();
        let a = Rc::new(a);
        let zs = a.config().zone_size_lbas;
        let chunk = a.layout().chunk_lbas;
        let h = rt.handle();
        let done: Rc<Cell<u64>> = Rc::default();
        let writers = vec![
            h.spawn(write_run(a.clone(), 0, 90 * chunk, 3, 1, done.clone())),
            h.spawn(write_run(a.clone(), zs, 95 * chunk + 3, 5, 2, done.clone())),
            h.spawn(write_run(
                a.clone(),
                2 * zs,
                100 * chunk + 7,
                7,
                3,
                done.clone(),
            )),
        ];
        // the member dies while the writes run; the array finds out by itself
        let (h2, done2) = (h.clone(), done.clone());
        let dying = ctrls[victim].clone();
        let at_failure = rt.block_on(async move {
            h2.sleep(200_000 + victim as u64 * 37_000).await;
            dying.fail();
            let at = done2.get();
            for w in writers {
                w.await;
            }
            at
        });
        assert!(
            at_failure > 0 && done.get() > at_failure,
            "writes before and after the failure: {at_failure} / {}",
            done.get()
        );
        rt.block_on(a.quiesce());
        assert_eq!(a.failed_members(), vec![victim]);
        let spans = [
            (0, 90 * chunk, 1),
            (zs, 95 * chunk + 3, 2),
            (2 * zs, 100 * chunk + 7, 3),
        ];
        let check_spans = |rt: &mut Runtime, what: &str| {
            for (slba, nlb, salt) in spans {
                check_blocks(rt, &a, slba, nlb, salt, &format!("victim {victim}, {what}"));
            }
        };
        check_spans(&mut rt, "degraded");
        let spare_ctrl = controllers(&rt, &small_zn540(), 1).remove(0);
        let spare: Rc<dyn ZonedDevice> = Rc::new(spare_ctrl.first_zoned().unwrap());
        rt.block_on(a.rebuild(victim, spare)).unwrap();
        check_spans(&mut rt, "rebuilt");
        let other = (victim + 1) % 5;
        ctrls[other].fail();
        a.fail_member(other);
        for (slba, nlb, salt) in spans {
            let what = format!("victim {victim}, rebuilt, member {other} failed");
            check_blocks(&mut rt, &a, slba, nlb, salt, &what);
        }
    }
}

/// The story: `rebuild` wrote a zone finished inside a stripe as plain rows
/// and left out the partial parity that member held (its Rule-1 slot, or its
/// metadata-zone records near the zone end). The array read fine on the
/// spare, but when another member failed later, the partial stripe came
/// back wrong.
#[test]
fn a_zone_finished_inside_a_stripe_keeps_its_partial_parity_through_a_rebuild() {
    for (n, reopen) in [
        (3usize, false),
        (4, false),
        (5, false),
        (3, true),
        (5, true),
    ] {
        for (victim, ends) in [(0usize, [1u64, 97]), (1, [40, 130]), (2, [17, 200])] {
            if victim >= n {
                continue;
            }
            let mut rt = Runtime::new(31 + victim as u64);
            let (ctrls, a) = create(&mut rt, &small_zn540(), n, RaidOptions::default()).unwrap();
            let zs = a.config().zone_size_lbas;
            let cap = a.config().zone_capacity_lbas;
            // zone 0 and 1 end inside a stripe and are finished; zone 2 ends
            // inside the last stripe rows (partial parity in the metadata
            // zone) and stays open
            for (z, &end) in ends.iter().enumerate() {
                let slba = z as u64 * zs;
                write_blocks(&mut rt, &a, slba, end, z as u64 + 1, false);
                rt.block_on(a.zone_send(ZoneSendCmd {
                    action: ZoneAction::Finish,
                    slba,
                    select_all: false,
                }))
                .unwrap();
            }
            let near_end = cap - 7;
            let mut x = 0;
            while x < near_end {
                let nlb = (120).min(near_end - x);
                write_blocks(&mut rt, &a, 2 * zs + x, nlb, 3, x % 240 == 0);
                x += nlb;
            }
            rt.block_on(a.quiesce());
            ctrls[victim].fail();
            a.fail_member(victim);
            let spare_ctrl = controllers(&rt, &small_zn540(), 1).remove(0);
            let spare: Rc<dyn ZonedDevice> = Rc::new(spare_ctrl.first_zoned().unwrap());
            rt.block_on(a.rebuild(victim, spare)).unwrap();
            let mut ctrls = ctrls;
            ctrls[victim] = spare_ctrl;
            let a = if reopen {
                // and through a restart: recovery finds the same zones
                rt.block_on(a.shutdown()).unwrap();
                drop(a);
                let h = rt.handle();
                rt.block_on(RaidArray::open(&h, devs(&ctrls), RaidOptions::default()))
                    .unwrap()
            } else {
                a
            };
            let spans = [(0, ends[0], 1), (zs, ends[1], 2), (2 * zs, near_end, 3)];
            // another member fails: reads through reconstruction now need the
            // partial parity the spare holds
            let other = (victim + 1) % n;
            let what = format!(
                "n={n} victim {victim} rebuilt (reopened: {reopen}), member {other} failed"
            );
            ctrls[other].fail();
            a.fail_member(other);
            for (slba, nlb, salt) in spans {
                check_blocks(&mut rt, &a, slba, nlb, salt, &what);
            }
        }
    }
}

#[test]
fn a_zone_finished_inside_a_stripe_reads_degraded_after_a_restart() {
    for n in [3usize, 5] {
        let mut rt = Runtime::new(41);
        let (ctrls, a) = create(&mut rt, &small_zn540(), n, RaidOptions::default()).unwrap();
        let end = 2 * a.layout().stripe_lbas() + 21;
        write_blocks(&mut rt, &a, 0, end, 1, false);
        rt.block_on(a.zone_send(ZoneSendCmd {
            action: ZoneAction::Finish,
            slba: 0,
            select_all: false,
        }))
        .unwrap();
        rt.block_on(a.shutdown()).unwrap();
        drop(a);
        let h = rt.handle();
        let a = rt
            .block_on(RaidArray::open(&h, devs(&ctrls), RaidOptions::default()))
            .unwrap();
        // the member of the partial stripe's first chunk
        let victim = a.layout().data_dev(0, 2, 0) as usize;
        ctrls[victim].fail();
        a.fail_member(victim);
        check_blocks(
            &mut rt,
            &a,
            0,
            end,
            1,
            &format!("n={n} member {victim} failed"),
        );
    }
}
