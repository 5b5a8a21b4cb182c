//! Requests as the kernel sends them, run on an emulated device in virtual
//! time: the data, the completion values, the zone report the kernel reads,
//! and the errno of each failure (what a served device's clients see).

use libublk::sys;
use zns_core::NvmeStatus;
use zns_device::StoreKind;
use zns_serve::exec::execute;
use zns_serve::params::{geometry, ublk_params, GeometryError};
use zns_serve::request::{decode, IoDesc, Request, BLK_ZONE_BYTES};
use zns_serve::{Done, Failure};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;
use zns_target::{OpenOptions, OpenedDevice, Target, TargetSpec};

/// `tiny` with profile `overrides`, opened as `zns serve` opens it (data
/// kept in memory); the opened device lives as long as the first value.
fn tiny(rt: &mut Runtime, overrides: &[(&str, &str)]) -> (OpenedDevice, Target) {
    let o: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let spec = TargetSpec::parse("tiny")
        .unwrap()
        .with_overrides(&o)
        .unwrap();
    let opts = OpenOptions {
        store: StoreKind::Memory,
        host_stack: HostStack::IoUringNone,
    };
    let dev = zns_target::open(rt, &spec, &opts).unwrap();
    let target = dev.target("tiny", None).unwrap();
    (dev, target)
}

fn run(rt: &mut Runtime, dev: &Target, req: Request, payload: &[u8]) -> Result<Done, Failure> {
    rt.block_on(execute(dev, req, payload))
}

/// The kernel's descriptor for `op` on `sectors` sectors at `sector`.
fn kernel(op: u32, sectors: u32, sector: u64) -> Request {
    decode(
        &IoDesc {
            op_flags: op,
            nr_sectors_or_zones: sectors,
            start_sector: sector,
        },
        4096,
    )
    .unwrap()
}

const ZONE_SECTORS: u64 = 256 * 8;

#[test]
fn writes_read_back_and_appends_say_where_they_landed() {
    let mut rt = Runtime::new(1);
    let (_c, dev) = tiny(&mut rt, &[]);
    // 40 blocks: more than one command carries (MDTS 32), split in order
    let data: Vec<u8> = (0..40 * 4096).map(|i| (i % 251) as u8).collect();
    let w = run(&mut rt, &dev, kernel(sys::UBLK_IO_OP_WRITE, 320, 0), &data).unwrap();
    assert_eq!(w.result_bytes, 40 * 4096);
    let r = run(&mut rt, &dev, kernel(sys::UBLK_IO_OP_READ, 320, 0), &[]).unwrap();
    assert_eq!(r.result_bytes, 40 * 4096);
    assert!(r.data_out == data);
    // an append to zone 1 lands at its start, the next one after it
    let a = run(
        &mut rt,
        &dev,
        kernel(sys::UBLK_IO_OP_ZONE_APPEND, 16, ZONE_SECTORS),
        &data[..2 * 4096],
    )
    .unwrap();
    assert_eq!(a.append_sector, Some(ZONE_SECTORS));
    let a = run(
        &mut rt,
        &dev,
        kernel(sys::UBLK_IO_OP_ZONE_APPEND, 8, ZONE_SECTORS),
        &data[..4096],
    )
    .unwrap();
    assert_eq!(a.append_sector, Some(ZONE_SECTORS + 16));
    assert_eq!(a.result_bytes, 4096);
}

#[test]
fn the_zone_report_is_what_linux_reads_from_an_nvme_drive() {
    let mut rt = Runtime::new(2);
    let (_c, dev) = tiny(&mut rt, &[]);
    let data = vec![7u8; 8 * 4096];
    run(&mut rt, &dev, kernel(sys::UBLK_IO_OP_WRITE, 64, 0), &data).unwrap();
    run(
        &mut rt,
        &dev,
        kernel(sys::UBLK_IO_OP_ZONE_FINISH, 0, 2 * ZONE_SECTORS),
        &[],
    )
    .unwrap();
    // 4 zones asked for from zone 0
    let rep = run(
        &mut rt,
        &dev,
        kernel(sys::UBLK_IO_OP_REPORT_ZONES, 4, 0),
        &[],
    )
    .unwrap();
    assert_eq!(rep.data_out.len(), 4 * BLK_ZONE_BYTES);
    assert_eq!(rep.result_bytes as usize, rep.data_out.len());
    let field = |z: usize, at: usize| field_of(&rep.data_out, z, at);
    let cond = |z: usize| rep.data_out[z * BLK_ZONE_BYTES + 25];
    // zone 0: implicitly open, WP 8 blocks in; capacity 192 blocks
    assert_eq!(
        (field(0, 0), field(0, 8), field(0, 16)),
        (0, ZONE_SECTORS, 64)
    );
    assert_eq!(field(0, 32), 192 * 8);
    assert_eq!(cond(0), sys::BLK_ZONE_COND_IMP_OPEN as u8);
    assert_eq!(rep.data_out[24], sys::BLK_ZONE_TYPE_SEQWRITE_REQ as u8);
    assert_eq!(cond(1), sys::BLK_ZONE_COND_EMPTY as u8);
    // a full zone's WP is its end, as Linux's NVMe driver reports it
    assert_eq!(cond(2), sys::BLK_ZONE_COND_FULL as u8);
    assert_eq!(field(2, 16), 3 * ZONE_SECTORS);
    // past the last zone: zeroed entries end the report
    let rep = run(
        &mut rt,
        &dev,
        kernel(sys::UBLK_IO_OP_REPORT_ZONES, 4, 14 * ZONE_SECTORS),
        &[],
    )
    .unwrap();
    assert_eq!(field_of(&rep.data_out, 1, 0), 15 * ZONE_SECTORS);
    assert_eq!(
        field_of(&rep.data_out, 2, 8),
        0,
        "zero length ends the report"
    );
    // reset-all empties every zone
    run(
        &mut rt,
        &dev,
        kernel(sys::UBLK_IO_OP_ZONE_RESET_ALL, 0, 0),
        &[],
    )
    .unwrap();
    let rep = run(
        &mut rt,
        &dev,
        kernel(sys::UBLK_IO_OP_REPORT_ZONES, 3, 0),
        &[],
    )
    .unwrap();
    for z in 0..3 {
        assert_eq!(
            rep.data_out[z * BLK_ZONE_BYTES + 25],
            sys::BLK_ZONE_COND_EMPTY as u8
        );
    }
}

fn field_of(data: &[u8], zone: usize, at: usize) -> u64 {
    let b = &data[zone * BLK_ZONE_BYTES + at..zone * BLK_ZONE_BYTES + at + 8];
    u64::from_ne_bytes(b.try_into().unwrap())
}

#[test]
fn failures_carry_the_nvme_status_and_linuxs_errno_for_it() {
    let mut rt = Runtime::new(3);
    let (_c, dev) = tiny(&mut rt, &[]);
    let block = vec![1u8; 4096];
    // off the write pointer
    let e = run(&mut rt, &dev, kernel(sys::UBLK_IO_OP_WRITE, 8, 8), &block).unwrap_err();
    assert_eq!(e.status, Some(NvmeStatus::ZoneInvalidWrite));
    assert_eq!(e.errno, libc::EIO);
    // open zones beyond the limit (4 open, 6 active): the fifth explicit
    // open fails with the zone-resource errno the block layer keeps apart
    for z in 0..4 {
        run(
            &mut rt,
            &dev,
            kernel(sys::UBLK_IO_OP_ZONE_OPEN, 0, z * ZONE_SECTORS),
            &[],
        )
        .unwrap();
    }
    let e = run(
        &mut rt,
        &dev,
        kernel(sys::UBLK_IO_OP_ZONE_OPEN, 0, 4 * ZONE_SECTORS),
        &[],
    )
    .unwrap_err();
    assert_eq!(e.status, Some(NvmeStatus::TooManyOpenZones));
    assert_eq!(e.errno, libc::ETOOMANYREFS);
    // past the end of the device
    let e = run(
        &mut rt,
        &dev,
        kernel(sys::UBLK_IO_OP_READ, 8, 16 * ZONE_SECTORS),
        &[],
    )
    .unwrap_err();
    assert_eq!(e.status, Some(NvmeStatus::LbaOutOfRange));
    assert_eq!(e.errno, libc::EREMOTEIO);
    // a zoned device takes no discard
    let e = run(&mut rt, &dev, kernel(sys::UBLK_IO_OP_DISCARD, 8, 0), &[]).unwrap_err();
    assert_eq!((e.status, e.errno), (None, libc::EOPNOTSUPP));
}

#[test]
fn the_kernel_is_told_the_devices_geometry_and_limits() {
    let mut rt = Runtime::new(4);
    let (_c, dev) = tiny(&mut rt, &[]);
    let g = geometry(&dev, 512 * 1024).unwrap();
    let z = g.zoned.unwrap();
    assert_eq!((g.lba_bytes, g.capacity_bytes), (4096, 16 * 256 * 4096));
    assert_eq!(g.max_io_bytes, 32 * 4096, "the device's MDTS");
    assert_eq!(
        (z.zone_bytes, z.zone_capacity_bytes, z.zones),
        (1 << 20, 192 * 4096, 16)
    );
    assert_eq!((z.max_open_zones, z.max_active_zones), (4, 6));
    assert_eq!(z.max_append_bytes, 16 * 4096, "the device's ZASL");
    let p = ublk_params(&g);
    assert_eq!(
        p.types,
        sys::UBLK_PARAM_TYPE_BASIC | sys::UBLK_PARAM_TYPE_ZONED
    );
    assert_eq!(p.basic.logical_bs_shift, 12);
    assert_eq!(p.basic.chunk_sectors, 2048);
    assert_eq!(p.basic.dev_sectors, 16 * 2048);
    assert_eq!(p.basic.max_sectors, 256);
    assert_ne!(p.basic.attrs & sys::UBLK_ATTR_FUA, 0);
    assert_eq!(p.zoned.max_zone_append_sectors, 128);
    // a buffer smaller than the MDTS caps requests
    assert_eq!(geometry(&dev, 64 * 1024).unwrap().max_io_bytes, 64 * 1024);

    // limits at or above the zone count cannot bind: none (ublk refuses them)
    let (_c, dev) = tiny(
        &mut rt,
        &[
            ("namespace.0.zone_count", "4"),
            ("namespace.0.max_open_zones", "4"),
            ("namespace.0.max_active_zones", "4"),
        ],
    );
    let z = geometry(&dev, 512 * 1024).unwrap().zoned.unwrap();
    assert_eq!((z.max_open_zones, z.max_active_zones), (0, 0));

    // Linux needs power-of-two zone sizes
    let (_c, dev) = tiny(
        &mut rt,
        &[
            ("namespace.0.zone_size_lbas", "200"),
            ("namespace.0.zone_capacity_lbas", "192"),
        ],
    );
    let e = geometry(&dev, 512 * 1024).unwrap_err();
    assert_eq!(e, GeometryError::ZoneSizeNotPowerOfTwo(200 * 4096));
    assert!(e.to_string().contains("power of two"), "{e}");
}
