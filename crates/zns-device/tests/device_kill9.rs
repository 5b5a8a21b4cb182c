//! `kill -9` of a process using a device image: a child process (this test
//! binary re-executed with `ZNS_DEVICE_KILL9_IMAGE` set) writes stamp blocks
//! through `EmulatedZns` — some writes with FUA, others followed now and then
//! by a Flush — and prints what is durable after each FUA write or completed
//! Flush. The parent SIGKILLs it mid-run, reopens the image and checks that
//! every write reported durable reads back intact below the reported write
//! pointers, and that nothing beyond the write pointers is claimed.

// a test of a process killed mid-write: real processes, real time (clippy.toml's determinism guardrails do not apply)
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use rand::Rng;
use zns_core::{IoFlags, ReportFilter, ZoneState, ZonedDevice};
use zns_device::store::stamp;
use zns_device::{Controller, Profile};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

const IMAGE_ENV: &str = "ZNS_DEVICE_KILL9_IMAGE";
/// Zones the child writes.
const ZONES: u64 = 64;
/// The child stops after this many FUA acknowledgements and waits to be killed.
const KILL_AFTER_FUA_ACKS: u32 = 150;

/// `tiny` widened: 64 zones, no open/active limits (the child writes all zones at once).
fn profile() -> Profile {
    Profile::builtin("tiny")
        .unwrap()
        .with_overrides(&[
            ("namespace.0.zone_count".into(), "64".into()),
            ("namespace.0.max_open_zones".into(), "0".into()),
            ("namespace.0.max_active_zones".into(), "0".into()),
        ])
        .unwrap()
}

fn tag_for(lba: u64) -> u64 {
    lba.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1
}

/// The child's body: runs only when re-executed by the parent.
#[test]
fn device_kill9_writer_child() {
    let Ok(path) = std::env::var(IMAGE_ENV) else {
        return;
    };
    let mut rt = Runtime::new(5);
    let ctrl =
        Controller::create_image(&rt.handle(), profile(), path.as_ref(), HostStack::Spdk).unwrap();
    let dev = ctrl.first_zoned().unwrap();
    let cfg = dev.config().clone();
    let mut rng = rt.handle().rng();
    let mut wps: Vec<u64> = (0..ZONES).map(|z| z * cfg.zone_size_lbas).collect();
    let mut fua_acks = 0;
    loop {
        let z = rng.gen_range(0..ZONES as usize);
        let end = z as u64 * cfg.zone_size_lbas + cfg.zone_capacity_lbas;
        if wps
            .iter()
            .enumerate()
            .all(|(i, wp)| *wp >= i as u64 * cfg.zone_size_lbas + cfg.zone_capacity_lbas)
        {
            println!("done");
            return;
        }
        if wps[z] >= end {
            continue;
        }
        let nlb = rng.gen_range(1..=4u64).min(end - wps[z]);
        let mut buf = vec![0u8; nlb as usize * 4096];
        for (i, b) in buf.chunks_mut(4096).enumerate() {
            stamp::fill_block(tag_for(wps[z] + i as u64), b);
        }
        let fua = rng.gen_bool(0.3);
        rt.block_on(dev.write(wps[z], &buf, if fua { IoFlags::FUA } else { IoFlags::NONE }))
            .unwrap();
        wps[z] += nlb;
        if fua {
            println!("durable {z} {} fua", wps[z]);
            fua_acks += 1;
            if fua_acks == KILL_AFTER_FUA_ACKS {
                // Wait for the SIGKILL with the controller alive, so no clean
                // shutdown saves anything for us.
                println!("waiting");
                std::io::Write::flush(&mut std::io::stdout()).unwrap();
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(1)); // wall-clock ok
                }
            }
        } else if rng.gen_bool(0.02) {
            rt.block_on(dev.flush()).unwrap();
            for (zz, wp) in wps.iter().enumerate() {
                println!("durable {zz} {wp}");
            }
        }
    }
}

#[test]
fn writes_acknowledged_durable_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "device_kill9_writer_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(IMAGE_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut durable: BTreeMap<u64, u64> = BTreeMap::new();
    let mut lines = 0;
    let mut killed = false;
    for line in stdout.lines() {
        let line = line.unwrap();
        // libtest prints "test <name> ... " without a newline before the
        // child's first line, so look for the report anywhere in the line.
        if line.contains("waiting") {
            child.kill().unwrap();
            killed = true;
            break;
        }
        let Some(at) = line.find("durable ") else {
            continue;
        };
        let mut parts = line[at..].split_whitespace().skip(1);
        let z: u64 = parts.next().unwrap().parse().unwrap();
        let end: u64 = parts.next().unwrap().parse().unwrap();
        let e = durable.entry(z).or_insert(0);
        *e = (*e).max(end);
        if parts.next() == Some("fua") {
            lines += 1;
        }
    }
    let status = child.wait().unwrap();
    assert!(killed, "the child ended without waiting to be killed");
    assert_eq!(
        lines, KILL_AFTER_FUA_ACKS,
        "every FUA acknowledgement was read"
    );
    assert!(!status.success(), "the child finished before it was killed");

    let mut rt = Runtime::new(6);
    let ctrl = Controller::open_image(&rt.handle(), &path, HostStack::Spdk).unwrap();
    assert!(
        ctrl.metadata_recovery().is_none(),
        "kill -9 cannot tear a zone-table save"
    );
    let dev = ctrl.first_zoned().unwrap();
    let cfg = dev.config().clone();
    let zones = rt
        .block_on(dev.report_zones(0, ReportFilter::All, ZONES as usize))
        .unwrap();
    let mut buf = vec![0u8; 4096];
    for (z, zone) in zones.iter().enumerate() {
        let start = zone.start_lba;
        let wp = if zone.state == ZoneState::Full {
            start + cfg.zone_capacity_lbas
        } else {
            zone.write_pointer
        };
        let durable_end = durable
            .get(&(z as u64))
            .copied()
            .unwrap_or(start)
            .max(start);
        assert!(
            wp >= durable_end,
            "zone {z}: WP {wp} below the durable end {durable_end}"
        );
        for lba in start..start + cfg.zone_capacity_lbas {
            rt.block_on(dev.read(lba, &mut buf)).unwrap();
            if lba < wp {
                assert_eq!(
                    stamp::tag_of(&buf),
                    Some(tag_for(lba)),
                    "zone {z}: LBA {lba} below the WP {wp}"
                );
            } else {
                assert!(
                    buf.iter().all(|b| *b == 0),
                    "zone {z}: LBA {lba} beyond the WP {wp} holds data"
                );
            }
        }
    }
}
