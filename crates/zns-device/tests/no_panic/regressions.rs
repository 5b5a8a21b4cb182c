//! Regression tests for what the properties found.

use super::*;
use crate::test_ctrl;

/// Found by `random_and_mutated_traces_never_panic`: a trace
/// `{"op":"wait","ns":18446744073709551615}` (or `Handle::sleep(u64::MAX)`)
/// followed by any command overflowed the timing model's arithmetic
/// (zns-sim timing/array.rs `frontend`: "attempt to add with overflow").
#[test]
pub(super) fn commands_after_the_clock_reached_its_end_are_values() {
    let text = [
        r#"{"op":"wait","ns":18446744073709551615}"#,
        r#"{"op":"write","slba":0,"nlb":4}"#,
        r#"{"op":"append","zone":1,"nlb":2}"#,
        r#"{"op":"read","slba":0,"nlb":4}"#,
        r#"{"op":"open","zone":2,"zrwa":true}"#,
        r#"{"op":"write","slba":512,"nlb":8}"#,
        r#"{"op":"zrwa-flush","lba":515}"#,
        r#"{"op":"finish","zone":0}"#,
        r#"{"op":"reset","all":true}"#,
        r#"{"op":"flush"}"#,
        r#"{"op":"wait","ns":5}"#,
        r#"{"op":"power-cut"}"#,
        r#"{"op":"power-on"}"#,
        r#"{"op":"report","count":3}"#,
    ]
    .join("\n");
    let commands = parse_trace(&text).unwrap();
    for stack in STACKS {
        let mut rt = Runtime::new(1);
        let ctrl = tiny(&rt, StoreKind::Stamp, stack);
        let results = rt.block_on(run_trace(&ctrl, &commands)).unwrap();
        for r in &results {
            assert!(
                r.status.is_success(),
                "{stack:?}: line {}: {:?}",
                r.line,
                r.status
            );
        }
    }
    // The same through the API, on a conventional namespace too.
    let mut rt = Runtime::new(1);
    let ctrl = test_ctrl::open(
        &rt.handle(),
        Profile::builtin("zn540-cns").unwrap(),
        StoreKind::Memory,
        HostStack::IoUringMqDeadline,
    );
    let h = rt.handle();
    rt.block_on(h.sleep(u64::MAX));
    let conv = ctrl.conventional(1).unwrap();
    let zns = ctrl.zoned(2).unwrap();
    let mut buf = vec![7u8; 8192];
    assert_eq!(rt.block_on(conv.write(10, &buf, IoFlags::FUA)), Ok(()));
    assert_eq!(rt.block_on(conv.discard(10, 1)), Ok(()));
    assert_eq!(rt.block_on(conv.read(10, &mut buf)), Ok(()));
    assert_eq!(rt.block_on(zns.write(0, &buf, IoFlags::NONE)), Ok(()));
    assert_eq!(rt.block_on(zns.append(0, &buf, IoFlags::NONE)), Ok(2));
    assert_eq!(rt.block_on(zns.flush()), Ok(()));
}

/// Found by `random_and_mutated_traces_never_panic`: on a valid profile whose
/// zones are larger than 2^32 LBAs, `{"op":"report","zone":4294967295}`
/// overflowed `zone × zone_size_lbas` (zns-device trace.rs).
#[test]
pub(super) fn trace_report_of_a_zone_far_past_the_end_is_lba_out_of_range() {
    let mut rt = Runtime::new(1);
    let ctrl = test_ctrl::open_default(&rt.handle(), big_zone_profile());
    let commands = parse_trace(r#"{"op":"report","zone":4294967295}"#).unwrap();
    let results = rt.block_on(run_trace(&ctrl, &commands)).unwrap();
    assert_eq!(results[0].status.name, NvmeStatus::LbaOutOfRange.name());
}

/// Known bug (not a panic; controller.rs `zoned_write_inner`, mq-deadline
/// path): a write admitted before a power cut and still queued behind the
/// zone write lock is dispatched when the lock frees up — to the powered-off
/// device. It changes the zone (WP, implicit open) and the data, and the host
/// is told "aborted due to power loss". After power-on the zone is open (open
/// zones must come back closed) and holds data of writes reported aborted.
#[test]
pub(super) fn writes_queued_at_a_power_cut_are_not_dispatched_while_the_power_is_off() {
    let mut rt = Runtime::new(1);
    let ctrl = tiny(&rt, StoreKind::Memory, HostStack::IoUringMqDeadline);
    let dev = ctrl.first_zoned().unwrap();
    let h = rt.handle();
    let tasks: Vec<_> = (0..3u64)
        .map(|i| {
            let d = dev.clone();
            h.spawn(async move { d.write(i, &[1u8; 4096], IoFlags::NONE).await })
        })
        .collect();
    let (h2, c) = (h.clone(), ctrl.clone());
    let results = rt.block_on(async move {
        h2.sleep(1000).await; // write 0 in flight, writes 1 and 2 queued
        c.power_cut();
        let mut v = Vec::new();
        for t in tasks {
            v.push(t.await);
        }
        v
    });
    let aborted = Err(NvmeError::injected(NvmeStatus::AbortedPowerLoss));
    assert_eq!(results, vec![aborted; 3]);
    ctrl.power_on();
    let zone = rt
        .block_on(dev.report_zones(0, ReportFilter::All, 1))
        .unwrap()[0];
    assert!(!zone.state.is_open(), "open after power-on: {zone:?}");
    assert!(zone.write_pointer <= 1, "queued writes landed: {zone:?}");
}

/// Known bug (not a panic; mqdeadline.rs `Ticket::drop`): cancelling a write
/// in the instant it is granted the zone lock fails the writes merged behind
/// it with a non-injected Internal Error, although they never reached the
/// device. They should be dispatched on their own (here: Zone Invalid Write,
/// since the cancelled write left a gap) or re-queued.
#[test]
pub(super) fn cancelling_a_write_just_granted_the_zone_lock_does_not_fail_the_merged_writes() {
    // When does the first write complete (the same run, deterministic)?
    let first_done = {
        let mut rt = Runtime::new(1);
        let ctrl = tiny(&rt, StoreKind::Memory, HostStack::IoUringMqDeadline);
        let dev = ctrl.first_zoned().unwrap();
        rt.block_on(dev.write(0, &[0u8; 4096], IoFlags::NONE))
            .unwrap();
        rt.now_ns()
    };
    let mut rt = Runtime::new(1);
    let ctrl = tiny(&rt, StoreKind::Memory, HostStack::IoUringMqDeadline);
    let dev = ctrl.first_zoned().unwrap();
    let h = rt.handle();
    let mut tasks: Vec<_> = (0..3u64)
        .map(|i| {
            let d = dev.clone();
            h.spawn(async move { d.write(i, &[0u8; 4096], IoFlags::NONE).await })
        })
        .collect();
    let second = tasks.remove(1);
    let h2 = h.clone();
    let results = rt.block_on(async move {
        // Wakes right after write 0 completed and granted the lock to write 1
        // (with write 2 merged behind it), before write 1 runs.
        h2.sleep_until(first_done).await;
        second.abort();
        let mut v = Vec::new();
        for t in tasks {
            v.push(t.await);
        }
        v
    });
    assert_eq!(results[0], Ok(()));
    assert_eq!(
        results[1],
        Err(NvmeError::from(NvmeStatus::ZoneInvalidWrite)),
        "the write merged behind the cancelled one"
    );
}

/// Known issue (not a panic; store/image.rs `current_slot` + controller.rs
/// `open_image`): one flipped byte in the current metadata slot (a zone table
/// written by a *completed* flush) makes `open_image` fall back to the
/// previous slot, as it must for a save torn by a crash. It must then say so
/// (`metadata_recovery`) and keep the data past the older write pointers, so
/// every block a completed flush made durable still reads back.
#[test]
pub(super) fn a_damaged_current_zone_table_is_reported_and_loses_no_flushed_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    let written = build_image(&path);
    let bytes = std::fs::read(&path).unwrap();
    let map = image_map(&bytes);
    let current = if slot_sequence(&bytes, &map, 0) > slot_sequence(&bytes, &map, 1) {
        0
    } else {
        1
    };
    let offset = map.metadata_offset + current * map.slot_bytes; // the slot's magic
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&[bytes[offset as usize] ^ 1], offset)
        .unwrap();
    drop(file);
    let copy = dir.path().join("copy.img");
    std::fs::copy(&path, &copy).unwrap();
    {
        let rt = Runtime::new(3);
        let ctrl = Controller::open_image(&rt.handle(), &copy, HostStack::Spdk).unwrap();
        assert!(
            ctrl.metadata_recovery().is_some(),
            "the fallback must be reported"
        );
    }
    // Every flushed block still reads back.
    let outcome = open_and_verify(&path, &written, false);
    assert!(matches!(outcome, Ok(true)), "{outcome:?}");
}
