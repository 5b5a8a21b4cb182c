//! The in-memory data stores (none, stamp, memory) and the image store against
//! one reference model: what a read returns after any sequence of writes and
//! deallocates, and how much memory a sparse 1 TB namespace costs.

use std::collections::BTreeMap;

use proptest::prelude::*;
use zns_device::store::{
    new_store, stamp, DataStore, ImageOptions, PersistentImage, StampStore, StoreError, StoreKind,
    SyncPolicy,
};

/// The zn540's 1 TB namespace: 4 KiB blocks.
const TB_LBA_COUNT: u64 = 244_190_646;

fn stamped(first_tag: u64, nlb: usize, lba_bytes: usize) -> Vec<u8> {
    let mut buf = vec![0u8; nlb * lba_bytes];
    for (i, block) in buf.chunks_mut(lba_bytes).enumerate() {
        stamp::fill_block(first_tag + i as u64, block);
    }
    buf
}

#[test]
fn memory_and_stamp_stores_round_trip_and_deallocate_to_zeros() {
    for kind in [StoreKind::Memory, StoreKind::Stamp] {
        let mut store = new_store(kind, 4096, 1 << 20);
        assert_eq!(store.kind(), kind);
        assert_eq!(store.lba_bytes(), 4096);
        let data = stamped(1000, 300, 4096); // crosses extent boundaries of both stores
        store.write(200, &data).unwrap();
        let mut back = vec![0u8; data.len()];
        store.read(200, &mut back).unwrap();
        assert!(back == data, "{kind}: read back differs");

        store.deallocate(250, 10).unwrap();
        store.read(200, &mut back).unwrap();
        for (i, block) in back.chunks(4096).enumerate() {
            let lba = 200 + i as u64;
            if (250..260).contains(&lba) {
                assert!(
                    block.iter().all(|b| *b == 0),
                    "{kind}: lba {lba} not zeroed"
                );
            } else {
                assert_eq!(
                    stamp::tag_of(block),
                    Some(1000 + i as u64),
                    "{kind}: lba {lba}"
                );
            }
        }
        store.deallocate(0, 1 << 20).unwrap();
        store.read(200, &mut back).unwrap();
        assert!(
            back.iter().all(|b| *b == 0),
            "{kind}: full deallocate left data"
        );
        assert_eq!(
            store.resident_bytes(),
            0,
            "{kind}: memory kept after deallocating everything"
        );
        store.sync().unwrap();
    }
}

#[test]
fn three_blocks_far_apart_in_a_1_tb_namespace_cost_little_memory() {
    for kind in [StoreKind::None, StoreKind::Stamp, StoreKind::Memory] {
        let mut store = new_store(kind, 4096, TB_LBA_COUNT);
        assert_eq!(
            store.resident_bytes(),
            0,
            "{kind}: memory held before any write"
        );
        for (i, lba) in [0, TB_LBA_COUNT / 2, TB_LBA_COUNT - 1]
            .into_iter()
            .enumerate()
        {
            store.write(lba, &stamped(i as u64, 1, 4096)).unwrap();
        }
        let held = store.resident_bytes();
        assert!(
            held <= 4 << 20,
            "{kind}: 3 written blocks hold {held} bytes"
        );
        let mut buf = vec![0u8; 4096];
        store.read(TB_LBA_COUNT - 1, &mut buf).unwrap();
        if kind != StoreKind::None {
            assert_eq!(stamp::tag_of(&buf), Some(2), "{kind}");
        }
        // Resetting the whole namespace is cheap and frees everything.
        store.deallocate(0, TB_LBA_COUNT).unwrap();
        assert_eq!(store.resident_bytes(), 0, "{kind}");
    }
}

#[test]
fn stamp_store_reconstructs_blocks_a_reader_can_verify() {
    let mut store = StampStore::new(512, 4096).unwrap();
    store.write(7, &stamped(0xDEAD_0000, 4, 512)).unwrap();
    let mut buf = vec![0u8; 4 * 512];
    store.read(7, &mut buf).unwrap();
    for (i, block) in buf.chunks(512).enumerate() {
        assert!(stamp::is_stamp_of(0xDEAD_0000 + i as u64, block));
    }
    assert_eq!(store.written_blocks(), 4);
    // 8 bytes of tag plus bookkeeping per block, not 512.
    assert!(store.resident_bytes() < 40 * 1024);
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let mut store = new_store(StoreKind::Memory, 512, 8);
    assert!(matches!(
        store.write(0, &[0u8; 511]),
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        store.write(8, &[0u8; 512]),
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        store.read(u64::MAX, &mut [0u8; 512]),
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        store.deallocate(u64::MAX, 2),
        Err(StoreError::Invalid(_))
    ));
}

/// One store operation of the model test.
#[derive(Debug, Clone)]
enum Op {
    /// Write `nlb` blocks at `lba`; each block is a stamp block (`content` is
    /// its tag), or zeros (`content` 0 and `zeros`), or arbitrary bytes.
    Write {
        lba: u64,
        nlb: u64,
        content: u64,
        style: u8,
    },
    Deallocate {
        lba: u64,
        nlb: u64,
    },
    Read {
        lba: u64,
        nlb: u64,
    },
}

const MODEL_LBA_COUNT: u64 = 600;
const MODEL_LBA_BYTES: usize = 512;

fn op() -> impl Strategy<Value = Op> {
    let range =
        (0..MODEL_LBA_COUNT).prop_flat_map(|lba| (Just(lba), 1..=(MODEL_LBA_COUNT - lba).min(40)));
    prop_oneof![
        4 => (range.clone(), any::<u64>(), 0u8..3).prop_map(|((lba, nlb), content, style)| Op::Write { lba, nlb, content, style }),
        1 => range.clone().prop_map(|(lba, nlb)| Op::Deallocate { lba, nlb }),
        2 => range.prop_map(|(lba, nlb)| Op::Read { lba, nlb }),
    ]
}

fn block_content(lba: u64, content: u64, style: u8) -> Vec<u8> {
    let mut block = vec![0u8; MODEL_LBA_BYTES];
    match style {
        0 => stamp::fill_block(content ^ lba, &mut block),
        1 => {}
        _ => {
            for (i, b) in block.iter_mut().enumerate() {
                *b = (content.rotate_left((i % 64) as u32) as u8) ^ (lba as u8) ^ (i as u8);
            }
            block[0] |= 1; // never all zeros
        }
    }
    block
}

/// Runs `ops` against `store` and a map of block contents; `stamp_only`
/// stores (the stamp store) are fed stamp and zero blocks only.
fn check_against_model(
    store: &mut dyn DataStore,
    ops: &[Op],
    stamp_only: bool,
) -> Result<(), TestCaseError> {
    let mut model: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for op in ops {
        match *op {
            Op::Write {
                lba,
                nlb,
                content,
                style,
            } => {
                let style = if stamp_only { style % 2 } else { style };
                let mut data = Vec::new();
                for k in 0..nlb {
                    let block = block_content(lba + k, content, style);
                    data.extend_from_slice(&block);
                    model.insert(lba + k, block);
                }
                store.write(lba, &data).unwrap();
            }
            Op::Deallocate { lba, nlb } => {
                store.deallocate(lba, nlb).unwrap();
                for k in lba..lba + nlb {
                    model.remove(&k);
                }
            }
            Op::Read { lba, nlb } => {
                let mut buf = vec![0xEEu8; nlb as usize * MODEL_LBA_BYTES];
                store.read(lba, &mut buf).unwrap();
                for (k, block) in buf.chunks(MODEL_LBA_BYTES).enumerate() {
                    let lba = lba + k as u64;
                    let zeros = vec![0u8; MODEL_LBA_BYTES];
                    let expected = model.get(&lba).unwrap_or(&zeros);
                    prop_assert!(
                        block == expected.as_slice(),
                        "{} lba {lba} differs",
                        store.kind()
                    );
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn stores_match_the_reference_model(ops in proptest::collection::vec(op(), 1..60)) {
        for kind in [StoreKind::Memory, StoreKind::Stamp] {
            let mut store = new_store(kind, MODEL_LBA_BYTES as u32, MODEL_LBA_COUNT);
            check_against_model(store.as_mut(), &ops, kind == StoreKind::Stamp)?;
        }
        let dir = tempfile::tempdir().unwrap();
        let options = ImageOptions { metadata_slot_bytes: Some(1), sync_policy: SyncPolicy::PageCacheOnly };
        let image = PersistentImage::create_with(
            dir.path().join("model.img"), "", &[(MODEL_LBA_BYTES as u32, MODEL_LBA_COUNT)], &options,
        ).unwrap();
        let mut store = image.namespace_store(0);
        check_against_model(store.as_mut(), &ops, false)?;
    }
}
