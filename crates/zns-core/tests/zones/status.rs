//! One test per NVMe status the state machine returns, named for the status,
//! covering every way the status can arise (in the check order of docs/semantics.md).

use super::common::*;
use zns_core::NvmeStatus::*;
use zns_core::*;

#[test]
fn invalid_field_02h() {
    assert_eq!(InvalidField.code(), 0x002);
    let mut s = set();
    // Zero-length and over-MDTS transfers (read, write, append).
    assert_eq!(s.write(0, 0), Err(InvalidField));
    assert_eq!(s.write(0, 17), Err(InvalidField));
    assert_eq!(s.check_read(0, 0), Err(InvalidField));
    assert_eq!(s.check_read(0, 17), Err(InvalidField));
    assert_eq!(s.append(0, 0), Err(InvalidField));
    assert_eq!(s.append(0, 17), Err(InvalidField));
    // MDTS is checked before the namespace range.
    assert_eq!(s.write(u64::MAX, 17), Err(InvalidField));
    // Append: SLBA not a zone start, size above ZASL (8).
    assert_eq!(s.append(1, 1), Err(InvalidField));
    assert_eq!(s.append(zs(1) + 63, 1), Err(InvalidField));
    assert_eq!(s.append(0, 9), Err(InvalidField));
    // Management: SLBA not a zone start.
    for a in [
        ZoneAction::Open { zrwa: false },
        ZoneAction::Close,
        ZoneAction::Finish,
        ZoneAction::Reset,
        ZoneAction::Offline,
    ] {
        assert_eq!(s.zone_send(send(a, 5)), Err(InvalidField), "{a:?}");
    }
    // ZRWA flush: select all, zone without a ZRWA, size not a multiple of ZRWAFG.
    assert_eq!(
        s.zone_send(send_all(ZoneAction::FlushZrwa)),
        Err(InvalidField)
    );
    assert_eq!(flush(&mut s, 1), Err(InvalidField));
    open_zrwa(&mut s, 0).unwrap();
    assert_eq!(flush(&mut s, 0), Err(InvalidField)); // 1 LBA, FG 2
    assert_eq!(flush(&mut s, 2), Err(InvalidField)); // 3 LBAs
                                                     // Fault injection on a zone index that does not exist.
    assert_eq!(s.inject_read_only(8), Err(InvalidField));
    assert_eq!(s.inject_offline(u32::MAX), Err(InvalidField));
    s.check_invariants().unwrap();
}

#[test]
fn lba_out_of_range_80h() {
    assert_eq!(LbaOutOfRange.code(), 0x080);
    let mut s = set();
    let total = 8 * ZSZE;
    assert_eq!(s.write(total, 1), Err(LbaOutOfRange));
    assert_eq!(s.write(total - 1, 2), Err(LbaOutOfRange));
    assert_eq!(s.write(u64::MAX, 1), Err(LbaOutOfRange));
    assert_eq!(s.write(u64::MAX - 3, 16), Err(LbaOutOfRange));
    assert_eq!(s.check_read(total - 1, 2), Err(LbaOutOfRange));
    assert_eq!(s.check_read(u64::MAX, 16), Err(LbaOutOfRange));
    assert_eq!(s.append(total, 1), Err(LbaOutOfRange));
    assert_eq!(
        s.zone_send(send(ZoneAction::Reset, total)),
        Err(LbaOutOfRange)
    );
    assert_eq!(
        s.zone_send(send(ZoneAction::FlushZrwa, u64::MAX)),
        Err(LbaOutOfRange)
    );
    assert_eq!(s.report(total, ReportFilter::All, 10), Err(LbaOutOfRange));
    assert!(s.report(total - 1, ReportFilter::All, 10).is_ok());
}

#[test]
fn invalid_zone_operation_b6h() {
    assert_eq!(InvalidZoneOperation.code(), 0x1B6);
    // Append to a zone holding a ZRWA.
    let mut s = set();
    open_zrwa(&mut s, 1).unwrap();
    assert_eq!(s.append(zs(1), 1), Err(InvalidZoneOperation));
    // ...checked before the append SLBA and size checks (QEMU order).
    assert_eq!(s.append(zs(1) + 3, 9), Err(InvalidZoneOperation));
    // ZRWA allocation or flush on a namespace without ZRWA support.
    let mut s = set_with(|c| c.zrwa = None);
    assert_eq!(open_zrwa(&mut s, 0), Err(InvalidZoneOperation));
    assert_eq!(flush(&mut s, 1), Err(InvalidZoneOperation));
    // Select-all open with ZRWAA, when there is a closed zone to open.
    s.write(0, 1).unwrap();
    close(&mut s, 0).unwrap();
    assert_eq!(
        s.zone_send(send_all(ZoneAction::Open { zrwa: true })),
        Err(InvalidZoneOperation)
    );
    s.check_invariants().unwrap();
}

#[test]
fn zrwa_resources_unavailable_b7h() {
    assert_eq!(ZrwaResourcesUnavailable.code(), 0x1B7);
    let mut s = set();
    open_zrwa(&mut s, 0).unwrap();
    open_zrwa(&mut s, 1).unwrap();
    assert_eq!(s.zrwa_in_use(), 2);
    // No ZRWA left: from Empty, from ZSIO.
    assert_eq!(open_zrwa(&mut s, 2), Err(ZrwaResourcesUnavailable));
    s.write(zs(2), 2).unwrap();
    assert_eq!(open_zrwa(&mut s, 2), Err(ZrwaResourcesUnavailable));
    assert_eq!(state(&s, 2), ZoneState::ImplicitlyOpened);
    // WP not a multiple of ZRWAFG (2) from ZSLBA.
    let mut s = set();
    s.write(0, 3).unwrap();
    assert_eq!(open_zrwa(&mut s, 0), Err(ZrwaResourcesUnavailable));
    close(&mut s, 0).unwrap();
    assert_eq!(open_zrwa(&mut s, 0), Err(ZrwaResourcesUnavailable));
    assert_eq!(
        s.zone_send(send_all(ZoneAction::Open { zrwa: true })),
        Err(ZrwaResourcesUnavailable)
    );
    // Select-all open needing more ZRWAs than are free.
    let mut s = set();
    for z in 0..3 {
        s.write(zs(z), 2).unwrap();
        close(&mut s, z).unwrap();
    }
    assert_eq!(
        s.zone_send(send_all(ZoneAction::Open { zrwa: true })),
        Err(ZrwaResourcesUnavailable)
    );
    assert_eq!(s.open_zones(), 0, "select-all open is all or nothing");
    s.check_invariants().unwrap();
}

#[test]
fn zone_boundary_error_b8h() {
    assert_eq!(ZoneBoundaryError.code(), 0x1B8);
    let mut s = set();
    // Write crossing ZCAP (48).
    for k in 0..2 {
        s.write(16 * k, 16).unwrap();
    }
    assert!(s.clone().write(32, 16).unwrap().became_full);
    assert_eq!(s.write(33, 16), Err(ZoneInvalidWrite));
    let mut s = set();
    s.write(0, 16).unwrap();
    s.write(16, 16).unwrap();
    s.write(32, 8).unwrap();
    assert_eq!(s.write(40, 9), Err(ZoneBoundaryError));
    // Append crossing ZCAP.
    assert!(s.clone().append(0, 8).unwrap().became_full);
    s.write(40, 4).unwrap();
    assert_eq!(s.append(0, 5), Err(ZoneBoundaryError));
    // Read crossing a zone boundary without RAZB.
    assert_eq!(s.check_read(60, 8), Err(ZoneBoundaryError));
    // ZRWA write crossing ZCAP inside the window.
    let mut s = set();
    open_zrwa(&mut s, 0).unwrap();
    for k in 0..5 {
        flush(&mut s, 8 * k + 7).unwrap();
    }
    assert_eq!(wp(&s, 0), 40); // window [40, 48), IZFR gone
    assert_eq!(s.write(44, 5), Err(ZoneBoundaryError));
    // Explicit flush outside [WP, WP + ZRWASZ) or at/after ZCAP.
    let mut s = set();
    open_zrwa(&mut s, 1).unwrap();
    assert_eq!(flush(&mut s, zs(1) + 8), Err(ZoneBoundaryError));
    s.write(zs(1), 10).unwrap(); // implicit flush: WP 2
    assert_eq!(flush(&mut s, zs(1)), Err(ZoneBoundaryError));
    let mut s = set_with(|c| c.zone_capacity_lbas = 11);
    open_zrwa(&mut s, 0).unwrap();
    s.write(0, 11).unwrap(); // WP 4, window [4, 12)
    assert_eq!(wp(&s, 0), 4);
    assert_eq!(flush(&mut s, 11), Err(ZoneBoundaryError)); // inside WP + ZRWASZ but ≥ ZCAP
}

#[test]
fn zone_is_full_b9h() {
    assert_eq!(ZoneIsFull.code(), 0x1B9);
    let mut s = set();
    finish(&mut s, 0).unwrap();
    assert_eq!(s.write(0, 1), Err(ZoneIsFull));
    assert_eq!(s.append(0, 1), Err(ZoneIsFull));
    // State is checked before the WP and the boundary (FEMU checks the boundary first).
    assert_eq!(s.write(47, 2), Err(ZoneIsFull));
    assert_eq!(s.write(63, 1), Err(ZoneIsFull));
}

#[test]
fn zone_is_read_only_bah() {
    assert_eq!(ZoneIsReadOnly.code(), 0x1BA);
    let mut s = set();
    s.inject_read_only(3).unwrap();
    assert_eq!(s.write(zs(3), 1), Err(ZoneIsReadOnly));
    assert_eq!(s.append(zs(3), 1), Err(ZoneIsReadOnly));
    assert_eq!(s.write(zs(3) + 50, 14), Err(ZoneIsReadOnly));
    assert_eq!(s.check_read(zs(3), 16), Ok(()));
}

#[test]
fn zone_is_offline_bbh() {
    assert_eq!(ZoneIsOffline.code(), 0x1BB);
    let mut s = set_with(|c| c.read_across_zone_boundary = true);
    s.inject_offline(3).unwrap();
    assert_eq!(s.write(zs(3), 1), Err(ZoneIsOffline));
    assert_eq!(s.append(zs(3), 1), Err(ZoneIsOffline));
    assert_eq!(s.check_read(zs(3) + 5, 1), Err(ZoneIsOffline));
    // A read spanning into an offline zone (RAZB set).
    assert_eq!(s.check_read(zs(3) - 4, 8), Err(ZoneIsOffline));
    assert_eq!(s.check_read(zs(3) - 4, 4), Ok(()));
    // Without RAZB the first zone's offline state wins over the boundary error.
    let mut s = set();
    s.inject_offline(3).unwrap();
    assert_eq!(s.check_read(zs(4) - 2, 4), Err(ZoneIsOffline));
    assert_eq!(s.check_read(zs(3) - 2, 4), Err(ZoneBoundaryError));
}

#[test]
fn zone_invalid_write_bch() {
    assert_eq!(ZoneInvalidWrite.code(), 0x1BC);
    let mut s = set();
    assert_eq!(s.write(1, 1), Err(ZoneInvalidWrite));
    s.write(0, 4).unwrap();
    assert_eq!(s.write(3, 1), Err(ZoneInvalidWrite));
    assert_eq!(s.write(5, 1), Err(ZoneInvalidWrite));
    // The WP check comes before the boundary check.
    assert_eq!(s.write(40, 16), Err(ZoneInvalidWrite));
    // ZRWA: below the WP, or ending past WP + 2·ZRWASZ.
    let mut s = set();
    open_zrwa(&mut s, 0).unwrap();
    s.write(0, 10).unwrap(); // WP 2
    assert_eq!(s.write(1, 1), Err(ZoneInvalidWrite));
    assert_eq!(s.write(2 + 16 - 4, 5), Err(ZoneInvalidWrite));
    assert_eq!(
        s.write(2 + 16 - 4, 4).map(|e| e.committed),
        Ok(Some((2, 10)))
    );
}

#[test]
fn too_many_active_zones_bdh() {
    assert_eq!(TooManyActiveZones.code(), 0x1BD);
    let mut s = set(); // MOR 3, MAR 4
    for z in 0..4 {
        s.write(zs(z), 1).unwrap();
        close(&mut s, z).unwrap();
    }
    assert_eq!(s.active_zones(), 4);
    assert_eq!(s.write(zs(4), 1), Err(TooManyActiveZones));
    assert_eq!(s.append(zs(4), 1), Err(TooManyActiveZones));
    assert_eq!(open(&mut s, 4), Err(TooManyActiveZones));
    assert_eq!(open_zrwa(&mut s, 4), Err(TooManyActiveZones));
    // Closed zones still open (they hold an active resource already).
    assert!(s.write(zs(0) + 1, 1).unwrap().implicitly_opened);
    // Active is checked before open: all 3 open slots used too.
    open(&mut s, 1).unwrap();
    open(&mut s, 2).unwrap();
    assert_eq!(s.open_zones(), 3);
    assert_eq!(s.write(zs(5), 1), Err(TooManyActiveZones));
    s.check_invariants().unwrap();
}

#[test]
fn too_many_open_zones_beh() {
    assert_eq!(TooManyOpenZones.code(), 0x1BE);
    let mut s = set_with(|c| c.max_active_zones = 5);
    for z in 0..3 {
        s.write(zs(z), 1).unwrap();
    }
    assert_eq!(s.write(zs(3), 1), Err(TooManyOpenZones));
    assert_eq!(s.append(zs(3), 1), Err(TooManyOpenZones));
    assert_eq!(open(&mut s, 3), Err(TooManyOpenZones));
    // From Closed too.
    close(&mut s, 0).unwrap();
    s.write(zs(3), 1).unwrap();
    assert_eq!(s.write(zs(0) + 1, 1), Err(TooManyOpenZones));
    assert_eq!(open(&mut s, 0), Err(TooManyOpenZones));
    // Select-all open of more closed zones than free open resources.
    close(&mut s, 1).unwrap();
    close(&mut s, 2).unwrap();
    assert_eq!(
        s.zone_send(send_all(ZoneAction::Open { zrwa: false })),
        Err(TooManyOpenZones)
    );
    assert_eq!(s.open_zones(), 1);
    // With auto-close, explicitly opened zones are never closed by the controller.
    let mut s = set_with(|c| {
        c.auto_close_implicit = true;
        c.max_active_zones = 5
    });
    for z in 0..3 {
        open(&mut s, z).unwrap();
    }
    assert_eq!(s.write(zs(3), 1), Err(TooManyOpenZones));
    s.check_invariants().unwrap();
}

#[test]
fn invalid_zone_state_transition_bfh() {
    assert_eq!(InvalidZoneStateTransition.code(), 0x1BF);
    let mut s = set();
    assert_eq!(close(&mut s, 0), Err(InvalidZoneStateTransition)); // ZSE
    assert_eq!(
        s.zone_send(send(ZoneAction::Offline, 0)),
        Err(InvalidZoneStateTransition)
    );
    finish(&mut s, 0).unwrap();
    assert_eq!(open(&mut s, 0), Err(InvalidZoneStateTransition));
    assert_eq!(close(&mut s, 0), Err(InvalidZoneStateTransition));
    s.inject_read_only(1).unwrap();
    for a in [
        ZoneAction::Open { zrwa: false },
        ZoneAction::Close,
        ZoneAction::Finish,
        ZoneAction::Reset,
    ] {
        assert_eq!(
            s.zone_send(send(a, zs(1))),
            Err(InvalidZoneStateTransition),
            "{a:?}"
        );
    }
    s.inject_offline(2).unwrap();
    assert_eq!(reset(&mut s, 2), Err(InvalidZoneStateTransition));
    assert_eq!(s.inject_read_only(2), Err(InvalidZoneStateTransition));
}

#[test]
fn every_zoned_status_has_a_test() {
    // The statuses above are exactly the ones ZoneSet can return: generic 02h/80h and all of B6h..BFh.
    let tested = [
        InvalidField,
        LbaOutOfRange,
        InvalidZoneOperation,
        ZrwaResourcesUnavailable,
        ZoneBoundaryError,
        ZoneIsFull,
        ZoneIsReadOnly,
        ZoneIsOffline,
        ZoneInvalidWrite,
        TooManyActiveZones,
        TooManyOpenZones,
        InvalidZoneStateTransition,
    ];
    for st in NvmeStatus::ALL.iter().filter(|s| s.sct() == 1) {
        assert!(tested.contains(st), "{st:?}");
    }
}
