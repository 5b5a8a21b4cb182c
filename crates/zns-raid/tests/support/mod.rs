//! Shared by the zns-raid tests: member profiles (shrunk ZN540, tiny) that keep
//! their bytes, arrays built from them, and per-block test data keyed by LBA.
#![allow(dead_code)]

use std::rc::Rc;

use rand::Rng;
use zns_core::{IoFlags, ZonedDevice};
use zns_device::{Controller, ControllerOptions, Profile, StoreKind};
use zns_raid::{RaidArray, RaidError, RaidOptions};
use zns_sim::timing::HostStack;
use zns_sim::{Runtime, SimRng};

pub fn profile(name: &str, overrides: &[(&str, &str)]) -> Profile {
    let p = Profile::builtin(name).unwrap();
    let o: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    p.with_overrides(&o).unwrap()
}

/// The ZN540 shrunk to 8 zones of 1 MiB capacity (ZRWA 1 MiB / 16 KiB: H = 8
/// with 64 KiB chunks): every corner case comes up quickly.
pub fn small_zn540() -> Profile {
    profile(
        "zn540",
        &[
            ("namespace.0.zone_count", "8"),
            ("namespace.0.zone_size_lbas", "512"),
            ("namespace.0.zone_capacity_lbas", "448"),
        ],
    )
}

/// `tiny` with a non-volatile cache (ZRWA 64 KiB / 16 KiB: chunk 32 KiB, H = 1).
pub fn tiny_keep() -> Profile {
    profile(
        "tiny",
        &[
            ("power_loss.completed_unflushed", "keep"),
            ("power_loss.in_flight", "torn"),
        ],
    )
}

pub fn controllers(rt: &Runtime, p: &Profile, n: usize) -> Vec<Controller> {
    (0..n)
        .map(|_| {
            Controller::new(
                &rt.handle(),
                p.clone(),
                ControllerOptions {
                    store: StoreKind::Memory,
                    host_stack: HostStack::Spdk,
                },
            )
            .unwrap()
        })
        .collect()
}

pub fn devs(ctrls: &[Controller]) -> Vec<Rc<dyn ZonedDevice>> {
    ctrls
        .iter()
        .map(|c| Rc::new(c.first_zoned().unwrap()) as Rc<dyn ZonedDevice>)
        .collect()
}

pub fn create(
    rt: &mut Runtime,
    p: &Profile,
    n: usize,
    opts: RaidOptions,
) -> Result<(Vec<Controller>, RaidArray), RaidError> {
    let ctrls = controllers(rt, p, n);
    let h = rt.handle();
    let a = rt.block_on(RaidArray::create(&h, devs(&ctrls), opts))?;
    Ok((ctrls, a))
}

/// A 5-member array of `small_zn540`s built with `opts`, the members' host
/// stack as `opts.variant` says (mq-deadline for the RAIZN family and Z).
pub fn variant_array(rt: &mut Runtime, opts: RaidOptions) -> (Vec<Controller>, RaidArray) {
    let stack = if opts.variant.members_mq_deadline() {
        HostStack::IoUringMqDeadline
    } else {
        HostStack::IoUringNone
    };
    let ctrls = controllers(rt, &small_zn540(), 5);
    for c in &ctrls {
        c.set_host_stack(stack);
    }
    let h = rt.handle();
    let a = rt
        .block_on(RaidArray::create(&h, devs(&ctrls), opts))
        .unwrap();
    (ctrls, a)
}

/// Writes logical zones `0..zones` of `a` full with `block_data(lba, salt)`
/// in requests of 1–40 blocks (sizes from `seed`) at queue depth `qd`; every
/// `fua_every`-th request is FUA (0: none).
pub fn fill_zones(
    rt: &mut Runtime,
    a: &RaidArray,
    zones: u32,
    qd: usize,
    seed: u64,
    salt: u64,
    fua_every: u64,
) {
    let h = rt.handle();
    let cfg = a.config().clone();
    let b = cfg.lba_bytes as u64;
    let mut rng = SimRng::from_seed_u64(seed);
    let mut n = 0u64;
    for z in 0..zones {
        let start = z as u64 * cfg.zone_size_lbas;
        let mut off = 0;
        let mut batch = Vec::new();
        while off < cfg.zone_capacity_lbas {
            let nlb = rng.gen_range(1..=40u64).min(cfg.zone_capacity_lbas - off);
            let data: Vec<u8> = (0..nlb)
                .flat_map(|i| block_data(start + off + i, salt, b as usize))
                .collect();
            n += 1;
            let flags = if fua_every > 0 && n % fua_every == 0 {
                IoFlags::FUA
            } else {
                IoFlags::NONE
            };
            let a2 = a.clone();
            let slba = start + off;
            batch.push(h.spawn(async move { a2.write(slba, &data, flags).await }));
            off += nlb;
            if batch.len() >= qd {
                rt.block_on(async {
                    for t in batch.drain(..) {
                        t.await.unwrap();
                    }
                });
            }
        }
        rt.block_on(async {
            for t in batch.drain(..) {
                t.await.unwrap();
            }
        });
    }
}

/// Deterministic test data for logical LBA `lba`, block size `b`, salted.
pub fn block_data(lba: u64, salt: u64, b: usize) -> Vec<u8> {
    let mut x = lba.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    (0..b)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
