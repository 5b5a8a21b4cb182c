//! Property 5: garbage, damaged and resealed (valid CRC, edited zone table) device
//! images.

use super::*;

/// Where things are in an image (read from its header).
pub(super) struct ImageMap {
    pub(super) header_bytes: u64,
    pub(super) slot_bytes: u64,
    pub(super) metadata_offset: u64,
    pub(super) checksum_offset: u64,
    pub(super) data_offset: u64,
    pub(super) file_bytes: u64,
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

pub(super) fn image_map(bytes: &[u8]) -> ImageMap {
    ImageMap {
        header_bytes: u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as u64,
        metadata_offset: u64_at(bytes, 32),
        slot_bytes: u64_at(bytes, 40),
        file_bytes: u64_at(bytes, 48),
        checksum_offset: u64_at(bytes, 128 + 16),
        data_offset: u64_at(bytes, 128 + 32),
    }
}

/// Sequence number of metadata slot `slot` (0 = A, 1 = B).
pub(super) fn slot_sequence(bytes: &[u8], map: &ImageMap, slot: u64) -> u64 {
    u64_at(
        bytes,
        (map.metadata_offset + slot * map.slot_bytes + 8) as usize,
    )
}

/// Builds a tiny image with data in a few zones; returns what each written
/// block below a durable write pointer holds (LBA -> stamp tag).
pub(super) fn build_image(path: &Path) -> BTreeMap<u64, u64> {
    let mut rt = Runtime::new(7);
    let ctrl = Controller::create_image(
        &rt.handle(),
        Profile::builtin("tiny").unwrap(),
        path,
        HostStack::Spdk,
    )
    .unwrap();
    let dev = ctrl.first_zoned().unwrap();
    let mut written = BTreeMap::new();
    let mut write = |rt: &mut Runtime, slba: u64, nlb: u64, fua: bool| {
        let mut buf = vec![0u8; nlb as usize * 4096];
        fill_stamps(&mut buf, 4096, 0x5EED_0000 + slba);
        let flags = if fua { IoFlags::FUA } else { IoFlags::NONE };
        rt.block_on(dev.write(slba, &buf, flags)).unwrap();
        for i in 0..nlb {
            written.insert(slba + i, 0x5EED_0000 + slba + i);
        }
    };
    write(&mut rt, 0, 8, false);
    write(&mut rt, 8, 4, true);
    write(&mut rt, 256, 16, false);
    rt.block_on(dev.zone_send(ZoneSendCmd {
        action: ZoneAction::Finish,
        slba: 256,
        select_all: false,
    }))
    .unwrap();
    write(&mut rt, 512, 3, false);
    rt.block_on(dev.zone_send(ZoneSendCmd {
        action: ZoneAction::Open { zrwa: true },
        slba: 768,
        select_all: false,
    }))
    .unwrap();
    write(&mut rt, 768, 8, false);
    rt.block_on(dev.zone_send(ZoneSendCmd {
        action: ZoneAction::FlushZrwa,
        slba: 775,
        select_all: false,
    }))
    .unwrap();
    write(&mut rt, 12, 2, false);
    rt.block_on(dev.flush()).unwrap();
    written
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Region {
    Header,
    CurrentSlot,
    OtherSlot,
    Checksums,
    Data,
    Truncate,
    Extend,
}

/// Opens the image; if it opens, reads every written block one by one: each
/// returns the data written or an error, never other data. With
/// `below_wp_only`, only the blocks below their zone's write pointer are
/// checked (the image came back with an older zone table).
pub(super) fn open_and_verify(
    path: &Path,
    written: &BTreeMap<u64, u64>,
    below_wp_only: bool,
) -> Result<bool, String> {
    let mut rt = Runtime::new(3);
    let ctrl = match Controller::open_image(&rt.handle(), path, HostStack::Spdk) {
        Err(e) => {
            if e.to_string().is_empty() {
                return Err("empty error text".into());
            }
            return Ok(false);
        }
        Ok(c) => c,
    };
    let dev = ctrl.first_zoned().unwrap();
    let zones = check_zones(&mut rt, &dev)?;
    for (&lba, &tag) in written {
        let zone = &zones[(lba / dev.config().zone_size_lbas) as usize];
        if below_wp_only && lba >= zone.write_pointer {
            continue;
        }
        let mut buf = vec![0u8; 4096];
        match rt.block_on(dev.read(lba, &mut buf)) {
            Ok(()) if stamp::is_stamp_of(tag, &buf) => {}
            Ok(()) => {
                return Err(format!(
                    "LBA {lba} reads {:?} (all zero: {}), wrote stamp {tag:#x}",
                    stamp::tag_of(&buf),
                    buf.iter().all(|b| *b == 0)
                ))
            }
            // A block failing its checksum: a media error, not an injected one.
            Err(e) if e == NvmeError::from(NvmeStatus::UnrecoveredReadError) => {}
            Err(e) => check_error(&format!("read of LBA {lba}"), &e)?,
        }
    }
    // The device stays usable: commands on it are values, whatever they say.
    let mut buf = vec![0u8; 4096];
    let _ = rt.block_on(dev.write(1000, &buf, IoFlags::FUA));
    let _ = rt.block_on(dev.read(0, &mut buf));
    Ok(true)
}

/// 5a. Files that are not images: refused with an error.
#[test]
pub(super) fn garbage_files_are_refused_by_open_image() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.img");
    build_image(&good);
    let pristine = std::fs::read(&good).unwrap();
    let path = dir.path().join("garbage.img");
    check(
        "garbage images",
        48,
        (
            prop_oneof![0..5000usize, 2_097_000..2_097_400usize],
            any::<u64>(),
            0..3u8,
        ),
        |(len, seed, kind)| {
            use rand::{Rng, SeedableRng};
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            match kind {
                1 if len >= 8 => bytes[..8].copy_from_slice(b"ZNSKIMG\0"),
                2 => {
                    let n = len.min(pristine.len());
                    bytes[..n].copy_from_slice(&pristine[..n]);
                }
                _ => {}
            }
            std::fs::write(&path, &bytes).unwrap();
            let rt = Runtime::new(1);
            match Controller::open_image(&rt.handle(), &path, HostStack::Spdk) {
                Ok(_) => Err(violation(format!(
                    "{len} bytes (kind {kind}) opened as an image"
                ))),
                Err(e) => {
                    prop_assert!(!e.to_string().is_empty());
                    Ok(())
                }
            }
        },
    );
    let rt = Runtime::new(1);
    let missing = dir.path().join("missing.img");
    assert!(Controller::open_image(&rt.handle(), &missing, HostStack::Spdk).is_err());
    assert!(Controller::open_image(&rt.handle(), dir.path(), HostStack::Spdk).is_err());
}

/// 5b. A valid image with random damage: a changed header is always refused;
///     damage elsewhere is refused or shows up as read errors, never as wrong data.
#[test]
pub(super) fn damaged_images_never_panic_or_return_wrong_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    let written = build_image(&path);
    let pristine = std::fs::read(&path).unwrap();
    let map = image_map(&pristine);
    let current_slot = if slot_sequence(&pristine, &map, 0) > slot_sequence(&pristine, &map, 1) {
        0
    } else {
        1
    };
    let slot_used = |slot: u64| {
        let at = (map.metadata_offset + slot * map.slot_bytes + 16) as usize;
        64 + u64_at(&pristine, at)
    };
    let max_written = *written.keys().last().unwrap() + 1;
    // Restores exactly what a case may have changed.
    let restore = |file: &std::fs::File| {
        file.set_len(map.file_bytes).unwrap();
        let end = (map.checksum_offset + 16 * 1024) as usize;
        file.write_all_at(&pristine[..end], 0).unwrap();
        let data = map.data_offset as usize;
        let data_end = data + 1024 * 4096;
        file.write_all_at(&pristine[data..data_end], data as u64)
            .unwrap();
    };
    assert_eq!(open_and_verify(&path, &written, false), Ok(true));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    restore(&file);
    let region = prop_oneof![
        4 => Just(Region::Header),
        3 => Just(Region::CurrentSlot),
        1 => Just(Region::OtherSlot),
        2 => Just(Region::Checksums),
        2 => Just(Region::Data),
        1 => Just(Region::Truncate),
        1 => Just(Region::Extend),
    ];
    check(
        "damaged images",
        128,
        (
            region,
            prop::collection::vec((any::<u64>(), 1..=255u8), 1..4),
        ),
        |(region, flips)| {
            let slot_base = |slot: u64| map.metadata_offset + slot * map.slot_bytes;
            let mut touched = Vec::new();
            for &(r, x) in &flips {
                let offset = match region {
                    Region::Header => {
                        let copy = r & 1;
                        let within = if r & 2 == 0 {
                            (r >> 2) % map.header_bytes
                        } else {
                            (r >> 2) % (1 << 20)
                        };
                        copy * (1 << 20) + within
                    }
                    Region::CurrentSlot => slot_base(current_slot) + r % slot_used(current_slot),
                    Region::OtherSlot => {
                        slot_base(1 - current_slot) + r % slot_used(1 - current_slot)
                    }
                    Region::Checksums => map.checksum_offset + r % (max_written * 4),
                    Region::Data => map.data_offset + r % (max_written * 4096),
                    Region::Truncate => {
                        file.set_len(r % map.file_bytes).unwrap();
                        continue;
                    }
                    Region::Extend => {
                        file.set_len(map.file_bytes + 1 + r % 4096).unwrap();
                        continue;
                    }
                };
                let mut b = [0u8];
                file.read_exact_at(&mut b, offset).unwrap();
                b[0] ^= x;
                file.write_all_at(&b, offset).unwrap();
                touched.push(offset);
            }
            // Two flips of one byte may cancel out.
            let changed = touched.iter().any(|&o| {
                let mut b = [0u8];
                file.read_exact_at(&mut b, o).unwrap();
                b[0] != pristine[o as usize]
            });
            // A damaged current zone table is taken for a torn save: the image
            // opens with the previous one (docs/image-format.md). What that
            // costs is `a_damaged_current_zone_table_loses_flushed_writes`.
            let outcome = open_and_verify(&path, &written, region == Region::CurrentSlot);
            restore(&file);
            let opened =
                outcome.map_err(|e| violation(format!("{region:?} at {touched:?}: {e}")))?;
            let must_refuse = match region {
                Region::Header => changed,
                Region::Truncate | Region::Extend => true,
                _ => false,
            };
            prop_assert!(
                !(opened && must_refuse),
                "{:?} damaged at {:?} and the image still opened",
                region,
                touched
            );
            Ok(())
        },
    );
}

#[derive(Debug, Clone)]
pub(super) enum TableEdit {
    /// Set a field of zone `zone`'s record.
    Field {
        zone: usize,
        field: usize,
        value: u64,
    },
    /// Drop the last record, or add one.
    Count { grow: bool },
    /// Replace the whole blob.
    Blob(String),
}

pub(super) fn table_edit() -> impl Strategy<Value = TableEdit> {
    prop_oneof![
        12 => (0..16usize, 0..5usize, prop_oneof![
            4 => 0..8u64,
            4 => (0..16u64, 0..260u64).prop_map(|(z, o)| z * 256 + o),
            1 => any::<u64>(),
        ])
            .prop_map(|(zone, field, value)| TableEdit::Field { zone, field, value }),
        1 => any::<bool>().prop_map(|grow| TableEdit::Count { grow }),
        1 => prop_oneof![
            Just("[]".to_string()),
            Just("[[]]".to_string()),
            Just("[[], []]".to_string()),
            Just("null".to_string()),
            Just("{}".to_string()),
            Just("[[{\"state\":\"Full\"}]]".to_string()),
            "[ -~]{0,40}",
        ]
        .prop_map(TableEdit::Blob),
    ]
}

/// Writes `blob` into the slot that is not current, with a higher sequence
/// and valid CRCs, so that `open` takes it as the newest zone table.
pub(super) fn reseal_metadata(file: &std::fs::File, bytes: &[u8], map: &ImageMap, blob: &[u8]) {
    let (seq_a, seq_b) = (slot_sequence(bytes, map, 0), slot_sequence(bytes, map, 1));
    let target = if seq_a > seq_b { 1u64 } else { 0 };
    let mut slot = vec![0u8; 64 + blob.len()];
    slot[..8].copy_from_slice(b"ZNSKMETA");
    slot[8..16].copy_from_slice(&(seq_a.max(seq_b) + 1).to_le_bytes());
    slot[16..24].copy_from_slice(&(blob.len() as u64).to_le_bytes());
    slot[24..28].copy_from_slice(&crc32c::crc32c(blob).to_le_bytes());
    slot[28..32].copy_from_slice(&(target as u32).to_le_bytes());
    let crc = crc32c::crc32c(&slot[..60]);
    slot[60..64].copy_from_slice(&crc.to_le_bytes());
    slot[64..].copy_from_slice(blob);
    file.write_all_at(&slot, map.metadata_offset + target * map.slot_bytes)
        .unwrap();
}

/// 5c. An image whose zone table was rewritten with valid checksums but
///     inconsistent content (a buggy writer, a hand edit): `open_image`
///     validates every record; what it accepts is a consistent device.
#[test]
pub(super) fn resealed_zone_tables_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    build_image(&path);
    let pristine = std::fs::read(&path).unwrap();
    let map = image_map(&pristine);
    let current = if slot_sequence(&pristine, &map, 0) > slot_sequence(&pristine, &map, 1) {
        0
    } else {
        1
    };
    let at = (map.metadata_offset + current * map.slot_bytes) as usize;
    let blob_len = u64_at(&pristine, at + 16) as usize;
    let table: serde_json::Value =
        serde_json::from_slice(&pristine[at + 64..at + 64 + blob_len]).unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let states = [
        "Empty",
        "ImplicitlyOpened",
        "ExplicitlyOpened",
        "Closed",
        "ReadOnly",
        "Full",
        "Offline",
    ];
    check(
        "resealed zone tables",
        96,
        (
            prop::collection::vec(table_edit(), 1..6),
            prop::collection::vec(op(), 0..16),
            any::<u64>(),
        ),
        |(edits, ops, seed)| {
            let mut t = table.clone();
            let mut blob = None;
            for e in &edits {
                let zones = t[0].as_array_mut().unwrap();
                match e {
                    TableEdit::Field { zone, field, value } => {
                        let Some(r) = zones.get_mut(*zone) else {
                            continue;
                        };
                        let (k, v) = match field {
                            0 => ("state", states[*value as usize % 7].into()),
                            1 => ("write_pointer", (*value).into()),
                            2 => ("zrwa", (value % 2 == 1).into()),
                            3 => ("finished_early", (value % 2 == 1).into()),
                            _ => ("finished_by_controller", (value % 2 == 1).into()),
                        };
                        r[k] = v;
                    }
                    TableEdit::Count { grow: true } => {
                        let last = zones.last().cloned().unwrap_or_default();
                        zones.push(last);
                    }
                    TableEdit::Count { grow: false } => {
                        zones.pop();
                    }
                    TableEdit::Blob(b) => blob = Some(b.clone().into_bytes()),
                }
            }
            let blob = blob.unwrap_or_else(|| serde_json::to_vec(&t).unwrap());
            file.write_all_at(&pristine[..(map.checksum_offset as usize)], 0)
                .unwrap();
            reseal_metadata(&file, &pristine, &map, &blob);
            let mut rt = Runtime::new(seed);
            let ctrl =
                match Controller::open_image(&rt.handle(), &path, HostStack::IoUringMqDeadline) {
                    Err(e) => {
                        prop_assert!(!e.to_string().is_empty());
                        return Ok(());
                    }
                    Ok(c) => c,
                };
            let dev = ctrl.first_zoned().unwrap();
            check_zones(&mut rt, &dev).map_err(violation)?;
            let tasks: Vec<Vec<Op>> = ops.chunks(4).map(|c| c.to_vec()).collect();
            run_concurrently(&mut rt, &ctrl, &dev, &tasks).map_err(violation)?;
            ctrl.power_on();
            check_zones(&mut rt, &dev).map_err(violation)?;
            Ok(())
        },
    );
}
