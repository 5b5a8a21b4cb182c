//! `AggregatedZns`: k consecutive zones of a zoned device presented as one
//! zone, interleaved in units of the device's ZRWA size — what the ZRAID
//! paper does on the PM1731a (§6.5: "we aggregated four small zones",
//! aggregation chunk = the 64 KiB ZRWA) so that a 64 KiB chunk and its
//! partial parity fit in a ZRWA.
//!
//! Unit u of an aggregated zone (u = offset / Z, Z = the member ZRWA size)
//! lives in sub-zone u mod k, at row u / k. A contiguous window of k × Z
//! blocks from any aggregated write pointer is exactly the union of the
//! sub-zones' ZRWA windows, so the aggregated zone has a ZRWA of k × Z with
//! the device's flush granularity; an explicit flush commits each sub-zone
//! up to its share. Appends (used by the RAID array's metadata and PP log
//! zones) become writes at a write pointer the wrapper keeps; every
//! sub-command is issued in address order at submission, so sub-zones
//! without a ZRWA see their writes in order.

use std::cell::RefCell;
use std::rc::Rc;

use zns_core::{
    CmdFuture, IoFlags, NvmeError, NvmeStatus, ReportFilter, ZoneAction, ZoneDescriptor,
    ZoneSendCmd, ZoneState, ZonedConfig, ZonedDevice, ZrwaConfig,
};
use zns_sim::{Handle, JoinHandle};

use crate::RaidError;
use zns_sim::join::try_join_tasks;

/// k zones of `inner` as one (see the module header).
pub struct AggregatedZns {
    handle: Handle,
    inner: Rc<dyn ZonedDevice>,
    k: u64,
    /// Interleave unit Z (the inner ZRWA size), LBAs.
    unit: u64,
    cfg: ZonedConfig,
    /// Per aggregated zone: the write pointer appends continue from, and
    /// each sub-zone's committed ZRWA end (sub-zone relative).
    zones: RefCell<Vec<(u64, Vec<u64>)>>,
}

impl AggregatedZns {
    /// Aggregates `k` ≥ 2 zones of `inner`, which must have a ZRWA whose size
    /// divides the zone capacity.
    pub fn new(handle: &Handle, inner: Rc<dyn ZonedDevice>, k: u32) -> Result<Self, RaidError> {
        let c = inner.config().clone();
        let zrwa = c.zrwa.ok_or_else(|| {
            RaidError::Aggregation(
                "zone aggregation interleaves by the ZRWA size: the device has no ZRWA".into(),
            )
        })?;
        let k64 = k as u64;
        if k < 2 || c.zone_count < k {
            return Err(RaidError::Aggregation(format!(
                "aggregate={k}: need 2 ≤ k ≤ zone count ({})",
                c.zone_count
            )));
        }
        let unit = zrwa.size_lbas;
        if c.zone_capacity_lbas % unit != 0 || c.zone_size_lbas % unit != 0 {
            return Err(RaidError::Aggregation(format!(
                "aggregate={k}: zone capacity {} LBAs is not a multiple of the ZRWA ({unit} LBAs)",
                c.zone_capacity_lbas
            )));
        }
        let lim = |x: u32| if x == 0 { 0 } else { (x / k).max(1) };
        let cfg = ZonedConfig {
            lba_bytes: c.lba_bytes,
            zone_count: c.zone_count / k,
            zone_size_lbas: c.zone_size_lbas * k64,
            zone_capacity_lbas: c.zone_capacity_lbas * k64,
            max_open_zones: lim(c.max_open_zones),
            max_active_zones: lim(c.max_active_zones),
            max_transfer_lbas: c.max_transfer_lbas,
            zone_append_limit_lbas: c.append_limit_lbas(),
            auto_close_implicit: c.auto_close_implicit,
            read_across_zone_boundary: false,
            zrwa: Some(ZrwaConfig {
                size_lbas: unit * k64,
                flush_granularity_lbas: zrwa.flush_granularity_lbas,
                resources: (zrwa.resources / k).max(1),
            }),
        };
        cfg.validate()
            .map_err(|e| RaidError::Aggregation(format!("aggregate={k}: {e}")))?;
        let zones = (0..cfg.zone_count)
            .map(|_| (0, vec![0; k as usize]))
            .collect();
        Ok(AggregatedZns {
            handle: handle.clone(),
            inner,
            k: k64,
            unit,
            cfg,
            zones: RefCell::new(zones),
        })
    }

    fn zone_of(&self, lba: u64) -> Result<(u32, u64), NvmeError> {
        let z = lba / self.cfg.zone_size_lbas;
        if z >= self.cfg.zone_count as u64 {
            return Err(NvmeStatus::LbaOutOfRange.into());
        }
        Ok((z as u32, lba % self.cfg.zone_size_lbas))
    }

    /// Inner LBA of aggregated zone `z`, offset `off`.
    fn inner_lba(&self, z: u32, off: u64) -> u64 {
        let u = off / self.unit;
        let sub = u % self.k;
        let row = u / self.k;
        (z as u64 * self.k + sub) * self.inner.config().zone_size_lbas
            + row * self.unit
            + off % self.unit
    }

    /// Splits [off, off + nlb) of zone `z` into (inner LBA, first block, blocks).
    fn pieces(&self, z: u32, off: u64, nlb: u64) -> Vec<(u64, u64, u64)> {
        let mut out = Vec::new();
        let mut x = off;
        while x < off + nlb {
            let n = (self.unit - x % self.unit).min(off + nlb - x);
            out.push((self.inner_lba(z, x), x - off, n));
            x += n;
        }
        out
    }

    /// Issues the sub-writes of a write now (in address order) and waits for them.
    async fn write_at(
        &self,
        z: u32,
        off: u64,
        data: &[u8],
        flags: IoFlags,
    ) -> Result<(), NvmeError> {
        let b = self.cfg.lba_bytes as usize;
        let tasks: Vec<JoinHandle<Result<(), NvmeError>>> = self
            .pieces(z, off, (data.len() / b) as u64)
            .into_iter()
            .map(|(lba, first, n)| {
                let d = data[first as usize * b..(first + n) as usize * b].to_vec();
                let inner = self.inner.clone();
                self.handle
                    .spawn(async move { inner.write(lba, &d, flags).await })
            })
            .collect();
        try_join_tasks(tasks).await
    }

    fn check_io(&self, slba: u64, bytes: usize) -> Result<(u32, u64, u64), NvmeError> {
        let b = self.cfg.lba_bytes as usize;
        if bytes == 0 || bytes % b != 0 {
            return Err(NvmeStatus::InvalidField.into());
        }
        let nlb = (bytes / b) as u64;
        if nlb > self.cfg.max_transfer_lbas as u64 {
            return Err(NvmeStatus::InvalidField.into());
        }
        let (z, off) = self.zone_of(slba)?;
        if off + nlb > self.cfg.zone_size_lbas {
            return Err(NvmeStatus::ZoneBoundaryError.into());
        }
        Ok((z, off, nlb))
    }

    async fn zone_action(&self, z: u32, action: ZoneAction) -> Result<(), NvmeError> {
        let isz = self.inner.config().zone_size_lbas;
        for sub in 0..self.k {
            let slba = (z as u64 * self.k + sub) * isz;
            self.inner
                .zone_send(ZoneSendCmd {
                    action,
                    slba,
                    select_all: false,
                })
                .await?;
        }
        let mut zs = self.zones.borrow_mut();
        let e = &mut zs[z as usize];
        match action {
            ZoneAction::Reset => *e = (0, vec![0; self.k as usize]),
            ZoneAction::Finish => {
                *e = (
                    self.cfg.zone_capacity_lbas,
                    vec![self.inner.config().zone_capacity_lbas; self.k as usize],
                )
            }
            _ => {}
        }
        Ok(())
    }

    /// Explicit ZRWA flush of zone `z` up to offset `end` (exclusive).
    async fn flush_zrwa(&self, z: u32, end: u64) -> Result<(), NvmeError> {
        let isz = self.inner.config().zone_size_lbas;
        let span = self.unit * self.k;
        let (rows, rem) = (end / span, end % span);
        for sub in 0..self.k {
            let extra = rem.saturating_sub(sub * self.unit).min(self.unit);
            let target = rows * self.unit + extra;
            let done = self.zones.borrow()[z as usize].1[sub as usize];
            if target <= done {
                continue;
            }
            let start = (z as u64 * self.k + sub) * isz;
            self.inner
                .zone_send(ZoneSendCmd {
                    action: ZoneAction::FlushZrwa,
                    slba: start + target - 1,
                    select_all: false,
                })
                .await?;
            let mut zs = self.zones.borrow_mut();
            let d = &mut zs[z as usize].1[sub as usize];
            *d = (*d).max(target);
        }
        Ok(())
    }
}

impl ZonedDevice for AggregatedZns {
    fn config(&self) -> &ZonedConfig {
        &self.cfg
    }

    fn report_zones(
        &self,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> CmdFuture<'_, Vec<ZoneDescriptor>> {
        Box::pin(async move {
            let (first, _) = self.zone_of(start_lba)?;
            let isz = self.inner.config().zone_size_lbas;
            let k = self.k as usize;
            let n = (self.cfg.zone_count - first) as usize;
            let subs = self
                .inner
                .report_zones(first as u64 * self.k * isz, ReportFilter::All, n * k)
                .await?;
            let mut out = Vec::new();
            for (i, group) in subs.chunks(k).enumerate() {
                let z = first + i as u32;
                let start = z as u64 * self.cfg.zone_size_lbas;
                // the aggregated WP: the first offset some sub-zone has not reached
                let wp = group
                    .iter()
                    .enumerate()
                    .map(|(sub, d)| {
                        let w = d.write_pointer.saturating_sub(d.start_lba);
                        if d.state == ZoneState::Full {
                            return self.cfg.zone_capacity_lbas;
                        }
                        (w / self.unit) * self.unit * self.k
                            + sub as u64 * self.unit
                            + w % self.unit
                    })
                    .min()
                    .unwrap_or(0);
                let state = if group.iter().all(|d| d.state == ZoneState::Empty) {
                    ZoneState::Empty
                } else if group.iter().all(|d| d.state == ZoneState::Full) {
                    ZoneState::Full
                } else {
                    group
                        .iter()
                        .map(|d| d.state)
                        .find(|s| *s != ZoneState::Empty && *s != ZoneState::Full)
                        .unwrap_or(ZoneState::Closed)
                };
                let d = ZoneDescriptor {
                    zone_type: group[0].zone_type,
                    state,
                    attributes: group[0].attributes,
                    start_lba: start,
                    capacity_lbas: self.cfg.zone_capacity_lbas,
                    write_pointer: start + wp.min(self.cfg.zone_capacity_lbas),
                };
                if filter.matches(d.state) {
                    out.push(d);
                }
                if out.len() >= max_zones {
                    break;
                }
            }
            Ok(out)
        })
    }

    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        Box::pin(async move {
            let (z, off, nlb) = self.check_io(slba, buf.len())?;
            let b = self.cfg.lba_bytes as usize;
            for (lba, first, n) in self.pieces(z, off, nlb) {
                self.inner
                    .read(lba, &mut buf[first as usize * b..(first + n) as usize * b])
                    .await?;
            }
            Ok(())
        })
    }

    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        Box::pin(async move {
            let (z, off, nlb) = self.check_io(slba, data.len())?;
            {
                let mut zs = self.zones.borrow_mut();
                let e = &mut zs[z as usize].0;
                *e = (*e).max(off + nlb);
            }
            self.write_at(z, off, data, flags).await
        })
    }

    fn append<'a>(&'a self, zslba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, u64> {
        Box::pin(async move {
            let (z, off, nlb) = self.check_io(zslba, data.len())?;
            if off != 0 {
                return Err(NvmeStatus::InvalidField.into());
            }
            if nlb > self.cfg.append_limit_lbas() as u64 {
                return Err(NvmeStatus::ZoneBoundaryError.into());
            }
            let at = {
                let mut zs = self.zones.borrow_mut();
                let e = &mut zs[z as usize].0;
                if *e + nlb > self.cfg.zone_capacity_lbas {
                    return Err(if *e >= self.cfg.zone_capacity_lbas {
                        NvmeStatus::ZoneIsFull.into()
                    } else {
                        NvmeStatus::ZoneBoundaryError.into()
                    });
                }
                let at = *e;
                *e += nlb;
                at
            };
            self.write_at(z, at, data, flags).await?;
            Ok(zslba + at)
        })
    }

    fn zone_send(&self, cmd: ZoneSendCmd) -> CmdFuture<'_, ()> {
        Box::pin(async move {
            if cmd.select_all {
                self.inner.zone_send(cmd).await?;
                if matches!(cmd.action, ZoneAction::Reset) {
                    for e in self.zones.borrow_mut().iter_mut() {
                        *e = (0, vec![0; self.k as usize]);
                    }
                }
                return Ok(());
            }
            let (z, off) = self.zone_of(cmd.slba)?;
            match cmd.action {
                ZoneAction::FlushZrwa => self.flush_zrwa(z, off + 1).await,
                a => {
                    if off != 0 {
                        return Err(NvmeStatus::InvalidField.into());
                    }
                    self.zone_action(z, a).await
                }
            }
        })
    }

    fn flush(&self) -> CmdFuture<'_, ()> {
        self.inner.flush()
    }
}
