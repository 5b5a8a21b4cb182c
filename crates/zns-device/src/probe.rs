//! `zns probe`: quick QD1 measurements of an emulated device through the
//! ordinary `ZonedDevice` path — the mean virtual latency of 4 KiB writes and
//! reads and 8 KiB appends per host stack, of open and close, of the first
//! write to an empty zone (implicit open), and of reset and finish at several
//! zone occupancies. It is a smoke check of a profile's timing, not the
//! fidelity suite (that runs fio job files through the benchmark runner).

use serde::Serialize;
use zns_core::{IoFlags, ZoneAction, ZoneSendCmd, ZonedDevice};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

use crate::controller::{Controller, ControllerOptions, DeviceError};
use crate::profile::Profile;
use crate::store::StoreKind;

/// One measured figure.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeFigure {
    pub id: String,
    pub desc: String,
    pub value: f64,
    pub unit: &'static str,
}

/// Everything `run_probe` measured.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub profile: String,
    pub figures: Vec<ProbeFigure>,
}

const SAMPLES: u64 = 64;

/// Runs the probe on a fresh device per measurement (seed 0).
pub fn run_probe(profile: &Profile) -> Result<ProbeReport, DeviceError> {
    let mut figures = Vec::new();
    let mut push = |id: &str, desc: String, value: f64, unit: &'static str| {
        figures.push(ProbeFigure {
            id: id.into(),
            desc,
            value,
            unit,
        })
    };
    for stack in HostStack::ALL {
        let stack_name = stack.name();
        let w = mean_qd1(profile, stack, Op::Write, 1)?;
        push(
            &format!("qd1.write_4k_{stack_name}_us"),
            format!("4 KiB write, QD1, {stack_name}"),
            w,
            "us",
        );
        let r = mean_qd1(profile, stack, Op::Read, 1)?;
        push(
            &format!("qd1.read_4k_{stack_name}_us"),
            format!("4 KiB read, QD1, {stack_name}"),
            r,
            "us",
        );
    }
    let a = mean_qd1(profile, HostStack::Spdk, Op::Append, 2)?;
    push(
        "qd1.append_8k_spdk_us",
        "8 KiB append, QD1, spdk".into(),
        a,
        "us",
    );
    let a4 = mean_qd1(profile, HostStack::Spdk, Op::Append, 1)?;
    push(
        "qd1.append_4k_spdk_us",
        "4 KiB append, QD1, spdk".into(),
        a4,
        "us",
    );

    let (open_us, close_us, implicit_write_us, implicit_append_us) = open_close(profile)?;
    push(
        "zone.open_us",
        "explicit open of an empty zone".into(),
        open_us,
        "us",
    );
    push(
        "zone.close_us",
        "close of an open zone".into(),
        close_us,
        "us",
    );
    push(
        "zone.implicit_open_write_extra_us",
        "extra latency of the first 4 KiB write to an empty zone".into(),
        implicit_write_us,
        "us",
    );
    push(
        "zone.implicit_open_append_extra_us",
        "extra latency of the first 4 KiB append to an empty zone".into(),
        implicit_append_us,
        "us",
    );

    for (pct, finish_first) in [
        (0.0, false),
        (0.0625, false),
        (0.25, false),
        (0.5, false),
        (1.0, false),
        (0.5, true),
    ] {
        let ms = reset_at(profile, pct, finish_first)?;
        let id = format!(
            "zone.reset_{}pct{}_ms",
            (pct * 100.0) as u32,
            if finish_first { "_finished" } else { "" }
        );
        push(
            &id,
            format!(
                "reset of a zone {:.2}% written{}",
                pct * 100.0,
                if finish_first { ", finished first" } else { "" }
            ),
            ms,
            "ms",
        );
    }
    for pct in [0.0001, 0.25, 0.5, 0.9999] {
        let ms = finish_at(profile, pct)?;
        push(
            &format!("zone.finish_{}pct_ms", (pct * 100.0).round() as u32),
            format!("finish of a zone {:.2}% written", pct * 100.0),
            ms,
            "ms",
        );
    }
    Ok(ProbeReport {
        profile: profile.name.clone(),
        figures,
    })
}

#[derive(Clone, Copy)]
enum Op {
    Write,
    Append,
    Read,
}

fn device(
    profile: &Profile,
    rt: &Runtime,
    stack: HostStack,
) -> Result<crate::EmulatedZns, DeviceError> {
    let ctrl = Controller::new(
        &rt.handle(),
        profile.clone(),
        ControllerOptions {
            store: StoreKind::None,
            host_stack: stack,
        },
    )?;
    ctrl.first_zoned().ok_or_else(|| {
        DeviceError::Invalid(format!("profile {} has no zoned namespace", profile.name))
    })
}

/// Mean latency in µs of SAMPLES sequential QD1 commands of `blocks` LBAs to zone 0 (after a warm-up write).
fn mean_qd1(profile: &Profile, stack: HostStack, op: Op, blocks: u64) -> Result<f64, DeviceError> {
    let mut rt = Runtime::new(0);
    let dev = device(profile, &rt, stack)?;
    let handle = rt.handle();
    let cfg = dev.config().clone();
    let bytes = (blocks * cfg.lba_bytes as u64) as usize;
    let samples = SAMPLES.min(cfg.zone_capacity_lbas / blocks / 2).max(1);
    let result = rt.block_on(async {
        let buf = vec![0u8; bytes];
        let mut rbuf = vec![0u8; bytes];
        // Open the zone so the implicit-open cost is not measured, and write some data for reads.
        dev.zone_send(ZoneSendCmd {
            action: ZoneAction::Open { zrwa: false },
            slba: 0,
            select_all: false,
        })
        .await?;
        let mut wp = 0u64;
        for _ in 0..samples {
            dev.write(wp, &buf, IoFlags::NONE).await?;
            wp += blocks;
        }
        handle.sleep(10_000_000).await;
        let mut total_ns = 0u64;
        for i in 0..samples {
            let t0 = handle.now_ns();
            match op {
                Op::Write => {
                    dev.write(wp, &buf, IoFlags::NONE).await?;
                    wp += blocks;
                }
                Op::Append => {
                    dev.append(0, &buf, IoFlags::NONE).await?;
                }
                Op::Read => {
                    dev.read((i * 7919 % samples) * blocks, &mut rbuf).await?;
                }
            }
            total_ns += handle.now_ns() - t0;
        }
        Ok::<f64, zns_core::NvmeError>(total_ns as f64 / samples as f64 / 1000.0)
    });
    result.map_err(|e| DeviceError::Invalid(format!("probe command failed: {e}")))
}

fn open_close(profile: &Profile) -> Result<(f64, f64, f64, f64), DeviceError> {
    let mut rt = Runtime::new(0);
    let dev = device(profile, &rt, HostStack::Spdk)?;
    let handle = rt.handle();
    let cfg = dev.config().clone();
    let zsz = cfg.zone_size_lbas;
    let block = vec![0u8; cfg.lba_bytes as usize];
    // Each measured command runs after 1 ms of idle time, so nothing queues;
    // means over ROUNDS rounds (the model jitters completions by ±1 µs).
    // Implicit-open extra = first command to an empty zone minus the first
    // command to an explicitly opened empty zone.
    const ROUNDS: u64 = 16;
    let r = rt.block_on(async {
        let idle = || handle.sleep(1_000_000);
        let send = |action: ZoneAction, zone: u64| {
            dev.zone_send(ZoneSendCmd {
                action,
                slba: zone * zsz,
                select_all: false,
            })
        };
        let mut sums_ns = [0u64; 6]; // open, close, opened write, implicit write, opened append, implicit append
        for round in 0..ROUNDS {
            let base = (round * 4) % (cfg.zone_count as u64 - 3);
            let mut t0 = handle.now_ns();
            send(ZoneAction::Open { zrwa: false }, base).await?;
            sums_ns[0] += handle.now_ns() - t0;
            idle().await;
            t0 = handle.now_ns();
            dev.write(base * zsz, &block, IoFlags::NONE).await?;
            sums_ns[2] += handle.now_ns() - t0;
            idle().await;
            t0 = handle.now_ns();
            send(ZoneAction::Close, base).await?;
            sums_ns[1] += handle.now_ns() - t0;
            idle().await;
            t0 = handle.now_ns();
            dev.write((base + 1) * zsz, &block, IoFlags::NONE).await?;
            sums_ns[3] += handle.now_ns() - t0;
            idle().await;
            send(ZoneAction::Open { zrwa: false }, base + 2).await?;
            idle().await;
            t0 = handle.now_ns();
            dev.append((base + 2) * zsz, &block, IoFlags::NONE).await?;
            sums_ns[4] += handle.now_ns() - t0;
            idle().await;
            t0 = handle.now_ns();
            dev.append((base + 3) * zsz, &block, IoFlags::NONE).await?;
            sums_ns[5] += handle.now_ns() - t0;
            for z in base..base + 4 {
                send(ZoneAction::Reset, z).await?;
            }
            idle().await;
        }
        let mean_us = |i: usize| sums_ns[i] as f64 / ROUNDS as f64 / 1000.0;
        Ok::<_, zns_core::NvmeError>((
            mean_us(0),
            mean_us(1),
            mean_us(3) - mean_us(2),
            mean_us(5) - mean_us(4),
        ))
    });
    r.map_err(|e| DeviceError::Invalid(format!("probe command failed: {e}")))
}

/// Writes `fraction` of zone 0's capacity (at least one block unless 0), optionally finishes it, idles 1 s, resets; ms.
fn reset_at(profile: &Profile, fraction: f64, finish_first: bool) -> Result<f64, DeviceError> {
    zone_mgmt_at(profile, fraction, finish_first, ZoneAction::Reset)
}

fn finish_at(profile: &Profile, fraction: f64) -> Result<f64, DeviceError> {
    zone_mgmt_at(profile, fraction, false, ZoneAction::Finish)
}

fn zone_mgmt_at(
    profile: &Profile,
    fraction: f64,
    finish_first: bool,
    action: ZoneAction,
) -> Result<f64, DeviceError> {
    let mut rt = Runtime::new(0);
    let dev = device(profile, &rt, HostStack::Spdk)?;
    let handle = rt.handle();
    let cfg = dev.config().clone();
    let mut target = (cfg.zone_capacity_lbas as f64 * fraction).round() as u64;
    if fraction > 0.0 {
        target = target.clamp(1, cfg.zone_capacity_lbas);
    }
    if action == ZoneAction::Finish {
        target = target.clamp(1, cfg.zone_capacity_lbas - 1);
    }
    let chunk_lbas = (cfg.max_transfer_lbas as u64).clamp(1, 32);
    let buf = vec![0u8; (chunk_lbas * cfg.lba_bytes as u64) as usize];
    let r = rt.block_on(async {
        dev.zone_send(ZoneSendCmd {
            action: ZoneAction::Open { zrwa: false },
            slba: 0,
            select_all: false,
        })
        .await?;
        let mut wp = 0;
        while wp < target {
            let n = chunk_lbas.min(target - wp);
            dev.write(
                wp,
                &buf[..(n * cfg.lba_bytes as u64) as usize],
                IoFlags::NONE,
            )
            .await?;
            wp += n;
        }
        if finish_first {
            dev.zone_send(ZoneSendCmd {
                action: ZoneAction::Finish,
                slba: 0,
                select_all: false,
            })
            .await?;
        }
        handle.sleep(1_000_000_000).await;
        let t0 = handle.now_ns();
        dev.zone_send(ZoneSendCmd {
            action,
            slba: 0,
            select_all: false,
        })
        .await?;
        Ok::<f64, zns_core::NvmeError>((handle.now_ns() - t0) as f64 / 1e6)
    });
    r.map_err(|e| DeviceError::Invalid(format!("probe command failed: {e}")))
}
