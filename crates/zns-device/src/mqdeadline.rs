//! The Linux mq-deadline scheduler's zoned-write path, as the host stack in
//! front of an emulated zoned namespace: at most one write per zone is in
//! flight (the zone write lock); writes that arrive while the zone is locked
//! wait, sorted by LBA; when the lock frees, the lowest waiting write is
//! dispatched together with the waiting writes that continue it contiguously
//! (merged into one device command, up to the namespace's transfer limit). Every
//! write of a merged group completes when the merged command completes.
//!
//! This is what lets fio keep 32 writes outstanding to one zone and reach
//! ~293 KIOPS at 4 KiB on the ZN540 (zn540-characterization.txt Obs. 7): the
//! device sees about QD/2 × bs per command.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use zns_core::NvmeError;

/// Outcome of a dispatched (possibly merged) write: its completion instant, or the status.
pub(crate) type DispatchResult = Result<u64, NvmeError>;

enum SlotState {
    Waiting,
    /// Dispatch `total_nlb` blocks from this waiter's LBA; `followers` ride along.
    Leader {
        total_nlb: u64,
        fua: bool,
        followers: Vec<Waiter>,
    },
    /// Merged into a leader's command, which ended like this.
    Follower(DispatchResult),
}

struct Slot {
    state: RefCell<SlotState>,
    waker: RefCell<Option<Waker>>,
}

impl Slot {
    fn new(state: SlotState) -> Rc<Slot> {
        Rc::new(Slot {
            state: RefCell::new(state),
            waker: RefCell::new(None),
        })
    }
    fn set(&self, state: SlotState) {
        *self.state.borrow_mut() = state;
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

struct Waiter {
    slba: u64,
    nlb: u64,
    fua: bool,
    slot: Rc<Slot>,
}

#[derive(Default)]
struct ZoneQueue {
    locked: bool,
    /// Sorted by LBA (ties keep arrival order).
    waiting: Vec<Waiter>,
    max_merge_lbas: u64,
}

/// Zone write locks of all zoned namespaces of a controller.
#[derive(Default)]
pub(crate) struct ZoneWriteLocks {
    zones: RefCell<BTreeMap<(u32, u32), ZoneQueue>>,
}

/// What a write does once it holds (or rode along with) the zone lock.
pub(crate) enum Role {
    Leader { total_nlb: u64, fua: bool },
    Follower(DispatchResult),
}

/// A write's place in the zone queue. Dropping it (also when the command's
/// future is cancelled) gives the zone lock to the next waiting group, and
/// fails the writes merged into it if the leader never dispatched.
pub(crate) struct Ticket<'a> {
    locks: &'a ZoneWriteLocks,
    key: (u32, u32),
    slot: Rc<Slot>,
}

impl Ticket<'_> {
    pub(crate) fn role(&self) -> Role {
        match &*self.slot.state.borrow() {
            SlotState::Leader { total_nlb, fua, .. } => Role::Leader {
                total_nlb: *total_nlb,
                fua: *fua,
            },
            SlotState::Follower(r) => Role::Follower(*r),
            SlotState::Waiting => unreachable!("a ticket is handed out only once granted"),
        }
    }

    /// The writes of the group this ticket leads (itself and the merged
    /// ones); 1 for a write that rode along.
    pub(crate) fn bios(&self) -> u64 {
        match &*self.slot.state.borrow() {
            SlotState::Leader { followers, .. } => 1 + followers.len() as u64,
            _ => 1,
        }
    }

    /// The leader tells the merged writes how the command went.
    pub(crate) fn publish(&self, result: DispatchResult) {
        let followers = match &mut *self.slot.state.borrow_mut() {
            SlotState::Leader { followers, .. } => std::mem::take(followers),
            _ => Vec::new(),
        };
        for f in followers {
            f.slot.set(SlotState::Follower(result));
        }
    }
}

impl Drop for Ticket<'_> {
    /// The write has completed (or was cancelled): a leader unlocks the zone
    /// and grants it to the next waiting group.
    fn drop(&mut self) {
        if !matches!(&*self.slot.state.borrow(), SlotState::Leader { .. }) {
            return;
        }
        // Followers still attached never reached the device (the leader was
        // cancelled before dispatching): they go back to the queue.
        let orphans = match &mut *self.slot.state.borrow_mut() {
            SlotState::Leader { followers, .. } => std::mem::take(followers),
            _ => Vec::new(),
        };
        let mut zones = self.locks.zones.borrow_mut();
        let Some(q) = zones.get_mut(&self.key) else {
            return;
        };
        for w in orphans {
            let at = q.waiting.partition_point(|x| x.slba <= w.slba);
            q.waiting.insert(at, w);
        }
        if q.waiting.is_empty() {
            zones.remove(&self.key);
            return;
        }
        let first = q.waiting.remove(0);
        let mut end = first.slba + first.nlb;
        let mut total_nlb = first.nlb;
        let mut fua = first.fua;
        let mut followers = Vec::new();
        while let Some(next) = q.waiting.first() {
            if next.slba != end || total_nlb + next.nlb > q.max_merge_lbas {
                break;
            }
            let next = q.waiting.remove(0);
            end += next.nlb;
            total_nlb += next.nlb;
            fua |= next.fua;
            followers.push(next);
        }
        drop(zones);
        first.slot.set(SlotState::Leader {
            total_nlb,
            fua,
            followers,
        });
    }
}

impl ZoneWriteLocks {
    /// Power loss: every write waiting for a zone lock ends with `result`
    /// (the host's queue is flushed with an error; nothing reaches the device).
    pub(crate) fn abort_waiting(&self, result: DispatchResult) {
        let waiting: Vec<Waiter> = self
            .zones
            .borrow_mut()
            .values_mut()
            .flat_map(|q| std::mem::take(&mut q.waiting))
            .collect();
        for w in waiting {
            w.slot.set(SlotState::Follower(result));
        }
    }

    /// Queues a write for its zone; resolves when the write leads a dispatch or
    /// was merged into one.
    pub(crate) fn acquire(
        &self,
        ns: u32,
        zone: u32,
        slba: u64,
        nlb: u64,
        fua: bool,
        max_merge_lbas: u64,
    ) -> impl Future<Output = Ticket<'_>> + '_ {
        let key = (ns, zone);
        let mut zones = self.zones.borrow_mut();
        let q = zones.entry(key).or_default();
        q.max_merge_lbas = max_merge_lbas.max(1);
        let slot = if !q.locked {
            q.locked = true;
            Slot::new(SlotState::Leader {
                total_nlb: nlb,
                fua,
                followers: Vec::new(),
            })
        } else {
            let slot = Slot::new(SlotState::Waiting);
            let at = q.waiting.partition_point(|w| w.slba <= slba);
            q.waiting.insert(
                at,
                Waiter {
                    slba,
                    nlb,
                    fua,
                    slot: slot.clone(),
                },
            );
            slot
        };
        WaitGrant {
            ticket: Some(Ticket {
                locks: self,
                key,
                slot,
            }),
        }
    }
}

struct WaitGrant<'a> {
    ticket: Option<Ticket<'a>>,
}

impl<'a> Future for WaitGrant<'a> {
    type Output = Ticket<'a>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Ticket<'a>> {
        let waiting = {
            let t = self.ticket.as_ref().expect("polled after completion");
            let waiting = matches!(&*t.slot.state.borrow(), SlotState::Waiting);
            if waiting {
                *t.slot.waker.borrow_mut() = Some(cx.waker().clone());
            }
            waiting
        };
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(self.ticket.take().expect("polled after completion"))
        }
    }
}

impl Drop for WaitGrant<'_> {
    /// A write cancelled while it waits leaves the queue.
    fn drop(&mut self) {
        let Some(t) = &self.ticket else { return };
        if matches!(&*t.slot.state.borrow(), SlotState::Waiting) {
            if let Some(q) = t.locks.zones.borrow_mut().get_mut(&t.key) {
                q.waiting.retain(|w| !Rc::ptr_eq(&w.slot, &t.slot));
            }
        }
    }
}
