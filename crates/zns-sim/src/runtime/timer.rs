//! Timers: a binary min-heap of `(deadline_ns, seq)` entries over a slab of
//! armed timers, plus the [`Sleep`] and [`YieldNow`] futures.
//!
//! Invariants:
//! - `seq` grows with every registration, so timers with equal deadlines
//!   fire in registration order and the heap order is total.
//! - A heap entry is live only while its slab slot has the same generation
//!   and still holds a waker. Cancelling (dropping a `Sleep`) frees the slot
//!   and leaves the heap entry behind; stale entries are discarded when they
//!   reach the top, and the heap is compacted when they outnumber live ones.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::{Core, WakeTarget};

#[derive(Clone, Copy)]
struct TimerEntry {
    deadline_ns: u64,
    seq: u64,
    index: u32,
    gen: u32,
}

// Ordered by (deadline, registration sequence) only: `seq` is unique, so the
// order is total and ties on the deadline fire in registration order.
impl TimerEntry {
    /// `(deadline_ns, seq)` as one integer: a single wide comparison.
    #[inline]
    fn key(&self) -> u128 {
        (u128::from(self.deadline_ns) << 64) | u128::from(self.seq)
    }
}

impl Ord for TimerEntry {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for TimerEntry {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for TimerEntry {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for TimerEntry {}

/// Names one armed timer in the slab.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TimerKey {
    index: u32,
    gen: u32,
}

struct TimerSlot {
    gen: u32,
    /// `Some` while armed.
    target: Option<WakeTarget>,
}

/// Stale heap entries tolerated before a compaction, beyond the live count.
const COMPACT_SLACK: usize = 1024;

#[derive(Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<TimerEntry>>,
    slots: Vec<TimerSlot>,
    free: Vec<u32>,
    next_seq: u64,
    armed: usize,
}

impl Timers {
    pub(crate) fn insert(&mut self, deadline_ns: u64, target: WakeTarget) -> TimerKey {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                let index = u32::try_from(self.slots.len()).expect("more than 2^32 armed timers");
                self.slots.push(TimerSlot {
                    gen: 0,
                    target: None,
                });
                index
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.target = Some(target);
        let key = TimerKey {
            index,
            gen: slot.gen,
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.armed += 1;
        if self.heap.len() > 2 * self.armed + COMPACT_SLACK {
            self.compact();
        }
        self.heap.push(Reverse(TimerEntry {
            deadline_ns,
            seq,
            index,
            gen: key.gen,
        }));
        key
    }

    fn slot_mut(&mut self, key: TimerKey) -> Option<&mut TimerSlot> {
        match self.slots.get_mut(key.index as usize) {
            Some(slot) if slot.gen == key.gen && slot.target.is_some() => Some(slot),
            _ => None,
        }
    }

    /// Points an armed timer at the task behind `waker` when it currently
    /// targets another one.
    pub(crate) fn update_target(&mut self, key: TimerKey, core: &Core, waker: &Waker) {
        if let Some(slot) = self.slot_mut(key) {
            if !slot.target.as_ref().is_some_and(|t| t.matches(core, waker)) {
                slot.target = Some(core.wake_target(waker));
            }
        }
    }

    /// Disarms a timer; returns its target (to drop outside any borrow).
    pub(crate) fn cancel(&mut self, key: TimerKey) -> Option<WakeTarget> {
        let slot = self.slot_mut(key)?;
        let target = slot.target.take();
        self.release(key.index);
        target
    }

    fn release(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        slot.gen = slot.gen.wrapping_add(1);
        self.free.push(index);
        self.armed -= 1;
    }

    fn is_live(&self, entry: &TimerEntry) -> bool {
        let slot = &self.slots[entry.index as usize];
        slot.gen == entry.gen && slot.target.is_some()
    }

    /// The earliest armed deadline, discarding stale entries on the way.
    pub(crate) fn next_deadline_ns(&mut self) -> Option<u64> {
        while let Some(Reverse(top)) = self.heap.peek() {
            if self.is_live(top) {
                return Some(top.deadline_ns);
            }
            self.heap.pop();
        }
        None
    }

    /// Disarms every timer due at `now_ns` and appends their targets to
    /// `out` in firing order.
    pub(crate) fn pop_due(&mut self, now_ns: u64, out: &mut Vec<WakeTarget>) {
        while let Some(Reverse(top)) = self.heap.peek() {
            if top.deadline_ns > now_ns {
                break;
            }
            let entry = *top;
            self.heap.pop();
            if self.is_live(&entry) {
                if let Some(target) = self.slots[entry.index as usize].target.take() {
                    out.push(target);
                }
                self.release(entry.index);
            }
        }
    }

    fn compact(&mut self) {
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        entries.retain(|Reverse(entry)| self.is_live(entry));
        self.heap = BinaryHeap::from(entries);
    }

    /// Disarms everything and returns the targets (runtime shutdown).
    pub(crate) fn clear(&mut self) -> Vec<WakeTarget> {
        let mut targets = Vec::new();
        for index in 0..self.slots.len() {
            if let Some(target) = self.slots[index].target.take() {
                targets.push(target);
                self.release(index as u32);
            }
        }
        self.heap.clear();
        targets
    }
}

/// Future returned by `Handle::sleep` and `Handle::sleep_until`: completes
/// once the virtual clock reaches its deadline. Dropping it cancels the
/// timer.
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    core: Rc<Core>,
    deadline_ns: u64,
    timer: Option<TimerKey>,
}

impl Sleep {
    pub(crate) fn new(core: Rc<Core>, deadline_ns: u64) -> Sleep {
        Sleep {
            core,
            deadline_ns,
            timer: None,
        }
    }

    /// The instant this sleep completes at.
    pub fn deadline_ns(&self) -> u64 {
        self.deadline_ns
    }

    /// Whether the deadline has been reached.
    pub fn is_elapsed(&self) -> bool {
        self.core.now_ns.get() >= self.deadline_ns
    }

    fn disarm(&mut self) {
        if let Some(key) = self.timer.take() {
            let target = match self.core.timers.try_borrow_mut() {
                Ok(mut timers) => timers.cancel(key),
                Err(_) => None,
            };
            drop(target);
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.core.now_ns.get() >= this.deadline_ns {
            this.disarm();
            return Poll::Ready(());
        }
        let core = &*this.core;
        match this.timer {
            None => {
                let target = core.wake_target(cx.waker());
                this.timer = Some(core.timers.borrow_mut().insert(this.deadline_ns, target));
            }
            Some(key) => core
                .timers
                .borrow_mut()
                .update_target(key, core, cx.waker()),
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.disarm();
    }
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline_ns", &self.deadline_ns)
            .finish()
    }
}

/// Future returned by `Handle::yield_now`: pending once (re-queuing the task
/// behind every task already ready), then complete.
#[derive(Debug, Default)]
#[must_use = "futures do nothing unless awaited"]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
