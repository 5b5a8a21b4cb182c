//! The I/O commands' paths through the controller: zoned writes and
//! appends (dispatch to the zone state machine, the store and the timing
//! model), reads, zone management, flush, conventional writes and
//! deallocates, and zone reports.

use zns_core::{
    IoFlags, MgmtEffect, NvmeError, NvmeStatus, ReportFilter, ZoneDescriptor, ZoneSendCmd,
    ZoneState,
};
use zns_sim::timing::{HostStack, MediaOp};

use super::faults::PendingWrite;
use super::{
    check_conv_range, finish_commit, media_op_for, store_status, submit_gc, Controller, NsState,
    State,
};
use crate::profile::ConventionalConfig;
use crate::store::StoreKind;

impl Controller {
    /// The accounting every accepted write ends with: its bytes in the
    /// statistics and its entry in the pending-write log a power cut reads
    /// (the caller counts it as a write or an append).
    #[allow(clippy::too_many_arguments)]
    fn account_write(
        &self,
        st: &mut State,
        ns: u32,
        slba: u64,
        bytes: u64,
        nlb: u64,
        complete_ns: u64,
        fua: bool,
        now_ns: u64,
    ) {
        st.stats.bytes_written += bytes;
        let w = PendingWrite {
            ns,
            slba,
            nlb,
            complete_ns,
            fua,
        };
        st.power_log.log(
            &st.namespaces,
            w,
            now_ns,
            self.inner.profile.power_loss.completed_unflushed,
        );
    }

    /// Accepts a write (or a merged group of writes) to a zoned namespace:
    /// state machine, data store, timing, power-loss log. Returns the
    /// completion instant.
    pub(super) fn dispatch_zoned_write(
        &self,
        ns: u32,
        slba: u64,
        nlb: u64,
        data: Option<&[u8]>,
        fua: bool,
    ) -> Result<u64, NvmeError> {
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let mut guard = self.inner.state.borrow_mut();
        let st = &mut *guard;
        let NsState::Zoned { zones, store } = &mut st.namespaces[ns as usize] else {
            return Err(NvmeStatus::InvalidNamespace.into());
        };
        let effect = zones.write(slba, nlb)?;
        let lba_bytes = zones.config().lba_bytes as u64;
        let zone_start = zones.zone_start_lba(effect.zone);
        if let Some(data) = data {
            store.write(slba, data).map_err(store_status)?;
        }
        let mut done_ns = st.flash.submit(
            now_ns,
            stack,
            &MediaOp::Write {
                ns,
                zone: effect.zone,
                zone_offset_bytes: (slba - zone_start) * lba_bytes,
                bytes: nlb * lba_bytes,
                implicit_open: effect.implicitly_opened,
                zrwa: effect.zrwa,
                fua,
            },
        );
        if let Some(closed) = effect.auto_closed {
            done_ns = done_ns.max(st.flash.submit(
                now_ns,
                stack,
                &MediaOp::Close { ns, zone: closed },
            ));
        }
        if let Some((from, to)) = effect.committed {
            st.flash.submit(
                now_ns,
                stack,
                &MediaOp::ZrwaCommit {
                    ns,
                    zone: effect.zone,
                    zone_offset_bytes: (from - zone_start) * lba_bytes,
                    bytes: (to - from) * lba_bytes,
                },
            );
        }
        st.stats.writes += 1;
        self.account_write(st, ns, slba, nlb * lba_bytes, nlb, done_ns, fua, now_ns);
        Ok(done_ns)
    }

    pub(super) async fn zoned_write(
        &self,
        ns: u32,
        slba: u64,
        data: &[u8],
        flags: IoFlags,
    ) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let cfg = self.zoned_config(ns);
        let nlb = Self::lba_count(data.len(), cfg.lba_bytes)?;
        if nlb > cfg.max_transfer_lbas as u64 {
            // Checked first on every stack, as the controller would.
            return Err(NvmeStatus::InvalidField.into());
        }
        if self.inner.host_stack.get() == HostStack::IoUringMqDeadline {
            // mq-deadline: one write per zone in flight; queued contiguous writes
            // are merged into one device command when the zone lock frees up.
            let zone = match slba.checked_div(cfg.zone_size_lbas) {
                Some(z) if slba < cfg.total_lbas() => z as u32,
                _ => return Err(NvmeStatus::LbaOutOfRange.into()),
            };
            let max_merge_lbas = cfg.max_transfer_lbas as u64;
            let ticket = self
                .inner
                .locks
                .acquire(ns, zone, slba, nlb, flags.fua, max_merge_lbas)
                .await;
            let outcome = match ticket.role() {
                crate::mqdeadline::Role::Leader { total_nlb, fua } => {
                    // The device may have lost power while this write waited.
                    let r = match self.admit() {
                        Ok(now_epoch) if now_epoch == epoch => {
                            // the host completes the request's bios one by
                            // one before it frees the request and unlocks
                            // the zone (`host_mq_deadline_bio_complete_ns`)
                            let per_bio =
                                self.inner.profile.timing.host_mq_deadline_bio_complete_ns;
                            let bios = ticket.bios();
                            self.dispatch_zoned_write(ns, slba, total_nlb, None, fua)
                                .map(|d| d.saturating_add(per_bio.saturating_mul(bios)))
                        }
                        Ok(_) => Err(NvmeError::injected(NvmeStatus::AbortedPowerLoss)),
                        Err(e) => Err(e),
                    };
                    ticket.publish(r);
                    r
                }
                crate::mqdeadline::Role::Follower(r) => r,
            };
            let result = match outcome {
                Ok(done_ns) => {
                    let stored = {
                        let mut st = self.inner.state.borrow_mut();
                        st.namespaces[ns as usize]
                            .store()
                            .write(slba, data)
                            .map_err(store_status)
                    };
                    let r = match stored.and_then(|()| self.sync_image_for_fua(flags.fua)) {
                        Ok(()) => self.complete_at(epoch, done_ns).await,
                        Err(e) => Err(e),
                    };
                    drop(ticket);
                    r
                }
                Err(e) => Err(e),
            };
            return result;
        }
        let done_ns = self.dispatch_zoned_write(ns, slba, nlb, Some(data), flags.fua)?;
        self.sync_image_for_fua(flags.fua)?;
        self.complete_at(epoch, done_ns).await
    }

    pub(super) async fn zoned_append(
        &self,
        ns: u32,
        zslba: u64,
        data: &[u8],
        flags: IoFlags,
    ) -> Result<u64, NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let done_ns;
        let lba;
        {
            let mut guard = self.inner.state.borrow_mut();
            let st = &mut *guard;
            let NsState::Zoned { zones, store } = &mut st.namespaces[ns as usize] else {
                return Err(NvmeStatus::InvalidNamespace.into());
            };
            let lba_bytes = zones.config().lba_bytes;
            let nlb = Self::lba_count(data.len(), lba_bytes)?;
            let effect = zones.append(zslba, nlb)?;
            lba = effect.slba;
            store.write(lba, data).map_err(store_status)?;
            let zone_start = zones.zone_start_lba(effect.zone);
            let mut t = st.flash.submit(
                now_ns,
                stack,
                &MediaOp::Append {
                    ns,
                    zone: effect.zone,
                    zone_offset_bytes: (lba - zone_start) * lba_bytes as u64,
                    bytes: nlb * lba_bytes as u64,
                    implicit_open: effect.implicitly_opened,
                    fua: flags.fua,
                },
            );
            if let Some(closed) = effect.auto_closed {
                t = t.max(
                    st.flash
                        .submit(now_ns, stack, &MediaOp::Close { ns, zone: closed }),
                );
            }
            done_ns = t;
            st.stats.appends += 1;
            let bytes = nlb * lba_bytes as u64;
            self.account_write(st, ns, lba, bytes, nlb, done_ns, flags.fua, now_ns);
        }
        self.sync_image_for_fua(flags.fua)?;
        self.complete_at(epoch, done_ns).await?;
        Ok(lba)
    }

    pub(super) async fn read_ns(
        &self,
        ns: u32,
        slba: u64,
        buf: &mut [u8],
    ) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let done_ns;
        {
            let mut guard = self.inner.state.borrow_mut();
            let st = &mut *guard;
            let state = &mut st.namespaces[ns as usize];
            let lba_bytes = state.lba_bytes();
            let nlb = Self::lba_count(buf.len(), lba_bytes)?;
            match state {
                NsState::Zoned { zones, .. } => {
                    if nlb > zones.config().max_transfer_lbas as u64 {
                        return Err(NvmeStatus::InvalidField.into());
                    }
                    zones.check_read(slba, nlb)?
                }
                NsState::Conventional { config, .. } => check_conv_range(config, slba, nlb)?,
            }
            if st
                .read_errors
                .range((ns, slba)..(ns, slba + nlb))
                .next()
                .is_some()
            {
                return Err(NvmeError::injected(NvmeStatus::UnrecoveredReadError));
            }
            let store = st.namespaces[ns as usize].store();
            // The range was checked above; a store-less read only zeroes.
            if self.inner.zero_fill_reads.get() || store.kind() != StoreKind::None {
                store.read(slba, buf).map_err(store_status)?;
            }
            let off = slba * lba_bytes as u64;
            let bytes = buf.len() as u64;
            done_ns = match &mut st.namespaces[ns as usize] {
                NsState::Conventional { ftl: Some(ftl), .. } => {
                    ftl.places(off, bytes, &mut st.ftl_places);
                    let t = st
                        .flash
                        .submit_ftl_read(now_ns, stack, ns, off, bytes, &st.ftl_places);
                    ftl.note_done(t);
                    t
                }
                _ => st.flash.submit(
                    now_ns,
                    stack,
                    &MediaOp::Read {
                        ns,
                        lba_offset_bytes: off,
                        bytes,
                    },
                ),
            };
            st.stats.reads += 1;
            st.stats.bytes_read += buf.len() as u64;
        }
        self.complete_at(epoch, done_ns).await
    }

    pub(super) async fn zone_send_ns(&self, ns: u32, cmd: ZoneSendCmd) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let done_ns;
        {
            let mut guard = self.inner.state.borrow_mut();
            let st = &mut *guard;
            let NsState::Zoned { zones, store } = &mut st.namespaces[ns as usize] else {
                return Err(NvmeStatus::InvalidNamespace.into());
            };
            let cfg = zones.config().clone();
            let effect: MgmtEffect = zones.zone_send(cmd)?;
            let mut t = now_ns;
            if effect.changes.is_empty() {
                // A valid command that changed nothing still costs a round trip.
                let zone = zones.zone_of(cmd.slba).unwrap_or(0);
                t = t.max(
                    st.flash
                        .submit(now_ns, stack, &MediaOp::ZoneMgmtNoop { ns, zone }),
                );
            }
            for change in &effect.changes {
                let zone_start = zones.zone_start_lba(change.zone);
                if cmd.action == zns_core::ZoneAction::Finish {
                    if let Some(commit) = finish_commit(ns, change, &cfg, zone_start) {
                        st.flash.submit(now_ns, stack, &commit);
                    }
                }
                let op = media_op_for(ns, cmd, change, &cfg, zone_start);
                t = t.max(st.flash.submit(now_ns, stack, &op));
                if cmd.action == zns_core::ZoneAction::Reset && change.to == ZoneState::Empty {
                    let start = zones.zone_start_lba(change.zone);
                    let _ = store.deallocate(start, cfg.zone_size_lbas);
                    st.power_log.forget_zone(ns, start, cfg.zone_size_lbas);
                }
            }
            done_ns = t;
            st.stats.zone_mgmt += 1;
        }
        self.persist_metadata()
            .map_err(|_| NvmeError::from(NvmeStatus::InternalError))?;
        self.complete_at(epoch, done_ns).await
    }

    pub(super) async fn flush_all(&self, ns: u32) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let submit_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let done_ns = {
            let mut st = self.inner.state.borrow_mut();
            st.stats.flushes += 1;
            st.flash.submit(submit_ns, stack, &MediaOp::Flush { ns })
        };
        {
            let mut st = self.inner.state.borrow_mut();
            if let Some(image) = st.image.as_mut() {
                image.sync().map_err(store_status)?;
            }
        }
        self.persist_metadata()
            .map_err(|_| NvmeError::from(NvmeStatus::InternalError))?;
        self.complete_at(epoch, done_ns).await?;
        // Everything completed before the flush was submitted is now durable.
        let mut st = self.inner.state.borrow_mut();
        st.power_log.flushed(submit_ns);
        Ok(())
    }

    pub(super) async fn conv_write(
        &self,
        ns: u32,
        config: &ConventionalConfig,
        slba: u64,
        data: &[u8],
        flags: IoFlags,
    ) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let nlb = Self::lba_count(data.len(), config.lba_bytes)?;
        check_conv_range(config, slba, nlb)?;
        let done_ns = {
            let mut guard = self.inner.state.borrow_mut();
            let st = &mut *guard;
            let off = slba * config.lba_bytes as u64;
            let bytes = data.len() as u64;
            let NsState::Conventional { store, ftl, .. } = &mut st.namespaces[ns as usize] else {
                return Err(NvmeStatus::InvalidNamespace.into());
            };
            store.write(slba, data).map_err(store_status)?;
            let t = match ftl.as_mut() {
                None => st.flash.submit(
                    now_ns,
                    stack,
                    &MediaOp::ConvWrite {
                        ns,
                        lba_offset_bytes: off,
                        bytes,
                        fua: flags.fua,
                    },
                ),
                Some(ftl) => {
                    let fx = &mut st.ftl_fx;
                    fx.clear();
                    fx.load.program_ns = st.flash.profile().program_ns;
                    fx.load.unit_read_ns = st.flash.unit_read_ns();
                    fx.load.erase_ns = st.flash.profile().erase_ns;
                    let slc = ftl.config().slc_cache.as_ref();
                    fx.load.slc_program_ns = slc.map_or(0, |c| c.program_ns);
                    fx.load.slc_read_ns = slc.map_or(0, |c| c.read_ns);
                    let slc_read_ns = fx.load.slc_read_ns;
                    // Background GC in the idle time before this write.
                    if let Some(t0) = ftl.idle_gc(now_ns, &fx.load, &mut fx.gc) {
                        submit_gc(&mut st.flash, t0, stack, ns, &fx.gc, slc_read_ns);
                        fx.clear();
                    }
                    // The frontier steers units to the least busy dies.
                    let n = st.flash.dies();
                    fx.load.until_ns.clear();
                    fx.load
                        .until_ns
                        .extend((0..n).map(|d| st.flash.die_program_until(d).max(now_ns)));
                    ftl.write(off, bytes, fx)
                        .map_err(|_| NvmeError::from(NvmeStatus::InternalError))?;
                    // GC the write triggered runs first on its dies.
                    submit_gc(&mut st.flash, now_ns, stack, ns, &fx.gc, slc_read_ns);
                    let t = st
                        .flash
                        .submit_ftl_write(now_ns, stack, ns, off, bytes, flags.fua, &fx.units);
                    ftl.note_done(t);
                    t
                }
            };
            st.stats.writes += 1;
            let bytes = data.len() as u64;
            self.account_write(st, ns, slba, bytes, nlb, t, flags.fua, now_ns);
            t
        };
        self.sync_image_for_fua(flags.fua)?;
        self.complete_at(epoch, done_ns).await
    }

    pub(super) async fn conv_discard(
        &self,
        ns: u32,
        config: &ConventionalConfig,
        slba: u64,
        nlb: u64,
    ) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        if nlb == 0 {
            return Err(NvmeStatus::InvalidField.into());
        }
        // Deallocate is not limited by MDTS: only the range matters.
        if slba
            .checked_add(nlb)
            .map_or(true, |end| end > config.capacity_lbas)
        {
            return Err(NvmeStatus::LbaOutOfRange.into());
        }
        let done_ns = {
            let mut st = self.inner.state.borrow_mut();
            let lba = u64::from(config.lba_bytes);
            if let NsState::Conventional { store, ftl, .. } = &mut st.namespaces[ns as usize] {
                store.deallocate(slba, nlb).map_err(store_status)?;
                if let Some(ftl) = ftl.as_mut() {
                    ftl.trim(slba * lba, nlb * lba);
                }
            }
            // A deallocate costs a metadata update, like a flush of the mapping.
            st.flash.submit(now_ns, stack, &MediaOp::Flush { ns })
        };
        self.complete_at(epoch, done_ns).await
    }

    pub(super) fn report(
        &self,
        ns: u32,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> Result<Vec<ZoneDescriptor>, NvmeError> {
        self.admit()?;
        let st = self.inner.state.borrow();
        let NsState::Zoned { zones, .. } = &st.namespaces[ns as usize] else {
            return Err(NvmeStatus::InvalidNamespace.into());
        };
        Ok(zones.report(start_lba, filter, max_zones)?)
    }
}
