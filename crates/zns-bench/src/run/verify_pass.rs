//! verify= in a run: blocks filled before they are written, remembered
//! until overwritten or reset, checked when read, and the do_verify pass
//! that reads them back (the block format is `crate::verify`'s).

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use zns_sim::join::try_join_tasks;

use super::validate::max_block_bytes;
use super::{JobRun, RunError};
use crate::job::Ddir;
use crate::verify::{check_block, fill_block, VerifyError, VerifyKind, OFFSET_ASSIGNED_BY_DEVICE};

/// verify= state of a job: the blocks it wrote (to read back), the payload
/// seeds it handed out, and the blocks that failed their check.
#[derive(Debug, Default)]
pub(super) struct VerifyState {
    /// The blocks written so far, by byte offset: their bytes (a block
    /// says what it holds; the do_verify pass reads them back).
    written: BTreeMap<u64, u64>,
    /// Seeds handed out (each block's payload seed follows).
    seq: u64,
    /// Blocks that failed their check, and the first failure.
    failures: u64,
    error: Option<VerifyError>,
}

impl VerifyState {
    /// A block failed its check.
    fn fail(&mut self, e: VerifyError) {
        self.failures += 1;
        self.error.get_or_insert(e);
    }

    /// Some block failed its check.
    pub(super) fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// The failed blocks' count and the first failure, if any (taken).
    pub(super) fn take_failure(&mut self) -> Option<(u64, VerifyError)> {
        self.error.take().map(|first| (self.failures, first))
    }

    /// The payload seed of the next block written.
    fn next_seed(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The blocks that overlap `from..to` (bytes) are gone.
    pub(super) fn forget(&mut self, from: u64, to: u64) {
        forget_range(&mut self.written, from, to);
    }

    /// A block of `bytes` was written at `off` (bytes); earlier blocks it
    /// overlaps are gone.
    fn remember(&mut self, off: u64, bytes: u64) {
        forget_range(&mut self.written, off, off + bytes);
        self.written.insert(off, bytes);
    }
}

impl JobRun {
    /// verify= with do_verify: once the writes are done, read back every
    /// block written (in offset order, `iodepth` at a time, as fio's verify
    /// phase; the reads count as reads) and check it.
    pub(super) async fn verify_pass(self: Rc<Self>) -> Result<(), RunError> {
        let Some(kind) = self.spec.verify else {
            return Ok(());
        };
        let failed = self.st.borrow().verify.failed();
        if !self.spec.do_verify || self.abort.get() || failed {
            return Ok(());
        }
        let queue: Rc<RefCell<VecDeque<(u64, u64)>>> = Rc::new(RefCell::new(
            std::mem::take(&mut self.st.borrow_mut().verify.written)
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
                    if me.st.borrow().verify.failed() {
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
        try_join_tasks(handles).await
    }

    /// Checks a block read at `off` (bytes); a bad one is counted and the
    /// first kept for the report.
    pub(super) fn check_verified(&self, block: &[u8], kind: VerifyKind, off: u64) {
        if let Err(e) = check_block(block, kind, off) {
            self.st.borrow_mut().verify.fail(e);
        }
    }

    /// verify=: fills the block about to be written at `off` (bytes; an
    /// append's is unknown until the device assigns it) with the next
    /// payload seed of the job.
    pub(super) fn fill_verified(&self, block: &mut [u8], off: Option<u64>) {
        let Some(kind) = self.spec.verify else {
            return;
        };
        let seed = self.st.borrow_mut().verify.next_seed();
        let off = off.unwrap_or(OFFSET_ASSIGNED_BY_DEVICE);
        fill_block(block, kind, off, seed);
    }

    /// verify= with do_verify: a block written at `off` (bytes); earlier
    /// blocks it overlaps are gone.
    pub(super) fn remember_written(&self, off: u64, bytes: u64) {
        if self.spec.verify.is_none() || !self.spec.do_verify {
            return;
        }
        self.st.borrow_mut().verify.remember(off, bytes);
    }
}

/// Drops the blocks of `written` (offset → bytes) that overlap `from..to`
/// (bytes).
fn forget_range(written: &mut BTreeMap<u64, u64>, from: u64, to: u64) {
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
