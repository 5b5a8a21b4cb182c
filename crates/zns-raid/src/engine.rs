//! Running what the planner produced, and the array's background work:
//! sub-I/O execution and gating (`run_pieces`, `run_subio`, `member_write`),
//! metadata, PP-log and WP-log appends with the log-zone switch (`md_append`,
//! `pp_append`, `log_wp`, `log_switch`), and the ZRWA manager (`ensure_ready`,
//! `kick_manager`/`manage`, `advance`, `finish_members`), with the waits on a
//! zone's progress (`wait_frontier`, `drain`). They call each other (the
//! manager writes WP-log entries through `run_subio`, an append may switch
//! log zones), so they stay together. `array.rs` describes the write path
//! and the gating rules.

use std::rc::Rc;

use zns_core::{IoFlags, NvmeError, NvmeStatus, ZoneAction, ZoneSendCmd};

use crate::join::{join_in_place, SubFuture};
use crate::md::{Record, RecordKind, WpEntry};
use crate::plan::{Gate, Payload, Piece, SubIo};
use crate::state::{aborted, Inner, LogZone, MdMember, State, ZonePhase};
use crate::superblock::{gen_table, superblock};
use crate::Policy;
use zns_sim::join::{poll_all, try_join_tasks};

/// Runs one member sub-I/O of zone `zone`, generation `gen`, after its gate
/// opens; `shared` is the logical write's data (for `SubIo::Data`).
pub(crate) async fn run_subio(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    io: SubIo,
    fua: bool,
    shared: &[u8],
) -> Result<(), NvmeError> {
    // the log appends are rare and their futures large: boxed, so the
    // common sub-I/O's future stays small (it is moved into a box per sub-I/O)
    match io {
        SubIo::Md { dev, rec } => Box::pin(md_append(inner, dev, rec)).await,
        SubIo::PpLog { dev, rec, pp } => Box::pin(pp_append(inner, dev, rec, pp)).await,
        SubIo::Write {
            dev,
            off,
            data: Payload::Bytes(data),
            gate,
        } => {
            let r = member_write(inner, zone, gen, dev, off, &data, gate, fua).await;
            inner.put_buf(data);
            r
        }
        SubIo::Write {
            dev,
            off,
            data: Payload::Zeros(n),
            gate,
        } => {
            let data = inner.zeros.get(..n).ok_or(NvmeStatus::InternalError)?;
            member_write(inner, zone, gen, dev, off, data, gate, fua).await
        }
        SubIo::Data {
            dev,
            off,
            range,
            gate,
        } => {
            let data = if inner.opts.timing_only {
                inner.zeros.get(..range.len())
            } else {
                shared.get(range)
            };
            let data = data.ok_or(NvmeStatus::InternalError)?;
            member_write(inner, zone, gen, dev, off, data, gate, fua).await
        }
    }
}

/// Writes `data` at member offset `off` of member `dev`'s zone once the
/// sub-I/O's gate opens.
#[allow(clippy::too_many_arguments)]
async fn member_write(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    dev: u32,
    off: u64,
    data: &[u8],
    gate: Gate,
    fua: bool,
) -> Result<(), NvmeError> {
    let nlb = (data.len() / inner.lba_bytes()) as u64;
    loop {
        {
            let mut st = inner.st.borrow_mut();
            if let Some(e) = st.poisoned {
                return Err(e);
            }
            let z = &mut st.z[zone as usize];
            if z.gen != gen {
                return Err(aborted());
            }
            if inner.failed.borrow()[dev as usize] {
                return Ok(());
            }
            let wp = z.member_wp[dev as usize];
            let l = inner.layout;
            if z.ready() && !inner.opts.variant.zrwa_zones() {
                // normal zones: strictly in order per member zone
                // (the member's scheduler keeps the order downstream)
                let sub = z.sub_wp[dev as usize];
                if off < sub {
                    return Err(NvmeStatus::ZoneInvalidWrite.into());
                }
                if off == sub {
                    z.sub_wp[dev as usize] = off + nlb;
                    drop(st);
                    inner.wake_zone(zone);
                    break;
                }
            } else if z.ready() {
                let window = off + nlb <= wp + l.zrwa_lbas;
                match gate {
                    Gate::Slot if off < wp => return Ok(()),
                    Gate::Slot if window => break,
                    Gate::Row(r) => {
                        if off < wp {
                            return Err(NvmeStatus::ZoneInvalidWrite.into());
                        }
                        let need = (r + 1).saturating_sub(l.h) * l.stripe_lbas();
                        if window && z.applied >= need {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        inner.zwake[zone as usize].notified().await;
    }
    let Some(m) = inner.member(dev) else {
        return Ok(());
    };
    let slba = inner.mzone_start(zone) + off;
    let r = m.write(slba, data, IoFlags::with_fua(fua)).await;
    inner.member_result(dev, r)
}

/// Appends a record to a member's current metadata zone (switching to the
/// other one when it is full).
pub(crate) async fn md_append(inner: &Rc<Inner>, dev: u32, rec: Record) -> Result<(), NvmeError> {
    let data = rec.encode(inner.lba_bytes());
    let blocks = (data.len() / inner.lba_bytes()) as u64;
    log_append(inner, LogZone::Md, dev, &data).await?;
    inner.st.borrow_mut().stats.md_blocks += blocks;
    Ok(())
}

/// Appends a partial parity record to a member's PP log zone: a metadata
/// header block and the PP (RAIZN, Z, Z+S), or the PP alone (Z+S+M).
pub(crate) async fn pp_append(
    inner: &Rc<Inner>,
    dev: u32,
    mut rec: Record,
    pp: Payload,
) -> Result<(), NvmeError> {
    let b = inner.lba_bytes();
    let header_blocks = u64::from(inner.opts.variant.pp_header());
    let data = match pp {
        // timing only: the record's size in zeros (header included)
        Payload::Zeros(n) => {
            let len = header_blocks as usize * b + n;
            match inner.zeros.get(..len) {
                Some(z) => std::borrow::Cow::Borrowed(z),
                None => std::borrow::Cow::Owned(vec![0; len]),
            }
        }
        Payload::Bytes(v) if header_blocks > 0 => {
            rec.payload = v;
            std::borrow::Cow::Owned(rec.encode(b))
        }
        Payload::Bytes(v) => std::borrow::Cow::Owned(v),
    };
    let hold = inner.opts.pp_mutex_ns;
    if hold > 0 {
        // the member's metadata mutex (`raizn_md_lba`), shared by every zone
        let now = inner.handle.now_ns();
        let at = {
            let mut st = inner.st.borrow_mut();
            let v = &mut st.pp_mutex_free_ns;
            if v.len() <= dev as usize {
                v.resize(dev as usize + 1, 0);
            }
            v[dev as usize] = v[dev as usize].max(now) + hold;
            v[dev as usize]
        };
        inner.handle.sleep_until(at).await;
    }
    log_append(inner, LogZone::Pp, dev, &data).await?;
    let mut st = inner.st.borrow_mut();
    st.stats.pp_log_blocks += (data.len() / b) as u64 - header_blocks;
    st.stats.pp_header_blocks += header_blocks;
    Ok(())
}

fn log_state(st: &mut State, log: LogZone, dev: u32) -> &mut MdMember {
    match log {
        LogZone::Md => &mut st.md[dev as usize],
        LogZone::Pp => &mut st.pplog[dev as usize],
    }
}

/// Appends `data` (FUA) to the current log zone of kind `log` of member
/// `dev`, switching to the other one when it is full.
async fn log_append(
    inner: &Rc<Inner>,
    log: LogZone,
    dev: u32,
    data: &[u8],
) -> Result<(), NvmeError> {
    for _attempt in 0..3 {
        loop {
            if log_state(&mut inner.st.borrow_mut(), log, dev).switching {
                inner.wake.notified().await;
            } else {
                break;
            }
        }
        let Some(m) = inner.member(dev) else {
            return Ok(());
        };
        let cur = log_state(&mut inner.st.borrow_mut(), log, dev).cur;
        let r = m
            .append(inner.log_zone_start(log, cur), data, IoFlags::FUA)
            .await;
        match r {
            Ok(_) => return Ok(()),
            Err(e)
                if matches!(
                    e.status,
                    NvmeStatus::ZoneIsFull | NvmeStatus::ZoneBoundaryError
                ) =>
            {
                log_switch(inner, log, dev, cur).await?;
            }
            Err(e) => return inner.member_result(dev, Err(e)),
        }
    }
    Err(NvmeStatus::InternalError.into())
}

/// The current log zone of `dev` is full (or the next record does not fit):
/// finish it, reset the other one and make it current. A metadata zone
/// starts with a new superblock and the zone generations; a PP log zone
/// (RAIZN's GC) with the partial stripes of the open zones whose parity
/// lives on `dev`, so the PP records in the zone being dropped are no longer
/// needed.
async fn log_switch(inner: &Rc<Inner>, log: LogZone, dev: u32, full: u32) -> Result<(), NvmeError> {
    {
        let mut st = inner.st.borrow_mut();
        let md = log_state(&mut st, log, dev);
        if md.cur != full || md.switching {
            return Ok(()); // someone else switched
        }
        md.switching = true;
    }
    let result = async {
        let Some(m) = inner.member(dev) else {
            return Ok(());
        };
        // an append that does not fit leaves the zone short of full but
        // active: finish it (a no-op when full, as RAIZN's GC does), or it
        // and the new one would hold two of the member's active zones
        let new = 1 - full;
        for (action, which) in [(ZoneAction::Finish, full), (ZoneAction::Reset, new)] {
            let r = m
                .zone_send(ZoneSendCmd {
                    action,
                    slba: inner.log_zone_start(log, which),
                    select_all: false,
                })
                .await;
            inner.member_result(dev, r)?;
        }
        let epoch = log_state(&mut inner.st.borrow_mut(), log, dev).epoch + 1;
        let recs = match log {
            LogZone::Md => vec![superblock(inner, dev, epoch), gen_table(inner)],
            LogZone::Pp => {
                inner.st.borrow_mut().stats.pp_gc_count += 1;
                partial_stripes_on(inner, dev)
            }
        };
        for rec in recs {
            let data = if log == LogZone::Pp && !inner.opts.variant.pp_header() {
                rec.payload
            } else {
                rec.encode(inner.lba_bytes())
            };
            let r = m
                .append(inner.log_zone_start(log, new), &data, IoFlags::FUA)
                .await
                .map(|_| ());
            inner.member_result(dev, r)?;
            let blocks = (data.len() / inner.lba_bytes()) as u64;
            let mut st = inner.st.borrow_mut();
            match log {
                LogZone::Md => st.stats.md_blocks += blocks,
                LogZone::Pp => st.stats.pp_gc_blocks += blocks,
            }
        }
        let mut st = inner.st.borrow_mut();
        let md = log_state(&mut st, log, dev);
        md.cur = new;
        md.epoch = epoch;
        Ok(())
    }
    .await;
    log_state(&mut inner.st.borrow_mut(), log, dev).switching = false;
    inner.wake_all();
    result
}

/// The partial stripe data of every zone whose parity member is `dev`, as
/// records for a PP log zone GC.
fn partial_stripes_on(inner: &Inner, dev: u32) -> Vec<Record> {
    let l = inner.layout;
    let mut st = inner.st.borrow_mut();
    let mut out = Vec::new();
    let mut seq = st.seq;
    for (zone, z) in st.z.iter().enumerate() {
        let zone = zone as u32;
        let s = z.buf_stripe;
        let kept = inner.opts.timing_only || !z.buf.is_empty();
        if !kept || !z.ready() || l.parity_dev(zone, s) != dev {
            continue;
        }
        let filled = z.submit_end.saturating_sub(s * l.stripe_lbas());
        if filled == 0 || filled >= l.stripe_lbas() {
            continue;
        }
        seq += 1;
        let bytes = filled as usize * inner.lba_bytes();
        let payload = if inner.opts.timing_only {
            vec![0; bytes]
        } else {
            z.buf[..bytes.min(z.buf.len())].to_vec()
        };
        out.push(Record {
            kind: RecordKind::Pp,
            array_id: inner.array_id.get(),
            zone,
            gen: z.gen,
            seq,
            // raw data of the partial stripe (f[4] = 1), as RAIZN's GC keeps it
            f: [s, 0, 0, filled, 1, 0],
            payload,
        });
    }
    st.seq = seq;
    out
}

/// Opens every member zone of `zone` with a ZRWA (first write of a generation).
pub(crate) async fn ensure_ready(inner: &Rc<Inner>, zone: u32, gen: u64) -> Result<(), NvmeError> {
    loop {
        // wait for the zone itself, or for a member active zone
        let for_members = {
            let st = inner.st.borrow();
            if let Some(e) = st.poisoned {
                return Err(e);
            }
            let z = &st.z[zone as usize];
            if z.gen != gen {
                return Err(aborted());
            }
            if z.ready() {
                return Ok(());
            }
            if !z.busy && z.phase != ZonePhase::Opening {
                if st.member_active_zones < inner.cfg.max_active_zones {
                    break;
                }
                // every member active zone is taken, by zones still
                // finishing or resetting
                true
            } else {
                false
            }
        };
        if for_members {
            inner.wake.notified().await;
        } else {
            inner.zwake[zone as usize].notified().await;
        }
    }
    {
        let mut st = inner.st.borrow_mut();
        Inner::hold_members(&mut st, zone);
        st.z[zone as usize].phase = ZonePhase::Opening;
    }
    let mut result = Ok(());
    for dev in 0..inner.layout.n {
        let opened = inner
            .member_zone_send(
                dev,
                zone,
                ZoneAction::Open {
                    zrwa: inner.opts.variant.zrwa_zones(),
                },
            )
            .await;
        if let Err(e) = opened {
            result = Err(e);
            break;
        }
    }
    let mut st = inner.st.borrow_mut();
    let z = &mut st.z[zone as usize];
    // ready once opened for its generation; an open that failed or
    // belongs to an older generation leaves it closed, unless another open
    // made it ready meanwhile
    z.phase = if (result.is_ok() && z.gen == gen) || z.ready() {
        ZonePhase::Ready
    } else {
        ZonePhase::Closed
    };
    drop(st);
    inner.wake_zone(zone);
    result
}

/// Starts the ZRWA manager of a zone if it has work and is not running.
pub(crate) fn kick_manager(inner: &Rc<Inner>, zone: u32) {
    let gen = {
        let mut st = inner.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        if z.manager || z.applied >= z.frontier {
            return;
        }
        z.manager = true;
        z.inflight += 1;
        z.gen
    };
    let inner2 = inner.clone();
    drop(inner.handle.spawn(async move {
        let _ = manage(&inner2, zone, gen).await;
        let mut st = inner2.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        if z.gen == gen {
            z.manager = false;
            z.inflight -= 1;
        } else {
            z.old_inflight -= 1;
        }
        drop(st);
        inner2.wake_zone(zone);
    }));
}

/// Advances member `dev`'s write pointer in zone `zone` to `target`
/// (zone-relative) with explicit ZRWA flushes of at most ZRWASZ each.
pub(crate) async fn advance(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    dev: u32,
    target: u64,
) -> Result<(), NvmeError> {
    let l = inner.layout;
    loop {
        let (cur, g) = {
            let st = inner.st.borrow();
            let z = &st.z[zone as usize];
            (z.member_wp[dev as usize], z.gen)
        };
        if g != gen {
            return Err(aborted());
        }
        if cur >= target || cur >= l.member_zone_cap {
            return Ok(());
        }
        let Some(m) = inner.member(dev) else {
            return Ok(());
        };
        let next = target.min(cur + l.zrwa_lbas);
        let r = m
            .zone_send(ZoneSendCmd {
                action: ZoneAction::FlushZrwa,
                slba: inner.mzone_start(zone) + next - 1,
                select_all: false,
            })
            .await;
        inner.member_result(dev, r)?;
        let mut st = inner.st.borrow_mut();
        st.stats.zrwa_flushes += 1;
        let z = &mut st.z[zone as usize];
        if z.gen != gen {
            return Err(aborted());
        }
        let w = &mut z.member_wp[dev as usize];
        *w = (*w).max(next);
    }
}

/// Flushes every surviving member.
pub(crate) async fn flush_members(inner: &Rc<Inner>) -> Result<(), NvmeError> {
    let mut handles = Vec::new();
    for dev in 0..inner.layout.n {
        let Some(m) = inner.member(dev) else { continue };
        let inner2 = inner.clone();
        handles.push(inner.handle.spawn(async move {
            let r = m.flush().await;
            inner2.st.borrow_mut().stats.member_flushes += 1;
            inner2.member_result(dev, r)
        }));
    }
    let res = try_join_tasks(handles).await;
    res
}

async fn advance_all(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    list: Vec<(u32, u64)>,
) -> Result<(), NvmeError> {
    let mut futs = Vec::new();
    for (dev, t) in list {
        if inner.st.borrow().z[zone as usize].member_wp[dev as usize] >= t {
            continue; // nothing to flush (advance would return at once)
        }
        futs.push(Box::pin(advance(inner, zone, gen, dev, t)) as SubFuture<'_>);
    }
    join_in_place(futs).await
}

/// The ZRWA manager of one zone: advances member write pointers until they
/// encode the completed prefix.
async fn manage(inner: &Rc<Inner>, zone: u32, gen: u64) -> Result<(), NvmeError> {
    let l = inner.layout;
    loop {
        let d = {
            let st = inner.st.borrow();
            if st.poisoned.is_some() {
                return Ok(());
            }
            let z = &st.z[zone as usize];
            if z.gen != gen || z.applied >= z.frontier {
                return Ok(());
            }
            z.frontier
        };
        if inner.opts.flush_before_advance {
            flush_members(inner).await?;
        }
        if inner.opts.variant.zrwa_zones() {
            // first chunk of the zone: no previous member to carry step 2
            let first = {
                let mut st = inner.st.borrow_mut();
                let z = &mut st.z[zone as usize];
                if z.gen != gen {
                    return Err(aborted());
                }
                let first = inner.opts.policy != Policy::Stripe
                    && !z.first_chunk_logged
                    && d / l.chunk_lbas == 1;
                z.first_chunk_logged |= first;
                first
            };
            if first {
                log_wp(inner, zone, gen, d).await?;
            }
            let (t, pair) = l.targets(zone, d, inner.opts.policy);
            let pair_list: Vec<(u32, u64)> = pair.iter().map(|&dv| (dv, t[dv as usize])).collect();
            advance_all(inner, zone, gen, pair_list).await?;
            let rest: Vec<(u32, u64)> = (0..l.n)
                .filter(|dv| !pair.contains(dv))
                .map(|dv| (dv, t[dv as usize]))
                .collect();
            advance_all(inner, zone, gen, rest).await?;
        } else {
            // normal zones: the member write pointers moved with the writes
            let (t, _) = l.targets(zone, d, Policy::Chunk);
            let mut st = inner.st.borrow_mut();
            let z = &mut st.z[zone as usize];
            for (w, t) in z.member_wp.iter_mut().zip(t) {
                *w = (*w).max(t);
            }
        }
        if d >= l.logical_cap() {
            if l.rows * l.chunk_lbas < l.member_zone_cap {
                finish_members(inner, zone, gen).await?;
            }
            // the member zones are full
            inner.release_members(zone, gen);
        }
        let mut st = inner.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        if z.gen != gen {
            return Ok(());
        }
        z.applied = z.applied.max(d);
        drop(st);
        inner.wake_zone(zone);
    }
}

pub(crate) async fn finish_members(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
) -> Result<(), NvmeError> {
    for dev in 0..inner.layout.n {
        if inner.st.borrow().z[zone as usize].gen != gen {
            return Err(aborted());
        }
        if !inner
            .member_zone_send(dev, zone, ZoneAction::Finish)
            .await?
        {
            continue;
        }
        let cap = inner.layout.member_zone_cap;
        let mut st = inner.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        if z.gen != gen {
            return Err(aborted());
        }
        z.member_wp[dev as usize] = cap;
    }
    Ok(())
}

/// Progress (logical LBAs) the applied member write pointers of a zone claim.
fn claimed(inner: &Inner, st: &State, zone: u32) -> u64 {
    let z = &st.z[zone as usize];
    let failed = inner.failed.borrow();
    let mut k = 0;
    for dev in 0..inner.layout.n {
        if !failed[dev as usize] {
            k = k.max(inner.layout.claim(zone, dev, z.member_wp[dev as usize]));
        }
    }
    k * inner.layout.chunk_lbas
}

/// Writes WP-log entries "complete up to `end`" (two copies) unless the
/// member write pointers already say so.
pub(crate) async fn log_wp(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    end: u64,
) -> Result<(), NvmeError> {
    let l = inner.layout;
    if !inner.opts.variant.zrwa_zones() {
        // normal zones: a write is durable where the members put it
        return Ok(());
    }
    let (entry, idx) = {
        let mut st = inner.st.borrow_mut();
        if claimed(inner, &st, zone) >= end || st.z[zone as usize].logged_end >= end {
            return Ok(());
        }
        st.seq += 1;
        let seq = st.seq;
        let z = &mut st.z[zone as usize];
        if z.gen != gen {
            return Err(aborted());
        }
        z.wplog_idx += 1;
        (
            WpEntry {
                array_id: inner.array_id.get(),
                zone,
                gen,
                seq,
                end,
            },
            z.wplog_idx,
        )
    };
    let s = (end - 1) / l.stripe_lbas();
    let mut handles = Vec::new();
    for dev in l.wplog_devs(zone, s) {
        let io = match l.slot_row(s) {
            Some(row) => SubIo::Write {
                dev,
                off: l.member_off(row, idx % l.wplog_slots()),
                data: Payload::Bytes(entry.encode(inner.lba_bytes())),
                gate: Gate::Slot,
            },
            None => SubIo::Md {
                dev,
                rec: Record {
                    kind: RecordKind::WpLog,
                    array_id: entry.array_id,
                    zone,
                    gen,
                    seq: entry.seq,
                    f: [end, 0, 0, 0, 0, 0],
                    payload: Vec::new(),
                },
            },
        };
        inner.st.borrow_mut().stats.wplog_blocks += 1;
        handles.push(Box::pin(run_subio(inner, zone, gen, io, true, &[])) as SubFuture<'_>);
    }
    join_in_place(handles).await?;
    let mut st = inner.st.borrow_mut();
    let z = &mut st.z[zone as usize];
    // the zone may have been reset while the entries were written: they
    // belong to the old generation and say nothing about the new one
    if z.gen != gen {
        return Err(aborted());
    }
    z.logged_end = z.logged_end.max(end);
    Ok(())
}

/// Waits until zone `zone` has completed everything below `end`.
pub(crate) async fn wait_frontier(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    end: u64,
) -> Result<(), NvmeError> {
    loop {
        {
            let st = inner.st.borrow();
            if let Some(e) = st.poisoned {
                return Err(e);
            }
            let z = &st.z[zone as usize];
            if z.gen != gen {
                return Err(aborted());
            }
            if z.frontier >= end {
                return Ok(());
            }
        }
        inner.pwake[zone as usize].notified().await;
    }
}

/// Waits until no piece, WP-log write or manager of the zone's current
/// generation (or older ones) is running.
pub(crate) async fn drain(inner: &Rc<Inner>, zone: u32) {
    loop {
        {
            let st = inner.st.borrow();
            let z = &st.z[zone as usize];
            if (z.inflight == 0 && z.old_inflight == 0) || st.poisoned.is_some() {
                return;
            }
        }
        inner.pwake[zone as usize].notified().await;
    }
}

/// Runs the pieces of one logical write: every sub-I/O of every piece in
/// flight at once (each waits for its own gate), a piece completed (its blocks
/// marked in the zone's bitmap, the ZRWA manager kicked) when its last sub-I/O
/// is. The result is the last error, if any.
pub(crate) async fn run_pieces(
    inner: Rc<Inner>,
    zone: u32,
    gen: u64,
    pieces: Vec<Piece>,
    data: Vec<u8>,
    fua: bool,
) -> Result<(), NvmeError> {
    // per piece: sub-I/Os left, result so far, its span (one allocation)
    let mut left: Vec<PieceLeft> = Vec::with_capacity(pieces.len());
    let mut futs: Vec<(usize, SubFuture<'_>)> =
        Vec::with_capacity(pieces.iter().map(|p| p.ios.len()).sum());
    for (i, p) in pieces.into_iter().enumerate() {
        left.push(PieceLeft {
            ios: p.ios.len(),
            res: Ok(()),
            span: (p.start, p.end),
        });
        for io in p.ios {
            futs.push((i, Box::pin(run_subio(&inner, zone, gen, io, fua, &data))));
        }
    }
    let finish_piece = |span: (u64, u64), res: Result<(), NvmeError>| {
        {
            let mut st = inner.st.borrow_mut();
            let z = &mut st.z[zone as usize];
            if z.gen == gen {
                if res.is_ok() {
                    z.mark(span.0, span.1);
                }
                z.inflight -= 1;
            } else {
                z.old_inflight -= 1;
            }
        }
        inner.wake_progress(zone);
        if res.is_ok() {
            kick_manager(&inner, zone);
        }
        res
    };
    // per write (ZRAID's completion handler): every piece is completed once
    // the last sub-I/O of the write is
    let per_write = inner.opts.progress_per_write;
    let mut res = Ok(());
    for l in &left {
        if l.ios == 0 && !per_write {
            if let Err(e) = finish_piece(l.span, Ok(())) {
                res = Err(e);
            }
        }
    }
    poll_all(futs, |&i, r| {
        let l = &mut left[i];
        if let Err(e) = r {
            l.res = Err(e);
        }
        l.ios -= 1;
        if l.ios == 0 && !per_write {
            if let Err(e) = finish_piece(l.span, l.res) {
                res = Err(e);
            }
        }
    })
    .await;
    if per_write {
        for l in &left {
            if let Err(e) = finish_piece(l.span, l.res) {
                res = Err(e);
            }
        }
    }
    inner.put_buf(data);
    res
}

/// A piece of a logical write in flight: its sub-I/Os not done yet, the
/// last error of those done, its zone span.
struct PieceLeft {
    ios: usize,
    res: Result<(), NvmeError>,
    span: (u64, u64),
}
