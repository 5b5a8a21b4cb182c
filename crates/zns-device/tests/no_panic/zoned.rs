//! Property 1: random (partly concurrent) zoned-namespace command sequences with
//! faults, for every data store and host stack: no panic, errors carry
//! statuses, the zones stay consistent.

use super::*;

/// An LBA, resolved against the device when the command runs.
#[derive(Debug, Clone, Copy)]
pub(super) enum Lba {
    /// `zone × zone size + offset` (saturating: zones past the end are fine).
    Zone(u32, u64),
    /// The zone's current write pointer (by Report Zones) plus a delta.
    Wp(u32, i64),
    /// Anything.
    Raw(u64),
}

/// A buffer length.
#[derive(Debug, Clone, Copy)]
pub(super) enum Len {
    Blocks(u32),
    Bytes(usize),
}

impl Len {
    pub(super) fn bytes(self, lba_bytes: u32) -> usize {
        match self {
            Len::Blocks(n) => n as usize * lba_bytes as usize,
            Len::Bytes(b) => b,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum Op {
    Write {
        lba: Lba,
        len: Len,
        fua: bool,
    },
    Append {
        lba: Lba,
        len: Len,
        fua: bool,
    },
    Read {
        lba: Lba,
        len: Len,
    },
    Send {
        action: ZoneAction,
        lba: Lba,
        all: bool,
    },
    Flush,
    Report {
        start: Lba,
        filter: ReportFilter,
        max: usize,
    },
    Sleep(u64),
    PowerCut,
    PowerOn,
    ReadError {
        nsid: u32,
        lba: Lba,
    },
    ZoneFault {
        nsid: u32,
        zone: u32,
        offline: bool,
    },
    /// A write whose future is dropped (task aborted) `after_ns` into its life.
    Cancelled {
        lba: Lba,
        len: Len,
        after_ns: u64,
    },
    /// Open `zone` with a ZRWA, write `nlb` blocks at its WP, flush the ZRWA
    /// up to WP + `flush_to` (each step may fail; the statuses are checked).
    ZrwaSession {
        zone: u32,
        nlb: u32,
        flush_to: i64,
    },
}

pub(super) fn zone_index() -> impl Strategy<Value = u32> {
    prop_oneof![10 => 0..7u32, 3 => 0..18u32, 1 => any::<u32>()]
}

pub(super) fn lba() -> impl Strategy<Value = Lba> {
    prop_oneof![
        4 => zone_index().prop_map(|z| Lba::Zone(z, 0)),
        8 => zone_index().prop_map(|z| Lba::Wp(z, 0)),
        4 => (zone_index(), -2i64..24).prop_map(|(z, d)| Lba::Wp(z, d)),
        // ZRWA flush targets (granularity 4) and the ZRWA window.
        2 => (0..7u32, prop_oneof![Just(3i64), Just(7), Just(15), 0..32i64])
            .prop_map(|(z, d)| Lba::Wp(z, d)),
        1 => (zone_index(), 0..3u64).prop_map(|(z, o)| Lba::Zone(z, o)),
        1 => (zone_index(), 0..300u64).prop_map(|(z, o)| Lba::Zone(z, o)),
        1 => (any::<u32>(), any::<u64>()).prop_map(|(z, o)| Lba::Zone(z, o)),
        1 => prop_oneof![
            Just(u64::MAX),
            u64::MAX - 300..=u64::MAX,
            any::<u64>(),
            4000..4200u64,
            Just(i64::MAX as u64),
        ]
        .prop_map(Lba::Raw),
    ]
}

pub(super) fn len() -> impl Strategy<Value = Len> {
    prop_oneof![
        8 => (1..=8u32).prop_map(Len::Blocks),
        4 => (0..=40u32).prop_map(Len::Blocks),
        2 => (0..170_000usize).prop_map(Len::Bytes),
        1 => prop_oneof![Just(4095usize), Just(4097), Just(1), Just(512), Just(8191)]
            .prop_map(Len::Bytes),
    ]
}

pub(super) fn action() -> impl Strategy<Value = ZoneAction> {
    prop_oneof![
        Just(ZoneAction::Close),
        Just(ZoneAction::Finish),
        any::<bool>().prop_map(|zrwa| ZoneAction::Open { zrwa }),
        Just(ZoneAction::Reset),
        Just(ZoneAction::Offline),
        Just(ZoneAction::FlushZrwa),
    ]
}

pub(super) fn filter() -> impl Strategy<Value = ReportFilter> {
    prop_oneof![
        Just(ReportFilter::All),
        Just(ReportFilter::Empty),
        Just(ReportFilter::ImplicitlyOpened),
        Just(ReportFilter::ExplicitlyOpened),
        Just(ReportFilter::Closed),
        Just(ReportFilter::Full),
        Just(ReportFilter::ReadOnly),
        Just(ReportFilter::Offline),
    ]
}

pub(super) fn nsid() -> impl Strategy<Value = u32> {
    prop_oneof![8 => Just(1u32), 1 => Just(0u32), 1 => Just(2u32), 1 => any::<u32>()]
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (lba(), len(), any::<bool>()).prop_map(|(lba, len, fua)| Op::Write { lba, len, fua }),
        4 => (lba(), len(), any::<bool>()).prop_map(|(lba, len, fua)| Op::Append { lba, len, fua }),
        6 => (lba(), len()).prop_map(|(lba, len)| Op::Read { lba, len }),
        6 => (action(), lba(), prop::bool::weighted(0.15))
            .prop_map(|(action, lba, all)| Op::Send { action, lba, all }),
        2 => Just(Op::Flush),
        2 => (lba(), filter(), prop_oneof![0..20usize, Just(usize::MAX)])
            .prop_map(|(start, filter, max)| Op::Report { start, filter, max }),
        3 => prop_oneof![0..60_000u64, Just(0u64), 0..2_000_000u64].prop_map(Op::Sleep),
        1 => Just(Op::PowerCut),
        3 => Just(Op::PowerOn),
        1 => (nsid(), lba()).prop_map(|(nsid, lba)| Op::ReadError { nsid, lba }),
        1 => (nsid(), zone_index(), any::<bool>())
            .prop_map(|(nsid, zone, offline)| Op::ZoneFault { nsid, zone, offline }),
        2 => (lba(), len(), prop_oneof![Just(0u64), 0..40_000u64])
            .prop_map(|(lba, len, after_ns)| Op::Cancelled { lba, len, after_ns }),
        2 => (0..4u32, 1..=24u32, prop_oneof![Just(3i64), Just(7), Just(15), -1..36i64])
            .prop_map(|(zone, nlb, flush_to)| Op::ZrwaSession { zone, nlb, flush_to }),
    ]
}

pub(super) async fn resolve(dev: &EmulatedZns, lba: Lba) -> u64 {
    let zsze = dev.config().zone_size_lbas;
    match lba {
        Lba::Raw(x) => x,
        Lba::Zone(z, off) => (z as u64).saturating_mul(zsze).saturating_add(off),
        Lba::Wp(z, d) => {
            let start = (z as u64).saturating_mul(zsze);
            let wp = match dev.report_zones(start, ReportFilter::All, 1).await {
                Ok(v) if !v.is_empty() => v[0].write_pointer,
                _ => start,
            };
            wp.saturating_add_signed(d)
        }
    }
}

/// An error value a zoned namespace may return: injected faults are marked,
/// everything else is a status of the command set (never "internal").
pub(super) fn check_error(what: &str, e: &NvmeError) -> Result<(), String> {
    use NvmeStatus::*;
    let allowed = if e.injected {
        matches!(
            e.status,
            HostPathingError | NamespaceNotReady | AbortedPowerLoss | UnrecoveredReadError
        )
    } else {
        matches!(
            e.status,
            InvalidField
                | LbaOutOfRange
                | InvalidZoneOperation
                | ZrwaResourcesUnavailable
                | ZoneBoundaryError
                | ZoneIsFull
                | ZoneIsReadOnly
                | ZoneIsOffline
                | ZoneInvalidWrite
                | TooManyActiveZones
                | TooManyOpenZones
                | InvalidZoneStateTransition
        )
    };
    if !allowed || e.to_string().is_empty() {
        return Err(format!("{what}: unexpected error {e:?} ({e})"));
    }
    Ok(())
}

/// Checks the outcome of a data command: a buffer that is not a whole number
/// of blocks within MDTS is Invalid Field, a range past the namespace LBA Out
/// of Range (unless an injected fault came first).
pub(super) fn check_io_outcome<T>(
    what: &str,
    dev: &EmulatedZns,
    slba: u64,
    len_bytes: usize,
    r: &Result<T, NvmeError>,
) -> Result<(), String> {
    let cfg = dev.config();
    let lb = cfg.lba_bytes as usize;
    let bad_len = len_bytes == 0
        || len_bytes % lb != 0
        || (len_bytes / lb) as u64 > cfg.max_transfer_lbas as u64;
    let nlb = (len_bytes / lb) as u64;
    let out_of_range = slba.checked_add(nlb).map_or(true, |e| e > cfg.total_lbas());
    match r {
        Ok(_) if bad_len || out_of_range => Err(format!(
            "{what} at {slba}, {len_bytes} bytes succeeded (bad length {bad_len}, out of range {out_of_range})"
        )),
        Ok(_) => Ok(()),
        Err(e) => {
            check_error(what, e)?;
            if e.injected {
                return Ok(());
            }
            // Both wrong: either status will do (the SPDK path checks the
            // length first, the mq-deadline path the range).
            if bad_len && out_of_range && e.status == NvmeStatus::LbaOutOfRange {
                return Ok(());
            }
            if bad_len && e.status != NvmeStatus::InvalidField {
                return Err(format!("{what} of {len_bytes} bytes: {e:?}, expected Invalid Field"));
            }
            if !bad_len && out_of_range && e.status != NvmeStatus::LbaOutOfRange {
                return Err(format!("{what} at {slba}+{nlb}: {e:?}, expected LBA Out of Range"));
            }
            Ok(())
        }
    }
}

pub(super) async fn run_op(ctrl: &Controller, dev: &EmulatedZns, op: &Op) -> Result<(), String> {
    let cfg = dev.config().clone();
    let lb = cfg.lba_bytes;
    match *op {
        Op::Write { lba, len, fua } => {
            let slba = resolve(dev, lba).await;
            let mut buf = vec![0u8; len.bytes(lb)];
            fill_stamps(&mut buf, lb as usize, slba);
            let flags = if fua { IoFlags::FUA } else { IoFlags::NONE };
            let r = dev.write(slba, &buf, flags).await;
            check_io_outcome("write", dev, slba, buf.len(), &r)
        }
        Op::Append { lba, len, fua } => {
            let zslba = resolve(dev, lba).await;
            let mut buf = vec![0u8; len.bytes(lb)];
            fill_stamps(&mut buf, lb as usize, zslba ^ 0xA99E_0000);
            let flags = if fua { IoFlags::FUA } else { IoFlags::NONE };
            let r = dev.append(zslba, &buf, flags).await;
            check_io_outcome("append", dev, zslba, buf.len(), &r)?;
            if let Ok(at) = r {
                let nlb = (buf.len() / lb as usize) as u64;
                let cap_end = zslba + cfg.zone_capacity_lbas;
                if zslba % cfg.zone_size_lbas != 0 || at < zslba || at + nlb > cap_end {
                    return Err(format!("append to {zslba} of {nlb} landed at {at}"));
                }
            }
            Ok(())
        }
        Op::Read { lba, len } => {
            let slba = resolve(dev, lba).await;
            let mut buf = vec![0u8; len.bytes(lb)];
            let r = dev.read(slba, &mut buf).await;
            check_io_outcome("read", dev, slba, buf.len(), &r)
        }
        Op::Send { action, lba, all } => {
            let slba = resolve(dev, lba).await;
            let cmd = ZoneSendCmd {
                action,
                slba,
                select_all: all,
            };
            match dev.zone_send(cmd).await {
                Ok(()) if all && action == ZoneAction::FlushZrwa => {
                    Err(format!("{cmd:?} succeeded"))
                }
                Ok(()) if !all && slba >= cfg.total_lbas() => Err(format!("{cmd:?} succeeded")),
                Ok(()) => Ok(()),
                Err(e) => check_error(&format!("{cmd:?}"), &e),
            }
        }
        Op::Flush => match dev.flush().await {
            Ok(()) => Ok(()),
            Err(e) => check_error("flush", &e),
        },
        Op::Report { start, filter, max } => {
            let start = resolve(dev, start).await;
            match dev.report_zones(start, filter, max).await {
                Ok(zones) => {
                    if start >= cfg.total_lbas() {
                        return Err(format!("report from {start} succeeded"));
                    }
                    let first = start / cfg.zone_size_lbas * cfg.zone_size_lbas;
                    if zones.len() > max
                        || zones
                            .iter()
                            .any(|z| !filter.matches(z.state) || z.start_lba < first)
                    {
                        return Err(format!("report({start}, {filter:?}, {max}) = {zones:?}"));
                    }
                    Ok(())
                }
                Err(e) => check_error("report", &e),
            }
        }
        Op::Sleep(ns) => {
            ctrl.handle().sleep(ns).await;
            Ok(())
        }
        Op::PowerCut => {
            ctrl.power_cut();
            Ok(())
        }
        Op::PowerOn => {
            ctrl.power_on();
            Ok(())
        }
        Op::ReadError { nsid, lba } => {
            let lba = resolve(dev, lba).await;
            // A namespace that does not exist is Invalid Namespace; others succeed.
            match ctrl.inject_read_error(nsid, lba) {
                Ok(()) => Ok(()),
                Err(e) if e.status == NvmeStatus::InvalidNamespace => Ok(()),
                Err(e) => Err(format!("inject_read_error({nsid}, {lba}): {e}")),
            }
        }
        Op::ZrwaSession {
            zone,
            nlb,
            flush_to,
        } => {
            let open = Op::Send {
                action: ZoneAction::Open { zrwa: true },
                lba: Lba::Zone(zone, 0),
                all: false,
            };
            Box::pin(run_op(ctrl, dev, &open)).await?;
            let wp = resolve(dev, Lba::Wp(zone, 0)).await;
            let write = Op::Write {
                lba: Lba::Raw(wp),
                len: Len::Blocks(nlb),
                fua: false,
            };
            Box::pin(run_op(ctrl, dev, &write)).await?;
            let flush = Op::Send {
                action: ZoneAction::FlushZrwa,
                lba: Lba::Raw(wp.saturating_add_signed(flush_to)),
                all: false,
            };
            Box::pin(run_op(ctrl, dev, &flush)).await
        }
        Op::Cancelled { lba, len, after_ns } => {
            let slba = resolve(dev, lba).await;
            let len_bytes = len.bytes(lb);
            let d = dev.clone();
            let task = ctrl.handle().spawn(async move {
                let mut buf = vec![0u8; len_bytes];
                fill_stamps(&mut buf, lb as usize, slba);
                d.write(slba, &buf, IoFlags::NONE).await
            });
            ctrl.handle().sleep(after_ns).await;
            if task.is_finished() {
                let r = task.await;
                check_io_outcome("write (not cancelled)", dev, slba, len_bytes, &r)
            } else {
                task.abort();
                Ok(())
            }
        }
        Op::ZoneFault {
            nsid,
            zone,
            offline,
        } => {
            let r = if offline {
                ctrl.inject_zone_offline(nsid, zone)
            } else {
                ctrl.inject_zone_read_only(nsid, zone)
            };
            match r {
                Ok(())
                    if !ctrl
                        .zoned(nsid)
                        .is_some_and(|d| zone < d.config().zone_count) =>
                {
                    Err(format!("zone fault on nsid {nsid} zone {zone} succeeded"))
                }
                Ok(()) => Ok(()),
                Err(e)
                    if !e.injected
                        && matches!(
                            e.status,
                            NvmeStatus::InvalidNamespace
                                | NvmeStatus::InvalidField
                                | NvmeStatus::InvalidZoneStateTransition
                        ) =>
                {
                    Ok(())
                }
                Err(e) => Err(format!("zone fault: unexpected {e:?}")),
            }
        }
    }
}

/// Runs `tasks` concurrently on the runtime and collects their verdicts.
pub(super) fn run_concurrently(
    rt: &mut Runtime,
    ctrl: &Controller,
    dev: &EmulatedZns,
    tasks: &[Vec<Op>],
) -> Result<(), String> {
    let handles: Vec<_> = tasks
        .iter()
        .cloned()
        .map(|ops| {
            let ctrl = ctrl.clone();
            let dev = dev.clone();
            rt.handle().spawn(async move {
                for op in &ops {
                    run_op(&ctrl, &dev, op).await?;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    rt.block_on(async move {
        let mut verdict = Ok(());
        for h in handles {
            let r = h.await;
            if verdict.is_ok() {
                verdict = r;
            }
        }
        verdict
    })
}

/// Report Zones after the dust settled: every zone once, in order, with a
/// write pointer inside the zone, and the open / active / ZRWA limits held.
pub(super) fn check_zones(
    rt: &mut Runtime,
    dev: &EmulatedZns,
) -> Result<Vec<ZoneDescriptor>, String> {
    let cfg = dev.config().clone();
    let zones = rt
        .block_on(dev.report_zones(0, ReportFilter::All, usize::MAX))
        .map_err(|e| format!("report after power-on: {e}"))?;
    if zones.len() != cfg.zone_count as usize {
        return Err(format!("{} zones reported", zones.len()));
    }
    let (mut open, mut active, mut zrwa) = (0u32, 0u32, 0u32);
    for (i, z) in zones.iter().enumerate() {
        let start = i as u64 * cfg.zone_size_lbas;
        let cap_end = start + cfg.zone_capacity_lbas;
        let bad = |why: &str| Err(format!("zone {i}: {why}: {z:?}"));
        if z.start_lba != start || z.capacity_lbas != cfg.zone_capacity_lbas {
            return bad("geometry");
        }
        match z.state {
            ZoneState::Empty if z.write_pointer != start => return bad("empty zone with WP"),
            ZoneState::Full if z.write_pointer != cap_end => return bad("full zone WP"),
            _ if z.wp_valid() && !(start..=cap_end).contains(&z.write_pointer) => {
                return bad("WP outside the zone")
            }
            _ => {}
        }
        if z.attributes.zrwa_valid {
            if !z.state.is_active() {
                return bad("ZRWA on a zone that is not active");
            }
            zrwa += 1;
        }
        open += z.state.is_open() as u32;
        active += z.state.is_active() as u32;
    }
    let lim = |m: u32| if m == 0 { u32::MAX } else { m };
    let zrwa_max = cfg.zrwa.map_or(0, |z| z.resources);
    if open > lim(cfg.max_open_zones) || active > lim(cfg.max_active_zones) || zrwa > zrwa_max {
        return Err(format!("limits: open {open}, active {active}, zrwa {zrwa}"));
    }
    // Filtered reports and reports from inside a zone agree with the full one.
    if cfg.zone_count < 2 {
        return Ok(zones);
    }
    let inside_zone_1 = cfg.zone_size_lbas + (cfg.zone_size_lbas - 1).min(7);
    for f in [
        ReportFilter::Empty,
        ReportFilter::ImplicitlyOpened,
        ReportFilter::ExplicitlyOpened,
        ReportFilter::Closed,
        ReportFilter::Full,
        ReportFilter::ReadOnly,
        ReportFilter::Offline,
    ] {
        let part = rt
            .block_on(dev.report_zones(inside_zone_1, f, usize::MAX))
            .map_err(|e| format!("report {f:?}: {e}"))?;
        let want: Vec<_> = zones[1..]
            .iter()
            .filter(|z| f.matches(z.state))
            .copied()
            .collect();
        if part != want {
            return Err(format!("report {f:?} from zone 1: {part:?}, want {want:?}"));
        }
    }
    Ok(zones)
}

/// After `fail()`, every command fails with an injected Host Pathing Error.
pub(super) fn check_failed(
    rt: &mut Runtime,
    ctrl: &Controller,
    dev: &EmulatedZns,
) -> Result<(), String> {
    ctrl.fail();
    ctrl.power_cut();
    ctrl.power_on();
    let dev = dev.clone();
    let results = rt.block_on(async move {
        let mut buf = vec![0u8; 4096];
        vec![
            dev.write(0, &buf, IoFlags::NONE).await.err(),
            dev.append(0, &buf, IoFlags::FUA).await.err(),
            dev.read(0, &mut buf).await.err(),
            dev.flush().await.err(),
            dev.zone_send(ZoneSendCmd {
                action: ZoneAction::Reset,
                slba: 0,
                select_all: true,
            })
            .await
            .err(),
            dev.report_zones(0, ReportFilter::All, 1).await.err(),
        ]
    });
    for r in results {
        match r {
            Some(e) if e == NvmeError::injected(NvmeStatus::HostPathingError) => {}
            other => return Err(format!("command to a failed device: {other:?}")),
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
pub(super) struct Phase {
    power_on_first: bool,
    /// Each task runs its commands one after another; the tasks run concurrently.
    tasks: Vec<Vec<Op>>,
}

pub(super) fn phases() -> impl Strategy<Value = Vec<Phase>> {
    let phase = (
        prop::bool::weighted(0.8),
        prop::collection::vec(prop::collection::vec(op(), 1..12), 1..5),
    )
        .prop_map(|(power_on_first, tasks)| Phase {
            power_on_first,
            tasks,
        });
    prop::collection::vec(phase, 1..6)
}

pub(super) fn run_zoned_scenario(
    store: StoreKind,
    stack: HostStack,
    seed: u64,
    phases: &[Phase],
    fail_at_end: bool,
) -> Result<(), String> {
    let mut rt = Runtime::new(seed);
    let ctrl = tiny(&rt, store, stack);
    let dev = ctrl.first_zoned().unwrap();
    for phase in phases {
        if phase.power_on_first {
            ctrl.power_on();
        }
        run_concurrently(&mut rt, &ctrl, &dev, &phase.tasks)?;
    }
    ctrl.power_on();
    check_zones(&mut rt, &dev)?;
    if fail_at_end {
        check_failed(&mut rt, &ctrl, &dev)?;
    }
    Ok(())
}

/// 1. Random command sequences, some concurrent, with power cuts, read errors
///    and read-only / offline zones, for every store and host stack.
#[test]
pub(super) fn random_zoned_commands_never_panic_and_keep_zones_consistent() {
    for store in STORES {
        for stack in STACKS {
            check(
                &format!("tiny / {store:?} / {stack:?}"),
                128,
                (any::<u64>(), phases(), prop::bool::weighted(0.3)),
                |(seed, phases, fail_at_end)| {
                    run_zoned_scenario(store, stack, seed, &phases, fail_at_end).map_err(violation)
                },
            );
        }
    }
}
