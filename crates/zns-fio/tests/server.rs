//! The device server and its client without fio: the greeting geometry, zone
//! report, writes at and off the write pointer (EIO carrying the NVMe
//! status), data read back through shared memory, reset and finish, two
//! clients on one device, a device image whose zones persist across servers,
//! and bad requests answered with an errno instead of a panic.

use zns_fio::proto::Zone;
use zns_fio::{Client, DeviceConfig, IoKind, Server};

/// The `tiny` profile (16 zones of 1 MiB, 768 KiB capacity, 4 KiB LBAs,
/// 4 open / 6 active), paced 1000x faster than real time so tests are quick.
fn tiny() -> Server {
    start("tiny")
}

fn start(filename: &str) -> Server {
    let mut cfg = DeviceConfig::new(filename);
    cfg.speed = 1000.0;
    Server::start(&cfg).expect("server starts")
}

const KIB: u64 = 1024;
const ZONE: u64 = 1024 * KIB;

/// One I/O, waited for: (errno, NVMe status).
fn io(c: &mut Client, tag: u64, kind: IoKind, offset: u64, len: u64, buf: *const u8) -> (i32, u16) {
    c.queue(tag, kind, offset, len, buf).unwrap();
    c.commit().unwrap();
    assert_eq!(c.reap(1, 1, -1).unwrap(), 1);
    let e = c.event(0).unwrap();
    assert_eq!(e.tag, tag);
    (e.errno, e.nvme_status)
}

fn zone(c: &mut Client, index: u64) -> Zone {
    let zones = c.report_zones(index * ZONE, 1).unwrap();
    assert_eq!(zones.len(), 1);
    zones[0]
}

#[test]
fn the_greeting_carries_the_profile_geometry() {
    let server = tiny();
    let c = Client::connect(server.name()).unwrap();
    let g = c.geometry();
    assert!(g.zoned);
    assert_eq!(g.lba_bytes, 4096);
    assert_eq!(g.zone_bytes, ZONE);
    assert_eq!(g.zone_cap_bytes, 768 * KIB);
    assert_eq!(g.zone_count, 16);
    assert_eq!(g.capacity_bytes, 16 * ZONE);
    assert_eq!(g.max_open_zones, 4);
    assert_eq!(g.max_active_zones, 6);
    assert_eq!(server.geometry(), g);
}

#[test]
fn writes_follow_the_write_pointer_and_an_off_wp_write_is_eio() {
    let server = tiny();
    let mut c = Client::connect(server.name()).unwrap();
    let base = c.alloc_region(256 * KIB as usize).unwrap();
    let region = unsafe { std::slice::from_raw_parts_mut(base, 256 * KIB as usize) };
    for (i, b) in region[..64 * KIB as usize].iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    // at the WP of zone 1
    assert_eq!(io(&mut c, 1, IoKind::Write, ZONE, 64 * KIB, base), (0, 0));
    let z = zone(&mut c, 1);
    assert_eq!(z.wp_bytes, ZONE + 64 * KIB);
    assert_eq!(z.cond, 0x2, "implicitly open");
    assert_eq!(z.capacity_bytes, 768 * KIB);
    assert_eq!(z.zone_type, 2);
    // off the WP: EIO, Zone Invalid Write (0x1bc)
    let (errno, status) = io(&mut c, 2, IoKind::Write, ZONE + 128 * KIB, 4 * KIB, base);
    assert_eq!(errno, libc::EIO);
    assert_eq!(status, 0x1bc);
    assert_eq!(zone(&mut c, 1).wp_bytes, ZONE + 64 * KIB);
    // the stamp store keeps nothing, but the read lands in shared memory:
    // the device's bytes replace what was there
    let read_buf = unsafe { base.add(128 * KIB as usize) };
    assert_eq!(
        io(&mut c, 3, IoKind::Read, ZONE, 64 * KIB, read_buf),
        (0, 0)
    );
    // past the end of the device: the status the kernel turns into EREMOTEIO
    let (errno, status) = io(&mut c, 4, IoKind::Read, 16 * ZONE, 4 * KIB, base);
    assert_eq!((errno, status), (libc::EREMOTEIO, 0x080));
    // flush
    assert_eq!(io(&mut c, 5, IoKind::Flush, 0, 0, std::ptr::null()), (0, 0));
}

#[test]
fn reset_and_finish_change_the_zones_and_misaligned_ranges_are_einval() {
    let server = tiny();
    let mut c = Client::connect(server.name()).unwrap();
    let base = c.alloc_region(64 * KIB as usize).unwrap();
    for z in 0..3 {
        assert_eq!(
            io(&mut c, z + 1, IoKind::Write, z * ZONE, 16 * KIB, base),
            (0, 0)
        );
    }
    c.zone_range(true, 2 * ZONE, ZONE).unwrap();
    assert_eq!(zone(&mut c, 2).cond, 0xE, "finished zone is full");
    c.zone_range(false, 0, 3 * ZONE).unwrap();
    for z in 0..3 {
        let zz = zone(&mut c, z);
        assert_eq!((zz.cond, zz.wp_bytes), (0x1, z * ZONE), "zone {z} reset");
    }
    // resetting empty zones again is fine (as with BLKRESETZONE)
    c.zone_range(false, 0, 16 * ZONE).unwrap();
    assert_eq!(c.zone_range(false, 4096, ZONE), Err(libc::EINVAL));
    assert_eq!(c.zone_range(false, 0, 0), Err(libc::EINVAL));
    assert_eq!(c.zone_range(false, 15 * ZONE, 2 * ZONE), Err(libc::EINVAL));
    // a report from the middle of a zone starts at that zone; past the end
    // it is empty
    let zones = c.report_zones(5 * ZONE + 12345, 100).unwrap();
    assert_eq!(zones.len(), 11);
    assert_eq!(zones[0].start_bytes, 5 * ZONE);
    assert!(c.report_zones(16 * ZONE, 4).unwrap().is_empty());
}

#[test]
fn the_open_zone_limit_gives_the_kernels_errno() {
    let server = tiny();
    let mut c = Client::connect(server.name()).unwrap();
    let base = c.alloc_region(64 * KIB as usize).unwrap();
    let mut last = (0, 0);
    // tiny: 4 open / 6 active; writing 7 zones implicitly opens them; the
    // device closes implicitly opened zones to open new ones until the
    // active limit stops it
    for z in 0..7 {
        last = io(&mut c, z + 1, IoKind::Write, z * ZONE, 4 * KIB, base);
    }
    assert_eq!(last, (libc::EOVERFLOW, 0x1bd), "Too Many Active Zones");
}

#[test]
fn two_clients_share_one_device() {
    let server = tiny();
    let mut a = Client::connect(server.name()).unwrap();
    let mut b = Client::connect(server.name()).unwrap();
    let abase = a.alloc_region(64 * KIB as usize).unwrap();
    let bbase = b.alloc_region(64 * KIB as usize).unwrap();
    assert_eq!(io(&mut a, 1, IoKind::Write, 0, 8 * KIB, abase), (0, 0));
    // b sees a's write pointer: writing at 0 again is off the WP
    assert_eq!(io(&mut b, 1, IoKind::Write, 0, 4 * KIB, bbase).0, libc::EIO);
    assert_eq!(
        io(&mut b, 2, IoKind::Write, 8 * KIB, 4 * KIB, bbase),
        (0, 0)
    );
    assert_eq!(zone(&mut a, 0).wp_bytes, 12 * KIB);
}

#[test]
fn queued_io_completes_in_any_order_and_each_tag_once() {
    let server = tiny();
    let mut c = Client::connect(server.name()).unwrap();
    let base = c.alloc_region(512 * KIB as usize).unwrap();
    // 8 sequential writes in flight to one zone (fio's zbd code may do
    // this): they reach the device in order, so all succeed
    for i in 0..8u64 {
        let buf = unsafe { base.add((i * 16 * KIB) as usize) };
        c.queue(100 + i, IoKind::Write, i * 16 * KIB, 16 * KIB, buf)
            .unwrap();
    }
    c.commit().unwrap();
    let mut seen = Vec::new();
    while seen.len() < 8 {
        let n = c.reap(1, 8, -1).unwrap();
        for i in 0..n {
            let e = c.event(i).unwrap();
            assert_eq!(e.errno, 0, "tag {}", e.tag);
            seen.push(e.tag);
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, (100..108).collect::<Vec<u64>>());
    assert_eq!(c.reap(0, 8, 0).unwrap(), 0, "nothing left");
    assert_eq!(zone(&mut c, 0).wp_bytes, 128 * KIB);
}

#[test]
fn bad_requests_get_an_errno() {
    let server = tiny();
    let mut c = Client::connect(server.name()).unwrap();
    // no shared memory yet
    let outside = [0u8; 4096];
    assert_eq!(
        c.queue(1, IoKind::Write, 0, 4096, outside.as_ptr()),
        Err(libc::EFAULT)
    );
    let base = c.alloc_region(64 * KIB as usize).unwrap();
    // a buffer outside the shared region, or running past its end
    assert_eq!(
        c.queue(1, IoKind::Write, 0, 4096, outside.as_ptr()),
        Err(libc::EFAULT)
    );
    let near_end = unsafe { base.add(60 * KIB as usize) };
    assert_eq!(
        c.queue(1, IoKind::Write, 0, 8 * KIB, near_end),
        Err(libc::EFAULT)
    );
    // misaligned offset / length, zero length
    assert_eq!(
        io(&mut c, 2, IoKind::Write, 512, 4096, base).0,
        libc::EINVAL
    );
    assert_eq!(io(&mut c, 3, IoKind::Write, 0, 1000, base).0, libc::EINVAL);
    assert_eq!(io(&mut c, 4, IoKind::Read, 0, 0, base).0, libc::EINVAL);
    // more than one command carries (MDTS), in a bigger region
    let mdts = c.geometry().max_transfer_bytes;
    let big = c.alloc_region(2 * mdts as usize).unwrap();
    assert_eq!(
        io(&mut c, 6, IoKind::Write, 0, mdts + 4096, big).0,
        libc::EINVAL
    );
    // tags with the top bit are reserved for control commands
    assert_eq!(
        c.queue(1 << 63, IoKind::Read, 0, 4096, base),
        Err(libc::EINVAL)
    );
    // the connection still works
    assert_eq!(io(&mut c, 5, IoKind::Write, 0, 4096, big), (0, 0));
}

#[test]
fn unknown_targets_and_bad_speeds_are_errors() {
    let err = Server::start(&DeviceConfig::new("no-such-profile"))
        .err()
        .expect("unknown filename");
    assert!(matches!(err, zns_fio::ServerError::Target(_)), "{err:?}");
    let err = err.to_string();
    assert!(err.contains("built-in profile"), "{err}");
    let mut cfg = DeviceConfig::new("tiny");
    cfg.speed = 0.0;
    let err = Server::start(&cfg).err().expect("speed 0");
    assert!(matches!(err, zns_fio::ServerError::Speed(_)), "{err:?}");
    assert!(err.to_string().contains("speed"), "{err}");
    assert!("spdk".parse::<zns_sim::timing::HostStack>().is_ok());
    assert!("fast"
        .parse::<zns_sim::timing::HostStack>()
        .unwrap_err()
        .contains("io-uring-none"));
}

#[test]
fn a_device_image_keeps_its_zones_across_servers() {
    let dir = std::env::temp_dir().join(format!("znskit-fio-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dev.img");
    let _ = std::fs::remove_file(&path);
    {
        let rt = zns_sim::Runtime::new(1);
        let profile = zns_device::Profile::builtin("tiny").unwrap();
        zns_device::Controller::create_image(
            &rt.handle(),
            profile,
            &path,
            zns_sim::timing::HostStack::Spdk,
        )
        .unwrap();
    }
    let filename = path.to_str().unwrap().to_string();
    {
        let server = start(&filename);
        let mut c = Client::connect(server.name()).unwrap();
        let base = c.alloc_region(64 * KIB as usize).unwrap();
        let data = unsafe { std::slice::from_raw_parts_mut(base, 64 * KIB as usize) };
        data[..4096].fill(0xA5);
        assert_eq!(
            io(&mut c, 1, IoKind::Write, 3 * ZONE, 8 * KIB, base),
            (0, 0)
        );
    }
    {
        let server = start(&filename);
        let mut c = Client::connect(server.name()).unwrap();
        let base = c.alloc_region(64 * KIB as usize).unwrap();
        let z = zone(&mut c, 3);
        assert_eq!(z.wp_bytes, 3 * ZONE + 8 * KIB);
        assert_eq!(z.cond, 0x4, "open zones come back closed after a restart");
        let out = unsafe { base.add(32 * KIB as usize) };
        assert_eq!(io(&mut c, 2, IoKind::Read, 3 * ZONE, 4 * KIB, out), (0, 0));
        let got = unsafe { std::slice::from_raw_parts(out, 4096) };
        assert!(got.iter().all(|&b| b == 0xA5), "the image kept the data");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
