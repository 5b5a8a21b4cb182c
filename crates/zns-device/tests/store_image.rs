//! The persistent image store: round trips across reopen, sparse creation,
//! and refusal of every kind of damage (header fields, data blocks, checksum
//! entries, misdirected writes, truncation, torn metadata slots, files that
//! are not images at all) without ever panicking.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use zns_device::store::{stamp, ImageOptions, PersistentImage, StoreError, StoreKind, SyncPolicy};

const PROFILE: &str = "name = \"tiny\"\n[[namespace]]\nlba_bytes = 4096\n";
const MIB: u64 = 1 << 20;

fn fast() -> ImageOptions {
    ImageOptions {
        metadata_slot_bytes: Some(MIB),
        sync_policy: SyncPolicy::PageCacheOnly,
    }
}

/// Two namespaces: 512 B x 2048 blocks and 4 KiB x 256 blocks. Layout: headers
/// at 0 and 1 MiB, slots A/B at 2 and 3 MiB, checksum tables at 4 and 5 MiB,
/// data at 6 MiB (ns 0) and 7 MiB (ns 1); 8 MiB in all.
fn two_namespace_image(dir: &Path) -> (PathBuf, PersistentImage) {
    let path = dir.join("dev.img");
    let image =
        PersistentImage::create_with(&path, PROFILE, &[(512, 2048), (4096, 256)], &fast()).unwrap();
    (path, image)
}

const SLOT_A: u64 = 2 * MIB;
const SLOT_B: u64 = 3 * MIB;
const NS0_CHECKSUMS: u64 = 4 * MIB;
const NS0_DATA: u64 = 6 * MIB;

fn stamped(first_tag: u64, nlb: usize, lba_bytes: usize) -> Vec<u8> {
    let mut buf = vec![0u8; nlb * lba_bytes];
    for (i, block) in buf.chunks_mut(lba_bytes).enumerate() {
        stamp::fill_block(first_tag + i as u64, block);
    }
    buf
}

fn flip(path: &Path, offset: u64) {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, offset).unwrap();
    byte[0] ^= 0x5A;
    file.write_all_at(&byte, offset).unwrap();
}

fn corrupt_message(result: Result<PersistentImage, StoreError>) -> String {
    match result {
        Err(StoreError::Corrupt(message)) => message,
        Err(other) => panic!("expected Corrupt, got {other:?}"),
        Ok(_) => panic!("a damaged image was accepted"),
    }
}

#[test]
fn data_and_metadata_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut image) = two_namespace_image(dir.path());
    assert_eq!(
        image.load_metadata().unwrap(),
        None,
        "a new image has no metadata"
    );
    assert_eq!(image.metadata_sequence(), 0);
    let mut ns0 = image.namespace_store(0);
    let mut ns1 = image.namespace_store(1);
    assert_eq!(ns0.kind(), StoreKind::Image);
    assert_eq!((ns0.lba_bytes(), ns1.lba_bytes()), (512, 4096));
    ns0.write(10, &stamped(100, 8, 512)).unwrap();
    ns1.write(0, &stamped(900, 4, 4096)).unwrap();
    ns1.write(255, &stamped(999, 1, 4096)).unwrap();
    ns0.sync().unwrap();
    image.save_metadata(b"zone table v1").unwrap();
    image.save_metadata(b"zone table v2").unwrap();
    assert_eq!(image.metadata_sequence(), 2);
    drop((ns0, ns1, image));

    let image = PersistentImage::open(&path).unwrap();
    assert_eq!(image.profile_toml(), PROFILE);
    assert_eq!(image.namespace_count(), 2);
    assert_eq!(image.namespace_geometry(1), Some((4096, 256)));
    assert_eq!(image.namespace_geometry(2), None);
    assert_eq!(
        image.load_metadata().unwrap().as_deref(),
        Some(&b"zone table v2"[..])
    );
    assert_eq!(image.metadata_sequence(), 2);
    let mut ns0 = image.namespace_store(0);
    let mut ns1 = image.namespace_store(1);
    let mut buf = vec![0u8; 10 * 512];
    ns0.read(9, &mut buf).unwrap();
    assert!(
        buf[..512].iter().all(|b| *b == 0),
        "never-written block reads zeros"
    );
    assert_eq!(&buf[512..9 * 512], &stamped(100, 8, 512)[..]);
    assert!(buf[9 * 512..].iter().all(|b| *b == 0));
    let mut buf = vec![0u8; 4096];
    ns1.read(255, &mut buf).unwrap();
    assert_eq!(stamp::tag_of(&buf), Some(999));
    ns1.read(3, &mut buf).unwrap();
    assert_eq!(stamp::tag_of(&buf), Some(903));

    // Deallocate: zeros, and the data's disk space is given back.
    ns0.write(0, &stamped(5, 2048, 512)).unwrap();
    ns0.sync().unwrap();
    let used_before = std::fs::metadata(&path).unwrap().blocks();
    ns0.deallocate(0, 2048).unwrap();
    let used_after = std::fs::metadata(&path).unwrap().blocks();
    assert!(
        used_after + 1024 <= used_before,
        "deallocating 1 MiB freed {} sectors",
        used_before - used_after
    );
    let mut buf = vec![0u8; 2048 * 512];
    ns0.read(0, &mut buf).unwrap();
    assert!(buf.iter().all(|b| *b == 0));
    ns1.read(3, &mut buf[..4096]).unwrap();
    assert_eq!(
        stamp::tag_of(&buf[..4096]),
        Some(903),
        "namespace 1 untouched"
    );
}

#[test]
fn a_1_tb_namespace_is_created_instantly_and_sparse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.img");
    let lba_count = 244_190_646u64;
    let image = PersistentImage::create(&path, PROFILE, &[(4096, lba_count)]).unwrap();
    let mut ns = image.namespace_store(0);
    for (i, lba) in [0, lba_count / 2, lba_count - 1].into_iter().enumerate() {
        ns.write(lba, &stamped(i as u64, 1, 4096)).unwrap();
    }
    ns.sync().unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert!(meta.len() > lba_count * 4096);
    let used_bytes = meta.blocks() * 512;
    assert!(
        used_bytes < 16 * MIB,
        "a 1 TB image with 3 blocks written uses {used_bytes} bytes of disk"
    );
    assert!(ns.resident_bytes() < 64 * 1024);
    drop((ns, image));
    let image = PersistentImage::open(&path).unwrap();
    let mut ns = image.namespace_store(0);
    let mut buf = vec![0u8; 4096];
    ns.read(lba_count - 1, &mut buf).unwrap();
    assert_eq!(stamp::tag_of(&buf), Some(2));
    ns.deallocate(0, lba_count).unwrap(); // reset-all of a 1 TB namespace: hole punching, no 1 GB of zeros
    ns.read(lba_count - 1, &mut buf).unwrap();
    assert!(buf.iter().all(|b| *b == 0));
    assert!(std::fs::metadata(&path).unwrap().blocks() * 512 < 16 * MIB);
}

#[test]
fn create_refuses_existing_files_and_bad_geometry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    std::fs::write(&path, b"precious").unwrap();
    assert!(matches!(
        PersistentImage::create(&path, "", &[(512, 8)]),
        Err(StoreError::Io { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");

    let fresh = dir.path().join("fresh.img");
    for namespaces in [
        &[][..],
        &[(500, 8)][..],
        &[(512, 0)][..],
        &[(512, 8), (65536, u64::MAX / 2)][..],
    ] {
        assert!(matches!(
            PersistentImage::create(&fresh, "", namespaces),
            Err(StoreError::Invalid(_))
        ));
        assert!(!fresh.exists(), "a refused create left a file behind");
    }
    let huge_profile = "#".repeat(2 << 20);
    assert!(matches!(
        PersistentImage::create(&fresh, &huge_profile, &[(512, 8)]),
        Err(StoreError::Invalid(_))
    ));
    assert!(!fresh.exists());
}

#[test]
fn an_image_is_opened_by_one_owner_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image) = two_namespace_image(dir.path());
    match PersistentImage::open(&path) {
        Err(e @ StoreError::InUse { .. }) => assert!(e.to_string().contains("in use"), "{e}"),
        other => panic!("second open: {other:?}"),
    }
    drop(image);
    PersistentImage::open(&path).unwrap();
}

#[test]
fn a_corrupted_header_byte_is_refused_naming_the_field() {
    let cases = [
        (0u64, "magic"),
        (8, "format_version"),
        (12, "header primary copy: header_crc32c mismatch"),
        (48, "file_bytes"),
        (128 + 8, "namespace[0].lba_count"),
        (128 + 64, "namespace[1].lba_bytes"),
        (128 + 128 + 3, "profile_toml (byte 3)"),
        (
            MIB + 128 + 64 + 32,
            "namespace[1].data_offset at byte 224 is damaged in the backup copy",
        ),
    ];
    for (offset, field) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (path, image) = two_namespace_image(dir.path());
        drop(image);
        flip(&path, offset);
        let message = corrupt_message(PersistentImage::open(&path));
        assert!(
            message.contains(field),
            "byte {offset}: expected '{field}' in: {message}"
        );
    }
}

#[test]
fn files_that_are_not_images_or_are_truncated_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello, this is not an image").unwrap();
    assert!(corrupt_message(PersistentImage::open(&text)).contains("not a znskit device image"));
    let empty = dir.path().join("empty.img");
    std::fs::write(&empty, b"").unwrap();
    assert!(corrupt_message(PersistentImage::open(&empty)).contains("magic"));
    assert!(matches!(
        PersistentImage::open(dir.path().join("missing.img")),
        Err(StoreError::Io { .. })
    ));

    let (path, image) = two_namespace_image(dir.path());
    drop(image);
    let pristine = std::fs::read(&path).unwrap();
    let full = pristine.len() as u64;
    for len in [100, MIB + 5, 3 * MIB, full - 4096, full - 1] {
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(len).unwrap();
        let message = corrupt_message(PersistentImage::open(&path));
        assert!(message.contains("truncated"), "length {len}: {message}");
        std::fs::write(&path, &pristine).unwrap();
    }
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(full + 1).unwrap();
    assert!(corrupt_message(PersistentImage::open(&path)).contains("file length"));
}

#[test]
fn a_damaged_block_reads_as_bad_block_and_its_neighbours_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image) = two_namespace_image(dir.path());
    let mut ns0 = image.namespace_store(0);
    ns0.write(0, &stamped(1, 16, 512)).unwrap();
    drop((ns0, image));

    // A flipped data byte in block 5, a damaged checksum entry of block 9, and
    // block 12's bytes copied over block 13 (a misdirected write).
    flip(&path, NS0_DATA + 5 * 512 + 77);
    flip(&path, NS0_CHECKSUMS + 9 * 4 + 2);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut block = vec![0u8; 512];
    file.read_exact_at(&mut block, NS0_DATA + 12 * 512).unwrap();
    file.write_all_at(&block, NS0_DATA + 13 * 512).unwrap();
    drop(file);

    let image = PersistentImage::open(&path).unwrap();
    let mut ns0 = image.namespace_store(0);
    let mut buf = vec![0u8; 512];
    for lba in 0..16u64 {
        let result = ns0.read(lba, &mut buf);
        if [5, 9, 13].contains(&lba) {
            assert!(
                matches!(result, Err(StoreError::BadBlock { lba: bad }) if bad == lba),
                "lba {lba}: {result:?}"
            );
        } else {
            result.unwrap();
            assert_eq!(stamp::tag_of(&buf), Some(1 + lba), "lba {lba}");
        }
    }
    let mut many = vec![0u8; 16 * 512];
    assert!(
        matches!(ns0.read(0, &mut many), Err(StoreError::BadBlock { lba: 5 })),
        "the first bad block is named"
    );
    // Rewriting a bad block heals it; deallocating makes it read zeros.
    ns0.write(5, &stamped(6, 1, 512)).unwrap();
    ns0.read(5, &mut buf).unwrap();
    ns0.deallocate(9, 1).unwrap();
    ns0.read(9, &mut buf).unwrap();
    assert!(buf.iter().all(|b| *b == 0));
}

#[test]
fn a_torn_newest_metadata_slot_falls_back_to_the_older_one() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut image) = two_namespace_image(dir.path());
    image.save_metadata(b"first").unwrap(); // sequence 1, slot A
    image.save_metadata(b"second").unwrap(); // sequence 2, slot B
    drop(image);

    flip(&path, SLOT_B + 64 + 2); // a byte of the newest blob
    let mut image = PersistentImage::open(&path).unwrap();
    assert_eq!(
        image.load_metadata().unwrap().as_deref(),
        Some(&b"first"[..])
    );
    assert_eq!(image.metadata_sequence(), 1);
    // The next save replaces the torn slot, never the good one.
    image.save_metadata(b"third").unwrap();
    drop(image);
    flip(&path, SLOT_B + 8); // tear the new newest (slot header this time)
    let image = PersistentImage::open(&path).unwrap();
    assert_eq!(
        image.load_metadata().unwrap().as_deref(),
        Some(&b"first"[..])
    );
    drop(image);

    // Both slots bad: refused, naming both.
    flip(&path, SLOT_A + 64);
    let message = corrupt_message(PersistentImage::open(&path));
    assert!(
        message.contains("slot A") && message.contains("slot B"),
        "{message}"
    );
}

#[test]
fn a_torn_first_save_leaves_the_image_without_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut image) = two_namespace_image(dir.path());
    image.save_metadata(b"first").unwrap();
    drop(image);
    flip(&path, SLOT_A + 64);
    let image = PersistentImage::open(&path).unwrap();
    assert_eq!(image.load_metadata().unwrap(), None);
}

#[test]
fn metadata_larger_than_a_slot_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_path, mut image) = two_namespace_image(dir.path());
    assert_eq!(image.metadata_capacity_bytes(), MIB - 64);
    let blob = vec![7u8; MIB as usize];
    assert!(matches!(
        image.save_metadata(&blob),
        Err(StoreError::Invalid(_))
    ));
    image.save_metadata(&blob[..(MIB - 64) as usize]).unwrap();
    assert_eq!(
        image.load_metadata().unwrap().map(|b| b.len()),
        Some((MIB - 64) as usize)
    );
}

#[test]
fn bad_namespace_indexes_and_arguments_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (_path, image) = two_namespace_image(dir.path());
    assert!(image.try_namespace_store(2).is_err());
    let mut missing = image.namespace_store(7);
    assert!(matches!(
        missing.read(0, &mut [0u8; 512]),
        Err(StoreError::Invalid(_))
    ));
    let mut ns0 = image.namespace_store(0);
    assert!(matches!(
        ns0.write(0, &[0u8; 100]),
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        ns0.write(2048, &[0u8; 512]),
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        ns0.deallocate(2000, 49),
        Err(StoreError::Invalid(_))
    ));
    ns0.deallocate(2000, 48).unwrap();
}

/// Opens whatever is at `path`; if it opens, exercises it. Must never panic.
fn poke(path: &Path) -> bool {
    match PersistentImage::open(path) {
        Err(_) => false,
        Ok(image) => {
            let _ = image.load_metadata();
            for ns in 0..image.namespace_count() {
                let mut store = image.namespace_store(ns);
                let mut buf = vec![0u8; 4 * store.lba_bytes() as usize];
                let _ = store.read(0, &mut buf);
            }
            true
        }
    }
}

#[test]
fn garbage_and_damaged_files_never_panic() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x6A7B);
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.img");
    // Random bytes, sometimes behind a valid magic.
    for round in 0..200 {
        let len = rng.gen_range(0..6000);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if round % 2 == 0 && len >= 8 {
            bytes[..8].copy_from_slice(b"ZNSKIMG\0");
        }
        std::fs::write(&garbage, &bytes).unwrap();
        assert!(!poke(&garbage), "{len} random bytes opened as an image");
    }
    // A valid image's header area with random bytes flipped, and random truncation.
    let (path, mut image) = two_namespace_image(dir.path());
    let mut ns0 = image.namespace_store(0);
    ns0.write(0, &stamped(3, 4, 512)).unwrap();
    image.save_metadata(b"zones").unwrap();
    drop((ns0, image));
    let pristine_len = std::fs::metadata(&path).unwrap().len();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    for _ in 0..300 {
        let region = [0, MIB, SLOT_A, SLOT_B][rng.gen_range(0..4)];
        let offset = region
            + if rng.gen_bool(0.8) {
                rng.gen_range(0..400)
            } else {
                rng.gen_range(0..MIB)
            };
        let mut old = [0u8];
        file.read_exact_at(&mut old, offset).unwrap();
        let new = old[0] ^ rng.gen_range(1..=255u8);
        file.write_all_at(&[new], offset).unwrap();
        let opened = poke(&path);
        if region < SLOT_A {
            assert!(!opened, "a flipped header byte at {offset} went unnoticed");
        }
        file.write_all_at(&old, offset).unwrap();
    }
    let pristine = std::fs::read(&path).unwrap();
    for _ in 0..50 {
        let len = rng.gen_range(0..pristine_len);
        file.set_len(len).unwrap();
        assert!(!poke(&path), "a file truncated to {len} bytes opened");
        file.write_all_at(&pristine[len as usize..], len).unwrap();
    }
    assert!(poke(&path));
}
