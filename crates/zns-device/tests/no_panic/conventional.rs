//! Property 2: the conventional namespace of `zn540-cns` against a reference model.

use super::*;
use crate::test_ctrl;

#[derive(Debug, Clone)]
pub(super) enum ConvOp {
    Write { slba: u64, len: Len, fua: bool },
    Read { slba: u64, len: Len },
    Discard { slba: u64, nlb: u64 },
    Flush,
    ReadError { slba: u64 },
}

pub(super) fn conv_lba(capacity: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0..512u64,
        2 => capacity - 200..capacity + 10,
        1 => any::<u64>(),
        1 => u64::MAX - 200..=u64::MAX,
    ]
}

pub(super) fn conv_op(capacity: u64) -> impl Strategy<Value = ConvOp> {
    let lens = prop_oneof![
        6 => (1..=16u32).prop_map(Len::Blocks),
        2 => (0..=140u32).prop_map(Len::Blocks),
        1 => (0..600_000usize).prop_map(Len::Bytes),
    ];
    prop_oneof![
        6 => (conv_lba(capacity), lens.clone(), any::<bool>())
            .prop_map(|(slba, len, fua)| ConvOp::Write { slba, len, fua }),
        4 => (conv_lba(capacity), lens).prop_map(|(slba, len)| ConvOp::Read { slba, len }),
        3 => (
            conv_lba(capacity),
            prop_oneof![4 => 0..=140u64, 1 => any::<u64>()]
        )
            .prop_map(|(slba, nlb)| ConvOp::Discard { slba, nlb }),
        1 => Just(ConvOp::Flush),
        1 => (0..512u64).prop_map(|slba| ConvOp::ReadError { slba }),
    ]
}

/// What the device must answer: Ok, or the status of the first check that fails.
pub(super) fn conv_expected(
    capacity: u64,
    mdts: u64,
    slba: u64,
    nlb: Option<u64>,
) -> Result<(), NvmeStatus> {
    let nlb = nlb.ok_or(NvmeStatus::InvalidField)?;
    if nlb == 0 || nlb > mdts {
        return Err(NvmeStatus::InvalidField);
    }
    match slba.checked_add(nlb) {
        Some(end) if end <= capacity => Ok(()),
        _ => Err(NvmeStatus::LbaOutOfRange),
    }
}

/// 2. The conventional namespace of `zn540-cns`: random read / write / discard
///    / flush, checked against a model of the data (memory and stamp stores).
#[test]
pub(super) fn random_conventional_commands_never_panic_and_match_a_model() {
    let profile = Profile::builtin("zn540-cns").unwrap();
    let NamespaceProfile::Conventional(c) = &profile.namespaces[0] else {
        panic!("zn540-cns: NSID 1 is conventional");
    };
    let (capacity, mdts) = (c.capacity_lbas, c.max_transfer_lbas as u64);
    for store in STORES {
        check(
            &format!("zn540-cns / {store:?}"),
            64,
            (
                any::<u64>(),
                0..3usize,
                prop::collection::vec(conv_op(capacity), 1..40),
            ),
            |(seed, stack, ops)| {
                let mut rt = Runtime::new(seed);
                let ctrl = test_ctrl::open(&rt.handle(), profile.clone(), store, STACKS[stack]);
                prop_assert!(ctrl.conventional(0).is_none());
                prop_assert!(ctrl.conventional(2).is_none());
                prop_assert!(ctrl.conventional(u32::MAX).is_none());
                prop_assert!(ctrl.zoned(1).is_none());
                prop_assert_eq!(
                    ctrl.inject_zone_read_only(1, 0),
                    Err::<(), NvmeError>(NvmeStatus::InvalidNamespace.into())
                );
                let dev = ctrl.conventional(1).unwrap();
                let lb = dev.lba_bytes() as usize;
                // lba -> stamp tag of what it holds (absent: zeros).
                let mut model: HashMap<u64, u64> = HashMap::new();
                let mut bad_blocks: Vec<u64> = Vec::new();
                for (k, op) in ops.iter().enumerate() {
                    let k = k as u64;
                    match *op {
                        ConvOp::Write { slba, len, fua } => {
                            let mut buf = vec![0u8; len.bytes(lb as u32)];
                            let first_tag = (k << 32) | 0x8000_0000;
                            fill_stamps(&mut buf, lb, first_tag);
                            let nlb = (buf.len() % lb == 0).then_some((buf.len() / lb) as u64);
                            let flags = if fua { IoFlags::FUA } else { IoFlags::NONE };
                            let r = rt.block_on(dev.write(slba, &buf, flags));
                            let want = conv_expected(capacity, mdts, slba, nlb);
                            prop_assert_eq!(r.map_err(|e| e.status), want, "{:?}", op);
                            if want.is_ok() {
                                for i in 0..nlb.unwrap() {
                                    model.insert(slba + i, first_tag + i);
                                }
                            }
                        }
                        ConvOp::Read { slba, len } => {
                            let mut buf = vec![0u8; len.bytes(lb as u32)];
                            let nlb = (buf.len() % lb == 0).then_some((buf.len() / lb) as u64);
                            let r = rt.block_on(dev.read(slba, &mut buf));
                            let want = conv_expected(capacity, mdts, slba, nlb);
                            let hits_bad = want.is_ok()
                                && bad_blocks
                                    .iter()
                                    .any(|b| (slba..slba + nlb.unwrap()).contains(b));
                            if hits_bad {
                                prop_assert_eq!(
                                    r,
                                    Err(NvmeError::injected(NvmeStatus::UnrecoveredReadError))
                                );
                                continue;
                            }
                            prop_assert_eq!(r.map_err(|e| e.status), want, "{:?}", op);
                            if want.is_err() || store == StoreKind::None {
                                continue;
                            }
                            for (i, block) in buf.chunks(lb).enumerate() {
                                let lba = slba + i as u64;
                                match model.get(&lba) {
                                    Some(&tag) => prop_assert!(
                                        stamp::is_stamp_of(tag, block),
                                        "LBA {} should hold stamp {:#x}, holds {:?}",
                                        lba,
                                        tag,
                                        stamp::tag_of(block)
                                    ),
                                    None => prop_assert!(
                                        block.iter().all(|b| *b == 0),
                                        "LBA {} should read zeros",
                                        lba
                                    ),
                                }
                            }
                        }
                        ConvOp::Discard { slba, nlb } => {
                            let r = rt.block_on(dev.discard(slba, nlb));
                            // Deallocate is not limited by MDTS.
                            let want = conv_expected(capacity, u64::MAX, slba, Some(nlb));
                            prop_assert_eq!(r.map_err(|e| e.status), want, "{:?}", op);
                            if want.is_ok() {
                                for i in 0..nlb {
                                    model.remove(&(slba + i));
                                }
                            }
                        }
                        ConvOp::Flush => {
                            prop_assert_eq!(rt.block_on(dev.flush()), Ok(()));
                        }
                        ConvOp::ReadError { slba } => {
                            ctrl.inject_read_error(1, slba).unwrap();
                            bad_blocks.push(slba);
                        }
                    }
                }
                // Concurrent traffic, then a power cut with commands in flight.
                let handles: Vec<_> = (0..4u64)
                    .map(|t| {
                        let dev = dev.clone();
                        rt.handle().spawn(async move {
                            let mut errors = Vec::new();
                            for i in 0..8u64 {
                                let buf = vec![t as u8; 4096 * (1 + i as usize % 3)];
                                if let Err(e) = dev.write(t * 64 + i * 4, &buf, IoFlags::NONE).await
                                {
                                    errors.push(e);
                                }
                            }
                            errors
                        })
                    })
                    .collect();
                let h = rt.handle();
                let cutter = ctrl.clone();
                let errors = rt.block_on(async move {
                    h.sleep(30_000).await;
                    cutter.power_cut();
                    let mut all = Vec::new();
                    for handle in handles {
                        all.extend(handle.await);
                    }
                    all
                });
                for e in errors {
                    prop_assert!(
                        e.injected
                            && matches!(
                                e.status,
                                NvmeStatus::AbortedPowerLoss | NvmeStatus::NamespaceNotReady
                            ),
                        "{:?}",
                        e
                    );
                }
                ctrl.power_on();
                let mut buf = vec![0u8; 4096];
                prop_assert_eq!(rt.block_on(dev.read(capacity - 1, &mut buf)), Ok(()));
                Ok(())
            },
        );
    }
}
