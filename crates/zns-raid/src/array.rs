//! `RaidArray`: the ZRAID write path, reads, zone management and the ZRWA
//! manager. Recovery, creation and rebuild are in `recovery.rs`.
//!
//! Write path. A logical write is accepted by a `ZoneSet` for the logical
//! namespace (so the logical device has exact ZNS semantics) and split into
//! per-stripe pieces. The data is folded into the zone's running parity (one
//! chunk, for the stripe at the submission write pointer: no ring, no
//! aliasing; ZRAID keeps no copy of the partial stripe, which the media and
//! its PP hold); a piece that completes its stripe carries the full parity
//! (FP); the last
//! piece of a write that ends inside a stripe carries its partial parity (PP):
//! XOR of the stripe's data chunks so far, written by Rule 1 into the PP slot
//! H rows ahead on the member of the next chunk — up to two PPs when a write
//! spans chunks and ends chunk-unaligned. A write that ends inside the last
//! data chunk of a stripe writes its PP in place, at the parity chunk (the
//! FP later completes it): ZRAID writes no PP there, which leaves that data
//! unprotected. Near the zone end the PP slot row would fall past the zone, and
//! the PP is appended to the metadata zone of the stripe's parity member.
//!
//! Every member sub-I/O waits (gating) until (1) its end is inside the member's
//! ZRWA window, so no implicit flush ever happens, and (2) for data and parity
//! at row r, every stripe up to r − H has been completed and its write
//! pointers advanced, so the PP slot being overwritten is dead. A logical
//! write is one runtime task that polls its sub-I/Os in place. A piece
//! completes when all its sub-I/Os have; a per-zone completion bitmap turns
//! piece completions into the completed prefix D. The ZRWA manager (one task
//! per zone, run on demand) advances member write pointers to the targets
//! `Layout::targets(D)`: the Rule-2 pair first, then the stripe sweep.
//!
//! Files. This one holds the public API of `RaidArray` and its `ZonedDevice`
//! impl; the shared state is in `state.rs`, the planner in `plan.rs`, sub-I/O
//! execution, the log appends and the ZRWA manager in `engine.rs`, the
//! counters in `stats.rs`. Recovery, creation and rebuild are in
//! `recovery.rs`, the media readers both use in `media.rs`.

use std::rc::Rc;

use zns_core::{
    CmdFuture, IoFlags, NvmeError, NvmeStatus, ReportFilter, ZoneAction, ZoneDescriptor,
    ZoneSendCmd, ZoneState, ZonedConfig, ZonedDevice,
};

use crate::engine::{
    drain, ensure_ready, finish_members, flush_members, log_wp, md_append, run_pieces,
    wait_frontier,
};
use crate::layout::Layout;
use crate::md::{Record, RecordKind};
use crate::media::partial_stripe_data;
use crate::plan::xor_into;
use crate::state::{is_member_gone, Inner};
use crate::stats::RaidStats;
use crate::{Policy, RaidOptions};
use zns_sim::join::try_join_tasks;

/// A RAID-5 array of zoned devices (ZRAID), itself a `ZonedDevice`.
#[derive(Clone)]
pub struct RaidArray {
    pub(crate) inner: Rc<Inner>,
}

impl RaidArray {
    /// The array's geometry.
    pub fn layout(&self) -> Layout {
        self.inner.layout
    }
    pub fn options(&self) -> RaidOptions {
        self.inner.opts
    }
    pub fn stats(&self) -> RaidStats {
        self.inner.st.borrow().stats
    }
    /// Members that failed (their commands returned Host Pathing Error).
    pub fn failed_members(&self) -> Vec<usize> {
        self.inner.failed_members()
    }
    /// Marks a member failed (as if its commands had started failing).
    pub fn fail_member(&self, index: usize) {
        if index < self.inner.n() {
            self.inner.mark_failed(index as u32);
        }
    }
    /// Member write pointers (zone-relative) as the array last set them.
    pub fn member_write_pointers(&self, zone: u32) -> Vec<u64> {
        self.inner.st.borrow().z[zone as usize].member_wp.clone()
    }
    /// The completed prefix of a logical zone (LBAs from its start).
    pub fn completed_lbas(&self, zone: u32) -> u64 {
        self.inner.st.borrow().z[zone as usize].frontier
    }

    /// Waits until every zone's background work (pieces, WP advancement,
    /// resets) is done.
    pub async fn quiesce(&self) {
        let zones = self.inner.cfg.zone_count;
        for z in 0..zones {
            drain(&self.inner, z).await;
        }
    }

    /// Clean shutdown: waits for background work, flushes the members and
    /// logs every zone's write pointer, so that `open` finds each zone exactly
    /// where it was (except with the stripe policy, which recovers whole
    /// stripes only). The array stays usable.
    pub async fn shutdown(&self) -> Result<(), NvmeError> {
        let inner = &self.inner;
        self.quiesce().await;
        inner.check_alive()?;
        flush_members(inner).await?;
        let zones: Vec<(u32, u64, u64)> = {
            let st = inner.st.borrow();
            st.z.iter()
                .enumerate()
                .filter(|(_, z)| z.ready() && z.frontier > 0)
                .map(|(i, z)| (i as u32, z.gen, z.frontier))
                .collect()
        };
        for (zone, gen, d) in zones {
            if d < inner.layout.logical_cap() {
                log_wp(inner, zone, gen, d).await?;
            }
        }
        Ok(())
    }

    async fn write_impl(
        &self,
        slba: u64,
        data: &[u8],
        fua: bool,
        append: bool,
    ) -> Result<u64, NvmeError> {
        let inner = &self.inner;
        inner.check_alive()?;
        let b = inner.lba_bytes();
        if data.is_empty() || data.len() % b != 0 {
            return Err(NvmeStatus::InvalidField.into());
        }
        let nlb = (data.len() / b) as u64;
        // the submission worker (one FIFO per zone, one for all with RAIZN)
        let (cost, fifo) = {
            let st = inner.st.borrow();
            let o = &inner.opts;
            let zone = st.zones.zone_of(slba);
            let mut cost = o.worker_ns_per_write;
            if let Some(z) = zone {
                if o.worker_copy_ps_per_byte > 0 || o.worker_xor_ps_per_byte > 0 {
                    let off = slba.saturating_sub(inner.logical_zone_start(z));
                    let xor = worker_xor_bytes(o.variant, &inner.layout, off, nlb) * b as u64;
                    let ps = o.worker_copy_ps_per_byte.saturating_mul(data.len() as u64)
                        + o.worker_xor_ps_per_byte.saturating_mul(xor);
                    cost += ps / 1000;
                }
            }
            let fifo = match zone {
                Some(_) if o.variant.single_fifo() => Some(0),
                Some(z) => Some(z as usize),
                None => None,
            };
            (cost, fifo)
        };
        if cost > 0 {
            if let Some(f) = fifo {
                let now = inner.handle.now_ns();
                let at = {
                    let mut st = inner.st.borrow_mut();
                    let free = &mut st.fifo_free_ns[f];
                    *free = (*free).max(now) + cost;
                    *free
                };
                inner.handle.sleep_until(at).await;
                inner.check_alive()?;
            }
        }
        let (zone, gen, off, pieces) = {
            let mut st = inner.st.borrow_mut();
            let eff = if append {
                st.zones.append(slba, nlb)?
            } else {
                st.zones.write(slba, nlb)?
            };
            let zone = eff.zone;
            let off = eff.slba - inner.logical_zone_start(zone);
            st.stats.host_blocks += nlb;
            let pieces = inner.plan(&mut st, zone, off, data);
            let z = &mut st.z[zone as usize];
            z.submit_end = z.submit_end.max(off + nlb);
            z.inflight += pieces.len() as u32;
            (zone, z.gen, off, pieces)
        };
        let ready = self.inner.st.borrow().z[zone as usize].ready();
        if !ready {
            let inner2 = inner.clone();
            drop(inner.handle.spawn(async move {
                let _ = ensure_ready(&inner2, zone, gen).await;
            }));
        }
        // one task per logical write (it keeps running if the caller stops
        // waiting): its sub-I/Os run in place, borrowing its copy of the data
        let task = inner.handle.spawn(run_pieces(
            inner.clone(),
            zone,
            gen,
            pieces,
            if inner.opts.timing_only {
                Vec::new() // the sub-I/Os carry zeros
            } else {
                let mut copy = inner.take_buf();
                copy.extend_from_slice(data);
                copy
            },
            fua,
        ));
        task.await?;
        if fua && inner.opts.policy == Policy::WpLog {
            // boxed: keeps the common write's future small
            Box::pin(async {
                wait_frontier(inner, zone, gen, off + nlb).await?;
                let d = inner.st.borrow().z[zone as usize].frontier;
                log_wp(inner, zone, gen, d).await
            })
            .await?;
        }
        Ok(inner.logical_zone_start(zone) + off)
    }

    async fn read_impl(&self, slba: u64, buf: &mut [u8]) -> Result<(), NvmeError> {
        let inner = &self.inner;
        if let Some(e) = inner.st.borrow().poisoned {
            return Err(e);
        }
        let b = inner.lba_bytes();
        if buf.is_empty() || buf.len() % b != 0 {
            return Err(NvmeStatus::InvalidField.into());
        }
        let nlb = (buf.len() / b) as u64;
        let (zone, written) = {
            let st = inner.st.borrow();
            st.zones.check_read(slba, nlb)?;
            let zone = st.zones.zone_of(slba).ok_or(NvmeStatus::LbaOutOfRange)?;
            let wp = st.zones.write_pointer(zone).unwrap_or(0);
            (zone, wp - inner.logical_zone_start(zone))
        };
        let l = inner.layout;
        let off = slba - inner.logical_zone_start(zone);
        let end = off + nlb;
        buf.fill(0);
        let mut x = off;
        while x < end.min(written) {
            let loc = l.locate(x);
            let len = (l.chunk_lbas - loc.in_chunk).min(end.min(written) - x);
            let dst = &mut buf[((x - off) as usize) * b..((x - off + len) as usize) * b];
            let dev = l.data_dev(zone, loc.stripe, loc.idx);
            let moff = l.member_off(loc.stripe, loc.in_chunk);
            let mut done = false;
            if let Some(m) = inner.member(dev) {
                let r = m.read(inner.mzone_start(zone) + moff, dst).await;
                match r {
                    Ok(()) => done = true,
                    Err(e) if is_member_gone(&e) => inner.mark_failed(dev),
                    Err(e) => return Err(e),
                }
            }
            if !done {
                self.degraded_read(zone, loc.stripe, dev, loc.in_chunk, dst)
                    .await?;
            }
            x += len;
        }
        Ok(())
    }

    /// Rebuilds blocks of failed member `dev` at row `stripe`, in-chunk offset
    /// `o`: for the partial stripe from the stripe buffer, or (ZRAID, no
    /// buffer) from the media and its partial parity; else XOR of the others.
    async fn degraded_read(
        &self,
        zone: u32,
        stripe: u64,
        dev: u32,
        o: u64,
        dst: &mut [u8],
    ) -> Result<(), NvmeError> {
        let inner = &self.inner;
        let l = inner.layout;
        let b = inner.lba_bytes();
        inner.st.borrow_mut().stats.degraded_reads += 1;
        let idx = l.seq_of(zone, stripe, dev) as usize;
        let from = (idx * l.chunk_lbas as usize + o as usize) * b;
        let partial = {
            let st = inner.st.borrow();
            let z = &st.z[zone as usize];
            if z.buf_stripe == stripe && z.filled > 0 {
                if from + dst.len() <= z.buf.len() {
                    dst.copy_from_slice(&z.buf[from..from + dst.len()]);
                    return Ok(());
                }
                // completed blocks of the stripe (later ones race writes)
                let sl = l.stripe_lbas();
                Some(z.frontier.clamp(stripe * sl, (stripe + 1) * sl))
            } else {
                None
            }
        };
        if let Some(d) = partial {
            dst.fill(0);
            if d > stripe * l.stripe_lbas() {
                let data = partial_stripe_data(inner, zone, d).await?;
                if from < data.len() {
                    let n = dst.len().min(data.len() - from);
                    dst[..n].copy_from_slice(&data[from..from + n]);
                }
            }
            return Ok(());
        }
        dst.fill(0);
        let mut tmp = vec![0u8; dst.len()];
        for other in 0..l.n {
            if other == dev {
                continue;
            }
            let m = inner
                .member(other)
                .ok_or(NvmeError::injected(NvmeStatus::HostPathingError))?;
            m.read(inner.mzone_start(zone) + l.member_off(stripe, o), &mut tmp)
                .await?;
            xor_into(dst, &tmp);
        }
        Ok(())
    }

    async fn zone_send_impl(&self, cmd: ZoneSendCmd) -> Result<(), NvmeError> {
        let inner = &self.inner;
        inner.check_alive()?;
        let changes = inner.st.borrow_mut().zones.zone_send(cmd)?.changes;
        let mut tasks = Vec::new();
        for ch in changes {
            let zone = ch.zone;
            match ch.to {
                ZoneState::Empty if ch.from != ZoneState::Empty => {
                    let (gen, held) = {
                        let mut st = inner.st.borrow_mut();
                        let z = &mut st.z[zone as usize];
                        let gen = z.gen + 1;
                        let held = z.holds_members;
                        z.restart(gen);
                        // the member zones stay active until they are reset
                        z.holds_members = held;
                        z.busy = true;
                        (gen, held)
                    };
                    let inner2 = inner.clone();
                    tasks.push(inner.handle.spawn(async move {
                        let r = reset_members(&inner2, zone, gen).await;
                        if held {
                            inner2.release_members(zone, gen);
                        }
                        inner2.st.borrow_mut().z[zone as usize].busy = false;
                        inner2.wake_zone(zone);
                        r
                    }));
                }
                ZoneState::Full if ch.from != ZoneState::Full => {
                    let inner2 = inner.clone();
                    tasks.push(
                        inner
                            .handle
                            .spawn(async move { finish_logical(&inner2, zone).await }),
                    );
                }
                ZoneState::ExplicitlyOpened if ch.from == ZoneState::Empty => {
                    let gen = inner.st.borrow().z[zone as usize].gen;
                    let inner2 = inner.clone();
                    tasks.push(
                        inner
                            .handle
                            .spawn(async move { ensure_ready(&inner2, zone, gen).await }),
                    );
                }
                _ => {}
            }
        }
        let res = try_join_tasks(tasks).await;
        res
    }

    async fn flush_impl(&self) -> Result<(), NvmeError> {
        let inner = &self.inner;
        inner.check_alive()?;
        let snapshot: Vec<(u32, u64, u64)> = {
            let st = inner.st.borrow();
            st.z.iter()
                .enumerate()
                .filter(|(_, z)| z.frontier > 0 && z.ready())
                .map(|(i, z)| (i as u32, z.gen, z.frontier))
                .collect()
        };
        flush_members(inner).await?;
        if inner.opts.policy == Policy::WpLog {
            for (zone, gen, d) in snapshot {
                if d < inner.layout.logical_cap() {
                    log_wp(inner, zone, gen, d).await?;
                }
            }
        }
        Ok(())
    }
}

/// Reset of a logical zone: log it, reset the member zones, log completion.
async fn reset_members(inner: &Rc<Inner>, zone: u32, gen: u64) -> Result<(), NvmeError> {
    drain(inner, zone).await;
    inner.check_alive()?;
    let log = |kind| Record {
        kind,
        array_id: inner.array_id.get(),
        zone,
        gen,
        seq: inner.next_seq(),
        f: [0; 6],
        payload: Vec::new(),
    };
    for dev in 0..inner.layout.n {
        md_append(inner, dev, log(RecordKind::Reset)).await?;
    }
    for dev in 0..inner.layout.n {
        if !inner.member_zone_send(dev, zone, ZoneAction::Reset).await? {
            continue;
        }
    }
    for dev in 0..inner.layout.n {
        md_append(inner, dev, log(RecordKind::ResetDone)).await?;
    }
    Ok(())
}

/// Finish of a logical zone: wait for its writes, log where its data ends,
/// finish the member zones.
async fn finish_logical(inner: &Rc<Inner>, zone: u32) -> Result<(), NvmeError> {
    inner.st.borrow_mut().z[zone as usize].busy = true;
    drain(inner, zone).await;
    let r = async {
        inner.check_alive()?;
        let (gen, d, ready) = {
            let st = inner.st.borrow();
            let z = &st.z[zone as usize];
            (z.gen, z.frontier, z.ready())
        };
        let _ = ready;
        if d < inner.layout.logical_cap() {
            for dev in 0..inner.layout.n {
                let rec = Record {
                    kind: RecordKind::Finish,
                    array_id: inner.array_id.get(),
                    zone,
                    gen,
                    seq: inner.next_seq(),
                    f: [d, 0, 0, 0, 0, 0],
                    payload: Vec::new(),
                };
                md_append(inner, dev, rec).await?;
            }
        }
        finish_members(inner, zone, gen).await?;
        inner.release_members(zone, gen);
        Ok(())
    }
    .await;
    inner.st.borrow_mut().z[zone as usize].busy = false;
    inner.wake_zone(zone);
    r
}

impl ZonedDevice for RaidArray {
    fn config(&self) -> &ZonedConfig {
        &self.inner.cfg
    }

    /// Writes to a logical zone are ordered at submission (the logical write
    /// pointer moves there) and sent to the members in that order.
    fn orders_zone_writes(&self) -> bool {
        true
    }

    fn report_zones(
        &self,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> CmdFuture<'_, Vec<ZoneDescriptor>> {
        Box::pin(async move {
            Ok(self
                .inner
                .st
                .borrow()
                .zones
                .report(start_lba, filter, max_zones)?)
        })
    }

    // every command passes the rebuild gate (`CommandGate`)
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.read_impl(slba, buf).await
        })
    }

    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.write_impl(slba, data, flags.fua, false).await?;
            Ok(())
        })
    }

    fn append<'a>(&'a self, zslba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, u64> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.write_impl(zslba, data, flags.fua, true).await
        })
    }

    fn zone_send(&self, cmd: ZoneSendCmd) -> CmdFuture<'_, ()> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.zone_send_impl(cmd).await
        })
    }

    fn flush(&self) -> CmdFuture<'_, ()> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.flush_impl().await
        })
    }
}

/// Blocks a submission worker XORs for a logical write of `nlb` blocks at
/// zone offset `off` (`RaidOptions::worker_xor_ps_per_byte`): per stripe the
/// write touches, ZRAID and its ablation builds XOR the full parity of a
/// stripe the write completes, otherwise the partial parity of chunks 0..k
/// over the written part of the last chunk k (none inside the stripe's last
/// data chunk); RAIZN and RAIZN+ XOR the whole stripe buffer.
fn worker_xor_bytes(variant: crate::Variant, layout: &Layout, off: u64, nlb: u64) -> u64 {
    let chunk = layout.chunk_lbas.max(1);
    let stripe = layout.stripe_lbas().max(1);
    let raizn = matches!(variant, crate::Variant::Raizn | crate::Variant::RaiznPlus);
    let end = off.saturating_add(nlb);
    let mut o = off;
    let mut total = 0u64;
    while o < end {
        let s_end = (o / stripe + 1) * stripe;
        let piece_end = end.min(s_end);
        let k = ((piece_end - 1) % stripe) / chunk;
        if raizn || piece_end == s_end {
            total += stripe;
        } else if k + 1 == layout.data_chunks() {
            // inside the last data chunk: no partial parity (the full parity
            // of the write that completes the stripe covers it)
        } else {
            let chunk_start = (piece_end - 1) / chunk * chunk;
            total += (k + 1) * (piece_end - o.max(chunk_start));
        }
        o = piece_end;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Variant;

    fn lay() -> Layout {
        // 5 members, 64 KiB chunks of 4 KiB blocks: a stripe of 4 data chunks
        Layout {
            n: 5,
            chunk_lbas: 16,
            rows: 64,
            h: 8,
            zrwa_lbas: 256,
            fg_lbas: 4,
            lba_bytes: 4096,
            member_zone_size: 2048,
            member_zone_cap: 1024,
        }
    }

    #[test]
    fn worker_xor_per_design() {
        let l = lay();
        // 16 KiB writes over one stripe: partial parity of chunks 0..k in the
        // first three chunks, none in the last, the full parity once
        let zraid: u64 = (0..16)
            .map(|i| worker_xor_bytes(Variant::Zraid, &l, i * 4, 4))
            .sum();
        assert_eq!(zraid, 4 * 4 * (1 + 2 + 3) + 64);
        assert_eq!(zraid * 10 / (16 * 4), 25); // 2.5 × the data
                                               // RAIZN(+) XOR the whole stripe for every write
        assert_eq!(worker_xor_bytes(Variant::RaiznPlus, &l, 4, 4), 64);
        assert_eq!(worker_xor_bytes(Variant::Raizn, &l, 60, 8), 128);
    }
}
