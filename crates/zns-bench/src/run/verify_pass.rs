//! verify= in a run: blocks filled before they are written, remembered
//! until overwritten or reset, checked when read, and the do_verify pass
//! that reads them back (the block format is `crate::verify`'s).

use super::*;

impl JobRun {
    /// verify= with do_verify: once the writes are done, read back every
    /// block written (in offset order, `iodepth` at a time, as fio's verify
    /// phase; the reads count as reads) and check it.
    pub(super) async fn verify_pass(self: Rc<Self>) -> Result<(), RunError> {
        let Some(kind) = self.spec.verify else {
            return Ok(());
        };
        let failed = self.st.borrow().verify_error.is_some();
        if !self.spec.do_verify || self.abort.get() || failed {
            return Ok(());
        }
        let queue: Rc<RefCell<std::collections::VecDeque<(u64, u64)>>> = Rc::new(RefCell::new(
            std::mem::take(&mut self.st.borrow_mut().written)
                .into_iter()
                .collect(),
        ));
        let mut handles = Vec::new();
        for _ in 0..self.spec.effective_iodepth().max(1) {
            let me = self.clone();
            let queue = queue.clone();
            handles.push(self.handle.spawn(async move {
                let mut buf = vec![0u8; max_block_bytes(&me.spec) as usize];
                loop {
                    if me.st.borrow().verify_error.is_some() {
                        return Ok(());
                    }
                    let Some((off, bytes)) = queue.borrow_mut().pop_front() else {
                        return Ok(());
                    };
                    let slba = off / me.lba;
                    let submit = me.handle.now_ns();
                    let block = &mut buf[..bytes as usize];
                    let r = me.target.read(slba, block).await;
                    let ok = r.is_ok();
                    me.record(Ddir::Read, bytes, slba, submit, 0, r);
                    if !ok {
                        // (the job's report carries the I/O error)
                        return Ok(());
                    }
                    me.check_verified(block, kind, off);
                }
            }));
        }
        zns_sim::join::try_join_tasks(handles).await
    }

    /// Checks a block read at `off` (bytes); a bad one is counted and the
    /// first kept for the report.
    pub(super) fn check_verified(&self, block: &[u8], kind: crate::verify::VerifyKind, off: u64) {
        if let Err(e) = crate::verify::check_block(block, kind, off) {
            let mut st = self.st.borrow_mut();
            st.verify_failures += 1;
            st.verify_error.get_or_insert(e);
        }
    }

    /// verify=: fills the block about to be written at `off` (bytes; an
    /// append's is unknown until the device assigns it) with the next
    /// payload seed of the job.
    pub(super) fn fill_verified(&self, block: &mut [u8], off: Option<u64>) {
        let Some(kind) = self.spec.verify else {
            return;
        };
        let seed = {
            let mut st = self.st.borrow_mut();
            st.verify_seq += 1;
            st.verify_seq
        };
        let off = off.unwrap_or(crate::verify::OFFSET_ASSIGNED_BY_DEVICE);
        crate::verify::fill_block(block, kind, off, seed);
    }

    /// verify= with do_verify: a block written at `off` (bytes); earlier
    /// blocks it overlaps are gone.
    pub(super) fn remember_written(&self, off: u64, bytes: u64) {
        if self.spec.verify.is_none() || !self.spec.do_verify {
            return;
        }
        let mut st = self.st.borrow_mut();
        forget_range(&mut st.written, off, off + bytes);
        st.written.insert(off, bytes);
    }
}

/// Drops the blocks of `written` (offset → bytes) that overlap `from..to`
/// (bytes).
pub(super) fn forget_range(written: &mut BTreeMap<u64, u64>, from: u64, to: u64) {
    // a block starting before `from` may reach into the range
    let before = written
        .range(..from)
        .next_back()
        .filter(|(&off, &bytes)| off + bytes > from)
        .map(|(&off, _)| off);
    let inside: Vec<u64> = written.range(from..to).map(|(&off, _)| off).collect();
    for off in before.into_iter().chain(inside) {
        written.remove(&off);
    }
}
