//! Persistent device images through the device: state and data survive a
//! process restart (a new runtime and controller), FUA writes are durable, and a
//! corrupted image is refused.

use zns_core::{IoFlags, ReportFilter, ZoneAction, ZoneSendCmd, ZoneState, ZonedDevice};
use zns_device::store::stamp;
use zns_device::trace::fill_stamps;
use zns_device::{Controller, Profile};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

#[test]
fn image_keeps_zone_states_and_data_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    {
        let mut rt = Runtime::new(1);
        let ctrl = Controller::create_image(
            &rt.handle(),
            Profile::builtin("tiny").unwrap(),
            &path,
            HostStack::Spdk,
        )
        .unwrap();
        let dev = ctrl.first_zoned().unwrap();
        let mut buf = vec![0u8; 4 * 4096];
        fill_stamps(&mut buf, 4096, 100);
        rt.block_on(dev.write(0, &buf, IoFlags::FUA)).unwrap();
        rt.block_on(dev.zone_send(ZoneSendCmd {
            action: ZoneAction::Finish,
            slba: 256,
            select_all: false,
        }))
        .unwrap();
        rt.block_on(dev.zone_send(ZoneSendCmd {
            action: ZoneAction::Open { zrwa: true },
            slba: 512,
            select_all: false,
        }))
        .unwrap();
    }
    {
        let mut rt = Runtime::new(2);
        let ctrl = Controller::open_image(&rt.handle(), &path, HostStack::Spdk).unwrap();
        assert_eq!(ctrl.profile().name, "tiny");
        let dev = ctrl.first_zoned().unwrap();
        let zones = rt
            .block_on(dev.report_zones(0, ReportFilter::All, 3))
            .unwrap();
        assert_eq!(
            zones[0].state,
            ZoneState::Closed,
            "an open zone comes back closed"
        );
        assert_eq!(zones[0].write_pointer, 4);
        assert_eq!(zones[1].state, ZoneState::Full);
        assert!(
            zones[2].attributes.zrwa_valid,
            "the ZRWA allocation is kept"
        );
        let mut buf = vec![0u8; 4 * 4096];
        rt.block_on(dev.read(0, &mut buf)).unwrap();
        let tags: Vec<Option<u64>> = buf.chunks(4096).map(stamp::tag_of).collect();
        assert_eq!(tags, vec![Some(100), Some(101), Some(102), Some(103)]);
    }
}

#[test]
fn creating_over_an_existing_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    std::fs::write(&path, b"precious").unwrap();
    let rt = Runtime::new(1);
    assert!(Controller::create_image(
        &rt.handle(),
        Profile::builtin("tiny").unwrap(),
        &path,
        HostStack::Spdk
    )
    .is_err());
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
}

#[test]
fn a_corrupted_image_is_never_silently_used() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    {
        let rt = Runtime::new(1);
        Controller::create_image(
            &rt.handle(),
            Profile::builtin("tiny").unwrap(),
            &path,
            HostStack::Spdk,
        )
        .unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    for offset in [0usize, 9, 40, 100] {
        let mut damaged = bytes.clone();
        damaged[offset] ^= 0x5A;
        let p2 = dir.path().join(format!("damaged-{offset}.img"));
        std::fs::write(&p2, &damaged).unwrap();
        let rt = Runtime::new(1);
        assert!(
            Controller::open_image(&rt.handle(), &p2, HostStack::Spdk).is_err(),
            "flipped byte {offset} went unnoticed"
        );
    }
    bytes.truncate(100);
    let p3 = dir.path().join("short.img");
    std::fs::write(&p3, &bytes).unwrap();
    let rt = Runtime::new(1);
    assert!(Controller::open_image(&rt.handle(), &p3, HostStack::Spdk).is_err());
}
