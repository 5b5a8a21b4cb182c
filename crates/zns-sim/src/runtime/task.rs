//! Tasks: the slab that owns every spawned future, the wakers that schedule
//! them, and [`JoinHandle`].
//!
//! Invariants:
//! - A task is named by a [`TaskId`] = slot index + slot generation. Freeing a
//!   slot bumps its generation, so ids held by stale wakers, stale ready-queue
//!   entries or finished join handles no longer match and are ignored.
//! - A live slot holds its future except while the future is being polled
//!   (then `future` is `None`, and an abort only sets `abort_requested`).
//! - `scheduled` is true exactly while the id sits in the ready queue, so a
//!   task is queued at most once however often it is woken.
//! - Each slot keeps one `Arc<TaskWaker>` and reuses it for the next task in
//!   the slot when no one else holds a clone: spawning and waking allocate
//!   nothing in steady state.
//!
//! # Waker scheme
//!
//! A [`TaskWaker`] is `Send + Sync` (task id in an atomic, plus an `Arc` of
//! the runtime's cross-thread queue) and is built on `std::task::Wake`, so no
//! unsafe code is involved. Waking on the runtime's own thread, while its
//! `block_on` runs, pushes the id straight onto the ready queue (found
//! through a thread-local). Any other wake — another thread, or the runtime's
//! thread between `block_on` calls — goes through the mutex-protected queue
//! and is picked up at the next scheduling point.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Wake;
use std::task::{Context, Poll, Waker};

use super::remote::Shared;
use super::{Core, WakeTarget};

/// A boxed task future, as the slab stores it.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = ()>>>;

/// Slot index (low 32 bits) and generation (high 32 bits) of a task. The
/// index `u32::MAX` is reserved for the main future of `block_on`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct TaskId(u64);

const MAIN_INDEX: u32 = u32::MAX;

impl TaskId {
    fn new(index: u32, gen: u32) -> TaskId {
        TaskId((u64::from(gen) << 32) | u64::from(index))
    }

    pub(crate) fn main(gen: u32) -> TaskId {
        TaskId::new(MAIN_INDEX, gen)
    }

    pub(crate) fn index(self) -> u32 {
        self.0 as u32
    }

    pub(crate) fn gen(self) -> u32 {
        (self.0 >> 32) as u32
    }

    pub(crate) fn is_main(self) -> bool {
        self.index() == MAIN_INDEX
    }

    fn to_bits(self) -> u64 {
        self.0
    }

    fn from_bits(bits: u64) -> TaskId {
        TaskId(bits)
    }
}

/// The waker of one task (or of a `block_on` main future).
pub(crate) struct TaskWaker {
    id: AtomicU64,
    shared: Arc<Shared>,
}

impl TaskWaker {
    pub(crate) fn new(id: TaskId, shared: Arc<Shared>) -> TaskWaker {
        TaskWaker {
            id: AtomicU64::new(id.to_bits()),
            shared,
        }
    }
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let id = TaskId::from_bits(self.id.load(Ordering::Relaxed));
        if !super::wake_on_current_thread(&self.shared, id) {
            self.shared.wake_from_afar(id);
        }
    }
}

struct TaskSlot {
    gen: u32,
    live: bool,
    scheduled: bool,
    abort_requested: bool,
    future: Option<TaskFuture>,
    /// The waker handed to polls; `None` only while the task is polled.
    waker: Option<Waker>,
    /// The same waker's `Arc`, kept to see whether anyone else holds a clone.
    waker_arc: Option<Arc<TaskWaker>>,
}

/// The slab of tasks.
#[derive(Default)]
pub(crate) struct TaskSlab {
    slots: Vec<TaskSlot>,
    free: Vec<u32>,
    live: usize,
}

impl TaskSlab {
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Stores a new task, already marked scheduled, and returns its id.
    fn insert(&mut self, future: TaskFuture, shared: &Arc<Shared>) -> TaskId {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                let index = u32::try_from(self.slots.len()).expect("more than 2^32 live tasks");
                assert!(index != MAIN_INDEX, "more than 2^32 - 1 live tasks");
                self.slots.push(TaskSlot {
                    gen: 0,
                    live: false,
                    scheduled: false,
                    abort_requested: false,
                    future: None,
                    waker: None,
                    waker_arc: None,
                });
                index
            }
        };
        let slot = &mut self.slots[index as usize];
        let id = TaskId::new(index, slot.gen);
        slot.live = true;
        slot.scheduled = true;
        slot.abort_requested = false;
        slot.future = Some(future);
        // Reuse the slot's waker when only the slot holds it (the Arc here and
        // the Waker built from it): no clone can then observe the id change.
        let reusable = matches!(&slot.waker_arc, Some(arc) if slot.waker.is_some() && Arc::strong_count(arc) == 2);
        if reusable {
            if let Some(arc) = &slot.waker_arc {
                arc.id.store(id.to_bits(), Ordering::Relaxed);
            }
        } else {
            let arc = Arc::new(TaskWaker::new(id, shared.clone()));
            slot.waker = Some(Waker::from(arc.clone()));
            slot.waker_arc = Some(arc);
        }
        self.live += 1;
        id
    }

    fn slot_mut(&mut self, id: TaskId) -> Option<&mut TaskSlot> {
        match self.slots.get_mut(id.index() as usize) {
            Some(slot) if slot.live && slot.gen == id.gen() => Some(slot),
            _ => None,
        }
    }

    fn free_slot(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        slot.live = false;
        slot.scheduled = false;
        slot.abort_requested = false;
        slot.gen = slot.gen.wrapping_add(1);
        self.free.push(index);
        self.live -= 1;
    }

    /// Marks `id` scheduled; true when the caller must queue it.
    pub(crate) fn mark_scheduled(&mut self, id: TaskId) -> bool {
        match self.slot_mut(id) {
            Some(slot) if !slot.scheduled => {
                slot.scheduled = true;
                true
            }
            _ => false,
        }
    }

    /// Takes the future and waker of a scheduled task for polling.
    pub(crate) fn take_for_poll(&mut self, id: TaskId) -> Option<(TaskFuture, Waker)> {
        let slot = self.slot_mut(id)?;
        if !slot.scheduled {
            return None;
        }
        slot.scheduled = false;
        let future = slot.future.take()?;
        let waker = slot
            .waker
            .take()
            .expect("a live task always has its waker between polls");
        Some((future, waker))
    }

    /// Returns a polled task's future and waker. When the task finished or
    /// was aborted during the poll, frees the slot and hands the future back
    /// for the caller to drop outside the slab borrow.
    pub(crate) fn put_back(
        &mut self,
        id: TaskId,
        future: TaskFuture,
        waker: Waker,
        done: bool,
    ) -> Option<TaskFuture> {
        let index = id.index();
        let slot = &mut self.slots[index as usize];
        debug_assert!(slot.live && slot.gen == id.gen() && slot.future.is_none());
        slot.waker = Some(waker);
        if done || slot.abort_requested {
            self.free_slot(index);
            Some(future)
        } else {
            slot.future = Some(future);
            None
        }
    }

    /// Aborts `id`: frees its slot and returns its future to drop, or, when
    /// the task is being polled right now, arranges for it to be dropped
    /// after the poll.
    fn abort(&mut self, id: TaskId) -> Option<TaskFuture> {
        let slot = self.slot_mut(id)?;
        match slot.future.take() {
            Some(future) => {
                self.free_slot(id.index());
                Some(future)
            }
            None => {
                slot.abort_requested = true;
                None
            }
        }
    }

    /// Frees every live task and returns the futures (runtime shutdown).
    pub(crate) fn take_all_futures(&mut self) -> Vec<TaskFuture> {
        let mut futures = Vec::new();
        for index in 0..self.slots.len() {
            if self.slots[index].live {
                if let Some(future) = self.slots[index].future.take() {
                    futures.push(future);
                }
                self.free_slot(index as u32);
            }
        }
        futures
    }
}

/// Spawns `fut` on `core` (see `Handle::spawn`).
pub(crate) fn spawn<F>(core: &Rc<Core>, fut: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
{
    let join = Rc::new(JoinState {
        slot: RefCell::new(JoinSlot::Pending),
        waiter: Cell::new(None),
        core: core.clone(),
    });
    let guard = CompletionGuard(join.clone());
    if core.shut_down.get() {
        drop(fut);
        drop(guard); // marks the task aborted
        return JoinHandle { join, id: None };
    }
    let task: TaskFuture = Box::pin(async move {
        let guard = guard;
        let out = fut.await;
        guard.complete(out);
    });
    let id = core.tasks.borrow_mut().insert(task, &core.shared);
    core.ready.borrow_mut().push_back(id);
    JoinHandle { join, id: Some(id) }
}

enum JoinSlot<T> {
    Pending,
    Done(T),
    Taken,
    Aborted,
}

/// Shared between a task's future and its `JoinHandle`.
struct JoinState<T> {
    slot: RefCell<JoinSlot<T>>,
    /// Who awaits the handle.
    waiter: Cell<Option<WakeTarget>>,
    core: Rc<Core>,
}

impl<T> JoinState<T> {
    fn finish(&self, result: JoinSlot<T>) {
        let previous = std::mem::replace(&mut *self.slot.borrow_mut(), result);
        // A still-pending task's output cannot be here; nothing else is lost.
        debug_assert!(matches!(previous, JoinSlot::Pending));
        if let Some(waiter) = self.waiter.take() {
            self.core.wake_target_now(waiter);
        }
    }
}

/// Lives inside the task future: completes the join state with the output,
/// or, when the future is dropped before finishing (abort, shutdown), marks
/// it aborted.
struct CompletionGuard<T>(Rc<JoinState<T>>);

impl<T> CompletionGuard<T> {
    fn complete(self, out: T) {
        self.0.finish(JoinSlot::Done(out));
    }
}

impl<T> Drop for CompletionGuard<T> {
    fn drop(&mut self) {
        let pending = matches!(*self.0.slot.borrow(), JoinSlot::Pending);
        if pending {
            self.0.finish(JoinSlot::Aborted);
        }
    }
}

/// Owned permission to await a spawned task's output. Awaiting it yields the
/// output; dropping it detaches the task (it keeps running); [`abort`]
/// cancels the task.
///
/// Awaiting the handle of an aborted task panics; use [`try_join`] where an
/// abort is possible.
///
/// [`abort`]: JoinHandle::abort
/// [`try_join`]: JoinHandle::try_join
pub struct JoinHandle<T> {
    join: Rc<JoinState<T>>,
    id: Option<TaskId>,
}

impl<T> JoinHandle<T> {
    /// Cancels the task: its future is dropped now (or right after its
    /// current poll, when a task aborts itself). No effect on a finished task.
    pub fn abort(&self) {
        let Some(id) = self.id else { return };
        let future = self.join.core.tasks.borrow_mut().abort(id);
        drop(future);
    }

    /// Whether the task has finished or been aborted.
    pub fn is_finished(&self) -> bool {
        !matches!(*self.join.slot.borrow(), JoinSlot::Pending)
    }

    /// A future resolving to `Some(output)`, or `None` if the task was
    /// aborted.
    pub fn try_join(self) -> TryJoin<T> {
        TryJoin { handle: self }
    }

    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut slot = self.join.slot.borrow_mut();
        match std::mem::replace(&mut *slot, JoinSlot::Taken) {
            JoinSlot::Done(out) => Poll::Ready(Some(out)),
            JoinSlot::Aborted => {
                *slot = JoinSlot::Aborted;
                Poll::Ready(None)
            }
            JoinSlot::Pending => {
                *slot = JoinSlot::Pending;
                drop(slot);
                let core = &*self.join.core;
                let waiter = match self.join.waiter.take() {
                    Some(waiter) if waiter.matches(core, cx.waker()) => waiter,
                    _ => core.wake_target(cx.waker()),
                };
                self.join.waiter.set(Some(waiter));
                Poll::Pending
            }
            JoinSlot::Taken => panic!("JoinHandle polled after it returned the task's output"),
        }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.poll_result(cx) {
            Poll::Ready(Some(out)) => Poll::Ready(out),
            Poll::Ready(None) => panic!("awaited the JoinHandle of an aborted task (use try_join where aborts are possible)"),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Future returned by [`JoinHandle::try_join`].
pub struct TryJoin<T> {
    handle: JoinHandle<T>,
}

impl<T> Future for TryJoin<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.handle.poll_result(cx)
    }
}
