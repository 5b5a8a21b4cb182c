//! Invalid arrays are refused with a clear error.

mod support;

use support::*;
use zns_raid::{RaidError, RaidOptions};
use zns_sim::Runtime;

fn err(p: &zns_device::Profile, n: usize, chunk_kib: u64) -> RaidError {
    let mut rt = Runtime::new(1);
    let opts = RaidOptions {
        chunk_bytes: chunk_kib * 1024,
        ..RaidOptions::default()
    };
    match create(&mut rt, p, n, opts) {
        Ok(_) => panic!("accepted"),
        Err(e) => e,
    }
}

#[test]
fn fewer_than_three_members() {
    let e = err(&tiny_keep(), 2, 32);
    assert!(matches!(e, RaidError::TooFewMembers { members: 2 }), "{e}");
    assert!(e.to_string().contains("at least 3"));
}

#[test]
fn mixed_member_geometries() {
    let mut rt = Runtime::new(1);
    let mut ctrls = controllers(&rt, &tiny_keep(), 3);
    ctrls.extend(controllers(
        &rt,
        &profile("tiny", &[("namespace.0.zone_count", "12")]),
        1,
    ));
    let h = rt.handle();
    let e = rt
        .block_on(zns_raid::RaidArray::create(
            &h,
            devs(&ctrls),
            RaidOptions {
                chunk_bytes: 32 * 1024,
                ..RaidOptions::default()
            },
        ))
        .err()
        .unwrap();
    assert!(
        matches!(e, RaidError::MixedGeometry { member: 3, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("zone_count = 12"), "{e}");
}

#[test]
fn chunk_not_twice_the_flush_granularity() {
    // tiny: ZRWAFG = 4 LBAs (16 KiB); a 16 KiB chunk cannot advance by halves
    let e = err(&tiny_keep(), 3, 16);
    assert!(
        matches!(
            e,
            RaidError::ChunkTooSmall {
                chunk_lbas: 4,
                fg_lbas: 4,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("2 × ZRWAFG"), "{e}");
    let e = err(&tiny_keep(), 3, 48); // 12 LBAs: not a multiple of 8
    assert!(matches!(e, RaidError::ChunkTooSmall { .. }), "{e}");
}

#[test]
fn zrwa_smaller_than_four_flush_granules() {
    let p = profile("tiny", &[("namespace.0.zrwa.size_lbas", "12")]);
    let e = err(&p, 3, 32);
    assert!(
        matches!(
            e,
            RaidError::ZrwaTooSmall {
                zrwa_lbas: 12,
                fg_lbas: 4
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("4 × ZRWAFG"), "{e}");
}

#[test]
fn chunk_larger_than_half_the_zrwa() {
    let e = err(&tiny_keep(), 3, 64);
    assert!(matches!(e, RaidError::ChunkTooLarge { .. }), "{e}");
    // in the sizes the user wrote, with the largest that fits
    assert!(
        e.to_string().contains("64 KiB")
            && e.to_string().contains("half the ZRWA = 32 KiB")
            && e.to_string().contains("chunk=32k"),
        "{e}"
    );
}

#[test]
fn chunk_that_is_not_whole_blocks() {
    let mut rt = Runtime::new(1);
    let opts = RaidOptions {
        chunk_bytes: 1000,
        ..RaidOptions::default()
    };
    let e = create(&mut rt, &tiny_keep(), 3, opts).err().unwrap();
    assert!(matches!(e, RaidError::ChunkNotBlocks { .. }), "{e}");
}

#[test]
fn valid_arrays_have_the_logical_geometry() {
    let mut rt = Runtime::new(1);
    let (_c, a) = create(&mut rt, &small_zn540(), 5, RaidOptions::default()).unwrap();
    use zns_core::ZonedDevice;
    let cfg = a.config();
    assert_eq!(cfg.zone_count, 6); // 8 − 2 metadata zones
    assert_eq!(cfg.zone_capacity_lbas, 4 * 448 / 16 * 16);
    assert_eq!(cfg.zone_size_lbas, 4 * 512);
    assert_eq!(cfg.max_open_zones, 13);
    assert!(cfg.zrwa.is_none());
    assert_eq!(a.layout().h, 8);
}
