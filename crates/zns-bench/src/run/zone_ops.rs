//! Timed zone-management jobs (`zone_op=`): one command per zone of the
//! job's range, filled to `zone_fill` first, and their statistics.

use std::rc::Rc;

use zns_core::{ReportFilter, ZoneAction, ZoneDescriptor, ZoneSendCmd, ZoneState};

use super::{op_key, send, JobRun, OpZone, RunError};
use crate::job::ZoneOp;

impl JobRun {
    pub(super) async fn zone_op_worker(self: Rc<Self>) -> Result<(), RunError> {
        let op = self.spec.zone_op.expect("zone_op job");
        let fill = self.spec.options.contains_key("zone_fill");
        // the zone will be open while it is filled, or opened / closed
        let needs_slot = fill || matches!(op, ZoneOp::Open | ZoneOp::Close);
        loop {
            let zi = match self.next_op_zone() {
                OpZone::Done => return Ok(()),
                OpZone::Zone(zi) => zi,
                OpZone::Busy => {
                    // another worker still has this zone (a wrapped range
                    // smaller than iodepth): wait for it
                    self.wait_change().await;
                    continue;
                }
            };
            let zslba = self.st.borrow().zbd.zone(zi).start_lba;
            if needs_slot {
                self.acquire_slot().await;
                if self.abort.get() {
                    self.release_slot();
                    return Ok(());
                }
            }
            let r = self.one_zone_op(op, zslba, fill).await;
            self.st.borrow().zbd.zone_mut(zi).busy = false;
            if needs_slot {
                self.release_slot();
            }
            self.shared.changed.notify_waiters();
            r?;
        }
    }

    /// The next zone a zone_op worker takes.
    pub(super) fn next_op_zone(&self) -> OpZone {
        let mut st = self.st.borrow_mut();
        let limit_ios = self.spec.number_ios;
        if self.abort.get()
            || st.error.is_some()
            || self.handle.now_ns() >= self.deadline.get()
            || (limit_ios > 0 && st.issued.ios >= limit_ios)
        {
            return OpZone::Done;
        }
        if st.zbd.zone_op_next >= st.zbd.len() {
            if !self.spec.time_based || st.zbd.len() == 0 {
                return OpZone::Done;
            }
            st.zbd.zone_op_next = 0;
        }
        let zi = st.zbd.zone_op_next;
        if st.zbd.zone(zi).busy {
            return OpZone::Busy;
        }
        st.zbd.zone_mut(zi).busy = true;
        st.zbd.zone_op_next += 1;
        st.issued.ios += 1;
        OpZone::Zone(zi)
    }

    /// Optionally open and fill the zone at `zslba`, idle `thinktime`, time
    /// `op` on it, then leave the zone holding no open/active resource.
    pub(super) async fn one_zone_op(
        &self,
        op: ZoneOp,
        zslba: u64,
        fill: bool,
    ) -> Result<(), RunError> {
        if fill {
            // as the characterisation benchmarks do: open the zone
            // explicitly, write it to the occupancy, then time the command
            let mut zone = self.report_one(zslba).await?;
            if zone.state == ZoneState::Empty {
                self.timed_mgmt(send(ZoneAction::Open { zrwa: false }, zslba), "open")
                    .await?;
                zone = self.report_one(zslba).await?;
            }
            let cap = zone.capacity_lbas * self.lba;
            let want = self.spec.zone_fill.resolve(cap, self.lba) / self.lba;
            if zone.wp_valid() && zone.written_lbas() < want {
                self.fill_zone(zslba, zone.write_pointer, want).await?;
            }
        }
        let think = self.spec.thinktime.as_nanos() as u64;
        if think > 0 {
            self.handle.sleep(think).await;
        }
        let action = match op {
            ZoneOp::Reset => ZoneAction::Reset,
            ZoneOp::Finish => ZoneAction::Finish,
            ZoneOp::Open => ZoneAction::Open { zrwa: false },
            ZoneOp::Close => ZoneAction::Close,
        };
        self.timed_mgmt(send(action, zslba), op_key(op)).await?;
        if matches!(op, ZoneOp::Open | ZoneOp::Close) {
            // an opened or closed zone stays active: reset it
            self.timed_mgmt(send(ZoneAction::Reset, zslba), "reset")
                .await?;
        }
        Ok(())
    }

    pub(super) async fn report_one(&self, zslba: u64) -> Result<ZoneDescriptor, RunError> {
        let dev = self.target.zoned().expect("zoned target");
        dev.report_zones(zslba, ReportFilter::All, 1)
            .await
            .map_err(|e| self.io_err(e))?
            .into_iter()
            .next()
            .ok_or_else(|| RunError::Setup {
                job: self.spec.name.clone(),
                msg: format!("no zone at LBA {zslba}"),
            })
    }

    /// A zone-management command timed and recorded under `key`.
    pub(super) async fn timed_mgmt(
        &self,
        cmd: ZoneSendCmd,
        key: &'static str,
    ) -> Result<(), RunError> {
        let dev = self.target.zoned().expect("zoned target");
        let submit = self.handle.now_ns();
        let r = dev.zone_send(cmd).await;
        match r {
            Ok(()) => {
                self.record_op(key, submit);
                Ok(())
            }
            Err(e) => {
                self.st.borrow_mut().error.get_or_insert(e);
                Err(self.io_err(e))
            }
        }
    }

    pub(super) fn record_op(&self, key: &'static str, submit: u64) {
        let now = self.handle.now_ns();
        if submit < self.measure_from.get() {
            return;
        }
        let since = now - self.measure_from.get();
        let mut st = self.st.borrow_mut();
        st.last_done_ns = st.last_done_ns.max(now);
        st.ops.entry(key).or_default().add(0, now - submit, since);
    }
}
