//! Single-threaded synchronisation primitives for tasks of one runtime:
//! [`Notify`], [`oneshot`], [`mpsc`] (unbounded and bounded channels) and a
//! FIFO-fair [`Semaphore`].
//!
//! All of them use `Rc`/`RefCell` inside (they are `!Send`) and wake waiters
//! in FIFO order of their first poll, so a simulation using them schedules
//! identically on every run. Wakers are always invoked after the primitive's
//! `RefCell` borrow is released. Every waiting future is cancellation safe:
//! dropping it removes its waiter, and a notification or permits it had
//! already been granted pass on to the next waiter.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Names a waiter in a [`WaitList`]: slot index plus generation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct WaitKey {
    index: u32,
    gen: u32,
}

struct WaitSlot<D> {
    gen: u32,
    live: bool,
    /// Still in the FIFO queue (not yet granted what it waits for).
    queued: bool,
    waker: Option<Waker>,
    data: D,
}

/// A FIFO queue of waiters over a slab, without per-wait allocation in steady
/// state. A waiter stays in the slab from registration until its future
/// removes it; it leaves the queue when it is granted what it waits for.
/// Removed waiters leave stale queue entries that are skipped (and compacted
/// when they pile up).
struct WaitList<D> {
    slots: Vec<WaitSlot<D>>,
    free: Vec<u32>,
    queue: VecDeque<WaitKey>,
    queued: usize,
}

impl<D> Default for WaitList<D> {
    fn default() -> Self {
        WaitList {
            slots: Vec::new(),
            free: Vec::new(),
            queue: VecDeque::new(),
            queued: 0,
        }
    }
}

impl<D> WaitList<D> {
    /// Registers a waiter at the back of the queue.
    fn push(&mut self, waker: Waker, data: D) -> WaitKey {
        let index = match self.free.pop() {
            Some(index) => {
                let slot = &mut self.slots[index as usize];
                slot.live = true;
                slot.queued = true;
                slot.waker = Some(waker);
                slot.data = data;
                index
            }
            None => {
                let index = u32::try_from(self.slots.len()).expect("more than 2^32 waiters");
                self.slots.push(WaitSlot {
                    gen: 0,
                    live: true,
                    queued: true,
                    waker: Some(waker),
                    data,
                });
                index
            }
        };
        let key = WaitKey {
            index,
            gen: self.slots[index as usize].gen,
        };
        if self.queue.len() > 2 * self.queued + 64 {
            let slots = &self.slots;
            self.queue
                .retain(|k| slots[k.index as usize].gen == k.gen && slots[k.index as usize].queued);
        }
        self.queue.push_back(key);
        self.queued += 1;
        key
    }

    fn get_mut(&mut self, key: WaitKey) -> Option<&mut WaitSlot<D>> {
        match self.slots.get_mut(key.index as usize) {
            Some(slot) if slot.live && slot.gen == key.gen => Some(slot),
            _ => None,
        }
    }

    /// Whether the waiter is still queued (not yet granted).
    fn is_queued(&mut self, key: WaitKey) -> bool {
        self.get_mut(key).is_some_and(|slot| slot.queued)
    }

    fn set_waker(&mut self, key: WaitKey, waker: &Waker) {
        if let Some(slot) = self.get_mut(key) {
            if !slot.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
                slot.waker = Some(waker.clone());
            }
        }
    }

    /// Removes a waiter; returns its data and whether it was still queued.
    fn remove(&mut self, key: WaitKey) -> Option<(D, bool)>
    where
        D: Default,
    {
        let slot = self.get_mut(key)?;
        let queued = slot.queued;
        let data = std::mem::take(&mut slot.data);
        slot.live = false;
        slot.queued = false;
        slot.waker = None;
        slot.gen = slot.gen.wrapping_add(1);
        self.free.push(key.index);
        if queued {
            self.queued -= 1;
        }
        Some((data, queued))
    }

    /// The first queued waiter.
    fn front(&mut self) -> Option<WaitKey> {
        while let Some(&key) = self.queue.front() {
            let slot = &self.slots[key.index as usize];
            if slot.live && slot.gen == key.gen && slot.queued {
                return Some(key);
            }
            self.queue.pop_front();
        }
        None
    }

    /// Takes the first queued waiter out of the queue (it stays registered)
    /// and returns its key and waker.
    fn grant_front(&mut self) -> Option<(WaitKey, Option<Waker>)> {
        let key = self.front()?;
        self.queue.pop_front();
        self.queued -= 1;
        let slot = &mut self.slots[key.index as usize];
        slot.queued = false;
        Some((key, slot.waker.take()))
    }

    fn has_queued(&self) -> bool {
        self.queued > 0
    }
}

// ---------------------------------------------------------------------------
// Notify

const NOTIFY_WAITING: u8 = 0;
const NOTIFY_ONE: u8 = 1;
const NOTIFY_ALL: u8 = 2;

#[derive(Default)]
struct NotifyState {
    permit: bool,
    waiters: WaitList<u8>,
}

/// Wakes tasks waiting in [`Notify::notified`]. Cloning gives another handle
/// to the same `Notify`.
///
/// - `notify_one` wakes the longest-waiting task, or, when none waits,
///   stores one permit that the next `notified()` consumes at once.
/// - `notify_waiters` wakes every task waiting now and stores no permit.
///
/// A `Notified` future waits from its first poll.
#[derive(Clone, Default)]
pub struct Notify {
    state: Rc<RefCell<NotifyState>>,
}

impl Notify {
    pub fn new() -> Notify {
        Notify::default()
    }

    /// Wakes the first waiter, or stores a permit when there is none.
    pub fn notify_one(&self) {
        let waker = {
            let mut state = self.state.borrow_mut();
            match state.waiters.grant_front() {
                Some((key, waker)) => {
                    if let Some(slot) = state.waiters.get_mut(key) {
                        slot.data = NOTIFY_ONE;
                    }
                    waker
                }
                None => {
                    state.permit = true;
                    None
                }
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Wakes every current waiter, in FIFO order.
    pub fn notify_waiters(&self) {
        let mut wakers = Vec::new();
        {
            let mut state = self.state.borrow_mut();
            while let Some((key, waker)) = state.waiters.grant_front() {
                if let Some(slot) = state.waiters.get_mut(key) {
                    slot.data = NOTIFY_ALL;
                }
                wakers.extend(waker);
            }
        }
        for waker in wakers {
            waker.wake();
        }
    }

    /// A future that completes when this `Notify` is notified.
    pub fn notified(&self) -> Notified {
        Notified {
            state: self.state.clone(),
            key: None,
            done: false,
        }
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notify").finish_non_exhaustive()
    }
}

/// Future returned by [`Notify::notified`].
#[must_use = "futures do nothing unless awaited"]
pub struct Notified {
    state: Rc<RefCell<NotifyState>>,
    key: Option<WaitKey>,
    done: bool,
}

impl Future for Notified {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.done {
            return Poll::Ready(());
        }
        let this = &mut *self;
        let mut state = this.state.borrow_mut();
        match this.key {
            None => {
                if state.permit {
                    state.permit = false;
                    this.done = true;
                    return Poll::Ready(());
                }
                this.key = Some(state.waiters.push(cx.waker().clone(), NOTIFY_WAITING));
                Poll::Pending
            }
            Some(key) => {
                if state.waiters.is_queued(key) {
                    state.waiters.set_waker(key, cx.waker());
                    return Poll::Pending;
                }
                state.waiters.remove(key);
                this.key = None;
                this.done = true;
                Poll::Ready(())
            }
        }
    }
}

impl Drop for Notified {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let removed = self.state.borrow_mut().waiters.remove(key);
        if let Some((NOTIFY_ONE, false)) = removed {
            // Granted by notify_one but never observed: pass it on.
            Notify {
                state: self.state.clone(),
            }
            .notify_one();
        }
    }
}

// ---------------------------------------------------------------------------
// Semaphore

struct SemState {
    permits: usize,
    closed: bool,
    /// Per waiter: permits still missing.
    waiters: WaitList<usize>,
}

impl SemState {
    /// Hands available permits to the first waiter; when that completes its
    /// request, takes it out of the queue and returns its waker. One waiter
    /// per call, so the caller can wake outside the borrow and loop.
    fn grant_one(&mut self) -> Option<Option<Waker>> {
        if self.permits == 0 {
            return None;
        }
        let key = self.waiters.front()?;
        let missing = &mut self.waiters.get_mut(key)?.data;
        let give = (*missing).min(self.permits);
        *missing -= give;
        self.permits -= give;
        if *missing > 0 {
            return None;
        }
        self.waiters.grant_front().map(|(_, waker)| waker)
    }
}

type SemRef = Rc<RefCell<SemState>>;

fn sem_release(sem: &SemRef, permits: usize) {
    sem.borrow_mut().permits += permits;
    loop {
        let granted = sem.borrow_mut().grant_one();
        match granted {
            Some(waker) => {
                if let Some(waker) = waker {
                    waker.wake();
                }
            }
            None => break,
        }
    }
}

/// An asynchronous counting semaphore. Waiters are served strictly in FIFO
/// order: a large request at the head of the queue holds back smaller ones
/// behind it. Cloning gives another handle to the same semaphore.
#[derive(Clone)]
pub struct Semaphore {
    sem: SemRef,
}

impl Semaphore {
    /// A semaphore with `permits` permits available.
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            sem: Rc::new(RefCell::new(SemState {
                permits,
                closed: false,
                waiters: WaitList::default(),
            })),
        }
    }

    /// Waits for one permit.
    pub fn acquire(&self) -> Acquire {
        self.acquire_many(1)
    }

    /// Waits for `permits` permits, acquired together.
    pub fn acquire_many(&self, permits: usize) -> Acquire {
        Acquire {
            inner: RawAcquire::new(self.sem.clone(), permits),
        }
    }

    /// One permit if available now and nobody is queued ahead.
    pub fn try_acquire(&self) -> Option<SemaphorePermit> {
        self.try_acquire_many(1)
    }

    /// `permits` permits if available now and nobody is queued ahead.
    pub fn try_acquire_many(&self, permits: usize) -> Option<SemaphorePermit> {
        raw_try_acquire(&self.sem, permits)
    }

    /// Adds permits (waking waiters they satisfy).
    pub fn add_permits(&self, permits: usize) {
        sem_release(&self.sem, permits);
    }

    /// Permits available right now (not counting those already handed to
    /// waiters).
    pub fn available_permits(&self) -> usize {
        self.sem.borrow().permits
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("available_permits", &self.available_permits())
            .finish()
    }
}

fn raw_try_acquire(sem: &SemRef, permits: usize) -> Option<SemaphorePermit> {
    let mut state = sem.borrow_mut();
    if state.closed || state.waiters.has_queued() || state.permits < permits {
        return None;
    }
    state.permits -= permits;
    drop(state);
    Some(SemaphorePermit {
        sem: sem.clone(),
        permits,
    })
}

/// Permits held; released to the semaphore on drop.
#[must_use = "the permits are released as soon as the guard is dropped"]
pub struct SemaphorePermit {
    sem: SemRef,
    permits: usize,
}

impl SemaphorePermit {
    /// The number of permits held.
    pub fn permits(&self) -> usize {
        self.permits
    }

    /// Keeps the permits out of the semaphore for good.
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for SemaphorePermit {
    fn drop(&mut self) {
        if self.permits > 0 {
            sem_release(&self.sem, self.permits);
        }
    }
}

impl fmt::Debug for SemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("permits", &self.permits)
            .finish()
    }
}

/// The semaphore was closed (only the bounded channel closes its semaphore).
struct SemClosed;

/// Acquisition state shared by [`Acquire`] and the bounded channel's send.
struct RawAcquire {
    sem: SemRef,
    permits: usize,
    key: Option<WaitKey>,
    done: bool,
}

impl RawAcquire {
    fn new(sem: SemRef, permits: usize) -> RawAcquire {
        RawAcquire {
            sem,
            permits,
            key: None,
            done: false,
        }
    }

    fn poll_acquire(&mut self, cx: &mut Context<'_>) -> Poll<Result<SemaphorePermit, SemClosed>> {
        assert!(!self.done, "semaphore Acquire polled after completion");
        let mut state = self.sem.borrow_mut();
        let key = match self.key {
            Some(key) => key,
            None => {
                if state.closed {
                    self.done = true;
                    return Poll::Ready(Err(SemClosed));
                }
                if !state.waiters.has_queued() && state.permits >= self.permits {
                    state.permits -= self.permits;
                    drop(state);
                    self.done = true;
                    return Poll::Ready(Ok(SemaphorePermit {
                        sem: self.sem.clone(),
                        permits: self.permits,
                    }));
                }
                let key = state.waiters.push(cx.waker().clone(), self.permits);
                self.key = Some(key);
                // Take what is available now if this waiter is at the head.
                if state.waiters.front() == Some(key) {
                    let waker = state.grant_one();
                    drop(state);
                    drop(waker);
                    state = self.sem.borrow_mut();
                }
                key
            }
        };
        if state.closed {
            let (missing, _) = state.waiters.remove(key).unwrap_or((self.permits, false));
            drop(state);
            self.key = None;
            self.done = true;
            let granted = self.permits - missing;
            if granted > 0 {
                sem_release(&self.sem, granted);
            }
            return Poll::Ready(Err(SemClosed));
        }
        if state.waiters.is_queued(key) {
            state.waiters.set_waker(key, cx.waker());
            return Poll::Pending;
        }
        state.waiters.remove(key);
        drop(state);
        self.key = None;
        self.done = true;
        Poll::Ready(Ok(SemaphorePermit {
            sem: self.sem.clone(),
            permits: self.permits,
        }))
    }
}

impl Drop for RawAcquire {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let removed = self.sem.borrow_mut().waiters.remove(key);
        if let Some((missing, _)) = removed {
            // Permits already handed to this waiter go back to the others.
            let granted = self.permits - missing;
            if granted > 0 {
                sem_release(&self.sem, granted);
            }
        }
    }
}

/// Future returned by [`Semaphore::acquire`] and
/// [`Semaphore::acquire_many`].
#[must_use = "futures do nothing unless awaited"]
pub struct Acquire {
    inner: RawAcquire,
}

impl Future for Acquire {
    type Output = SemaphorePermit;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<SemaphorePermit> {
        match self.inner.poll_acquire(cx) {
            Poll::Ready(Ok(permit)) => Poll::Ready(permit),
            // A public Semaphore is never closed.
            Poll::Ready(Err(SemClosed)) => unreachable!("a public Semaphore is never closed"),
            Poll::Pending => Poll::Pending,
        }
    }
}

// ---------------------------------------------------------------------------
// oneshot

/// A channel carrying one value from one sender to one receiver.
pub mod oneshot {
    use super::*;

    struct Inner<T> {
        value: Option<T>,
        rx_waker: Option<Waker>,
        tx_closed: bool,
        rx_closed: bool,
    }

    /// Sends the value (consumed by [`Sender::send`]).
    pub struct Sender<T> {
        inner: Rc<RefCell<Inner<T>>>,
    }

    /// Awaiting it yields the value, or [`RecvError`] if the sender was
    /// dropped without sending.
    #[must_use = "futures do nothing unless awaited"]
    pub struct Receiver<T> {
        inner: Rc<RefCell<Inner<T>>>,
    }

    /// The sender was dropped without sending.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct RecvError;

    impl fmt::Display for RecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("oneshot sender dropped without sending")
        }
    }

    impl std::error::Error for RecvError {}

    /// Why [`Receiver::try_recv`] returned no value.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum TryRecvError {
        /// Not sent yet.
        Empty,
        /// The sender was dropped without sending (or the value was taken).
        Closed,
    }

    /// A new oneshot channel.
    pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
        let inner = Rc::new(RefCell::new(Inner {
            value: None,
            rx_waker: None,
            tx_closed: false,
            rx_closed: false,
        }));
        (
            Sender {
                inner: inner.clone(),
            },
            Receiver { inner },
        )
    }

    impl<T> Sender<T> {
        /// Sends `value`; gives it back if the receiver is gone.
        pub fn send(self, value: T) -> Result<(), T> {
            let waker = {
                let mut inner = self.inner.borrow_mut();
                if inner.rx_closed {
                    return Err(value);
                }
                inner.value = Some(value);
                inner.tx_closed = true;
                inner.rx_waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
            Ok(())
        }

        /// Whether the receiver has been dropped.
        pub fn is_closed(&self) -> bool {
            self.inner.borrow().rx_closed
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            let waker = {
                let mut inner = self.inner.borrow_mut();
                inner.tx_closed = true;
                inner.rx_waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    impl<T> Receiver<T> {
        /// The value if it has been sent.
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            let mut inner = self.inner.borrow_mut();
            match inner.value.take() {
                Some(value) => Ok(value),
                None if inner.tx_closed => Err(TryRecvError::Closed),
                None => Err(TryRecvError::Empty),
            }
        }
    }

    impl<T> Future for Receiver<T> {
        type Output = Result<T, RecvError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let mut inner = self.inner.borrow_mut();
            if let Some(value) = inner.value.take() {
                return Poll::Ready(Ok(value));
            }
            if inner.tx_closed {
                return Poll::Ready(Err(RecvError));
            }
            if !inner
                .rx_waker
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
            {
                inner.rx_waker = Some(cx.waker().clone());
            }
            Poll::Pending
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            let value = {
                let mut inner = self.inner.borrow_mut();
                inner.rx_closed = true;
                inner.value.take()
            };
            drop(value);
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("oneshot::Sender").finish_non_exhaustive()
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("oneshot::Receiver").finish_non_exhaustive()
        }
    }
}

// ---------------------------------------------------------------------------
// mpsc

/// Multi-producer single-consumer FIFO channels: [`unbounded_channel`]
/// (synchronous send) and [`channel`] (bounded; `send` waits for capacity,
/// senders served in FIFO order).
///
/// [`unbounded_channel`]: mpsc::unbounded_channel
/// [`channel`]: mpsc::channel
pub mod mpsc {
    use super::*;

    /// The receiver is gone; the value is handed back.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct SendError<T>(pub T);

    impl<T> fmt::Debug for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("SendError(..)")
        }
    }

    impl<T> fmt::Display for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("channel receiver dropped")
        }
    }

    impl<T> std::error::Error for SendError<T> {}

    /// Why [`Sender::try_send`] failed; the value is handed back.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub enum TrySendError<T> {
        /// No capacity now (or senders are queued ahead).
        Full(T),
        /// The receiver is gone.
        Closed(T),
    }

    impl<T> fmt::Debug for TrySendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TrySendError::Full(_) => f.write_str("Full(..)"),
                TrySendError::Closed(_) => f.write_str("Closed(..)"),
            }
        }
    }

    impl<T> fmt::Display for TrySendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TrySendError::Full(_) => f.write_str("channel full"),
                TrySendError::Closed(_) => f.write_str("channel receiver dropped"),
            }
        }
    }

    impl<T> std::error::Error for TrySendError<T> {}

    /// Why `try_recv` returned no value.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum TryRecvError {
        /// Nothing queued, senders still alive.
        Empty,
        /// Nothing queued and every sender dropped.
        Disconnected,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TryRecvError::Empty => f.write_str("channel empty"),
                TryRecvError::Disconnected => f.write_str("channel empty and all senders dropped"),
            }
        }
    }

    impl std::error::Error for TryRecvError {}

    /// The queue shared by both channel kinds.
    struct Chan<T> {
        queue: VecDeque<T>,
        /// The receiver's last waker, kept between waits so that a receiver
        /// polled by the same task never clones it again.
        rx_waker: Option<Waker>,
        /// The receiver is waiting (returned `Pending` and was not woken yet).
        rx_waiting: bool,
        senders: usize,
        rx_closed: bool,
        /// Capacity permits (bounded channels only).
        sem: Option<SemRef>,
    }

    type ChanRef<T> = Rc<RefCell<Chan<T>>>;

    fn new_chan<T>(sem: Option<SemRef>) -> ChanRef<T> {
        Rc::new(RefCell::new(Chan {
            queue: VecDeque::new(),
            rx_waker: None,
            rx_waiting: false,
            senders: 1,
            rx_closed: false,
            sem,
        }))
    }

    fn push<T>(chan: &ChanRef<T>, value: T) {
        let waker = {
            let mut c = chan.borrow_mut();
            c.queue.push_back(value);
            if !c.rx_waiting {
                return;
            }
            c.rx_waiting = false;
            c.rx_waker.take()
        };
        if let Some(waker) = waker {
            // Woken outside the borrow, then kept for the receiver's next wait.
            waker.wake_by_ref();
            let mut c = chan.borrow_mut();
            if c.rx_waker.is_none() {
                c.rx_waker = Some(waker);
            }
        }
    }

    fn add_sender<T>(chan: &ChanRef<T>) {
        chan.borrow_mut().senders += 1;
    }

    fn drop_sender<T>(chan: &ChanRef<T>) {
        let waker = {
            let mut c = chan.borrow_mut();
            c.senders -= 1;
            if c.senders == 0 && c.rx_waiting {
                c.rx_waiting = false;
                c.rx_waker.take()
            } else {
                None
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn poll_recv<T>(chan: &ChanRef<T>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut c = chan.borrow_mut();
        if let Some(value) = c.queue.pop_front() {
            let sem = c.sem.clone();
            drop(c);
            if let Some(sem) = sem {
                sem_release(&sem, 1);
            }
            return Poll::Ready(Some(value));
        }
        if c.senders == 0 {
            return Poll::Ready(None);
        }
        if !c.rx_waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            c.rx_waker = Some(cx.waker().clone());
        }
        c.rx_waiting = true;
        Poll::Pending
    }

    fn try_recv<T>(chan: &ChanRef<T>) -> Result<T, TryRecvError> {
        let mut c = chan.borrow_mut();
        match c.queue.pop_front() {
            Some(value) => {
                let sem = c.sem.clone();
                drop(c);
                if let Some(sem) = sem {
                    sem_release(&sem, 1);
                }
                Ok(value)
            }
            None if c.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Receiver side closes: later sends fail, queued values are dropped,
    /// senders waiting for capacity are woken with an error.
    fn close_rx<T>(chan: &ChanRef<T>) {
        let (values, sem) = {
            let mut c = chan.borrow_mut();
            c.rx_closed = true;
            (std::mem::take(&mut c.queue), c.sem.clone())
        };
        drop(values);
        if let Some(sem) = sem {
            let mut wakers = Vec::new();
            {
                let mut state = sem.borrow_mut();
                state.closed = true;
                while let Some((_, waker)) = state.waiters.grant_front() {
                    wakers.extend(waker);
                }
            }
            // Woken waiters see `closed` and fail, returning any permits.
            for waker in wakers {
                waker.wake();
            }
        }
    }

    /// Future returned by the receivers' `recv`.
    #[must_use = "futures do nothing unless awaited"]
    pub struct Recv<'a, T> {
        chan: &'a ChanRef<T>,
    }

    impl<T> Future for Recv<'_, T> {
        type Output = Option<T>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            poll_recv(self.chan, cx)
        }
    }

    // --- unbounded ---------------------------------------------------------

    /// Sending half of an unbounded channel; cloneable; `send` never waits.
    pub struct UnboundedSender<T> {
        chan: ChanRef<T>,
    }

    /// Receiving half of an unbounded channel.
    pub struct UnboundedReceiver<T> {
        chan: ChanRef<T>,
    }

    /// A new unbounded channel.
    pub fn unbounded_channel<T>() -> (UnboundedSender<T>, UnboundedReceiver<T>) {
        let chan = new_chan(None);
        (
            UnboundedSender { chan: chan.clone() },
            UnboundedReceiver { chan },
        )
    }

    impl<T> UnboundedSender<T> {
        /// Queues `value`; gives it back if the receiver is gone.
        pub fn send(&self, value: T) -> Result<(), SendError<T>> {
            if self.chan.borrow().rx_closed {
                return Err(SendError(value));
            }
            push(&self.chan, value);
            Ok(())
        }

        /// Whether the receiver is gone.
        pub fn is_closed(&self) -> bool {
            self.chan.borrow().rx_closed
        }
    }

    impl<T> Clone for UnboundedSender<T> {
        fn clone(&self) -> Self {
            add_sender(&self.chan);
            UnboundedSender {
                chan: self.chan.clone(),
            }
        }
    }

    impl<T> Drop for UnboundedSender<T> {
        fn drop(&mut self) {
            drop_sender(&self.chan);
        }
    }

    impl<T> UnboundedReceiver<T> {
        /// The next value, or `None` once every sender is dropped and the
        /// queue is empty.
        pub fn recv(&mut self) -> Recv<'_, T> {
            Recv { chan: &self.chan }
        }

        /// The next value if one is queued.
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            try_recv(&self.chan)
        }

        /// Values queued now.
        pub fn len(&self) -> usize {
            self.chan.borrow().queue.len()
        }

        /// Whether no value is queued.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    impl<T> Drop for UnboundedReceiver<T> {
        fn drop(&mut self) {
            close_rx(&self.chan);
        }
    }

    // --- bounded -----------------------------------------------------------

    /// Sending half of a bounded channel; cloneable.
    pub struct Sender<T> {
        chan: ChanRef<T>,
        sem: SemRef,
    }

    /// Receiving half of a bounded channel.
    pub struct Receiver<T> {
        chan: ChanRef<T>,
    }

    /// A new channel holding at most `capacity` queued values.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    pub fn channel<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
        assert!(capacity > 0, "mpsc::channel: capacity must be at least 1");
        let sem = Rc::new(RefCell::new(SemState {
            permits: capacity,
            closed: false,
            waiters: WaitList::default(),
        }));
        let chan = new_chan(Some(sem.clone()));
        (
            Sender {
                chan: chan.clone(),
                sem,
            },
            Receiver { chan },
        )
    }

    impl<T> Sender<T> {
        /// Queues `value`, waiting (FIFO among senders) for capacity; gives
        /// the value back if the receiver is gone.
        pub fn send(&self, value: T) -> Send<'_, T> {
            Send {
                chan: &self.chan,
                value: Some(value),
                acquire: RawAcquire::new(self.sem.clone(), 1),
            }
        }

        /// Queues `value` if there is capacity now and no sender waits.
        pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
            if self.chan.borrow().rx_closed {
                return Err(TrySendError::Closed(value));
            }
            match raw_try_acquire(&self.sem, 1) {
                Some(permit) => {
                    permit.forget();
                    push(&self.chan, value);
                    Ok(())
                }
                None => Err(TrySendError::Full(value)),
            }
        }

        /// Whether the receiver is gone.
        pub fn is_closed(&self) -> bool {
            self.chan.borrow().rx_closed
        }

        /// Free slots now.
        pub fn capacity(&self) -> usize {
            self.sem.borrow().permits
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Self {
            add_sender(&self.chan);
            Sender {
                chan: self.chan.clone(),
                sem: self.sem.clone(),
            }
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            drop_sender(&self.chan);
        }
    }

    /// Future returned by [`Sender::send`].
    #[must_use = "futures do nothing unless awaited"]
    pub struct Send<'a, T> {
        chan: &'a ChanRef<T>,
        value: Option<T>,
        acquire: RawAcquire,
    }

    impl<T> Future for Send<'_, T> {
        type Output = Result<(), SendError<T>>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = Pin::into_inner(self);
            let Some(value) = this.value.take() else {
                panic!("mpsc::Send polled after completion");
            };
            match this.acquire.poll_acquire(cx) {
                Poll::Ready(Ok(permit)) => {
                    if this.chan.borrow().rx_closed {
                        // Closed between the grant and this poll.
                        return Poll::Ready(Err(SendError(value)));
                    }
                    permit.forget();
                    push(this.chan, value);
                    Poll::Ready(Ok(()))
                }
                Poll::Ready(Err(SemClosed)) => Poll::Ready(Err(SendError(value))),
                Poll::Pending => {
                    this.value = Some(value);
                    Poll::Pending
                }
            }
        }
    }

    /// `Send` never pins its value (it is only moved in and out of an
    /// `Option`) and holds no self-reference, so it is `Unpin` for every `T`.
    impl<T> Unpin for Send<'_, T> {}

    impl<T> Receiver<T> {
        /// The next value, or `None` once every sender is dropped and the
        /// queue is empty. Frees one slot for the senders.
        pub fn recv(&mut self) -> Recv<'_, T> {
            Recv { chan: &self.chan }
        }

        /// The next value if one is queued.
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            try_recv(&self.chan)
        }

        /// Values queued now.
        pub fn len(&self) -> usize {
            self.chan.borrow().queue.len()
        }

        /// Whether no value is queued.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            close_rx(&self.chan);
        }
    }

    macro_rules! debug_named {
        ($($ty:ident),*) => {$(
            impl<T> fmt::Debug for $ty<T> {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.debug_struct(concat!("mpsc::", stringify!($ty))).finish_non_exhaustive()
                }
            }
        )*};
    }
    debug_named!(UnboundedSender, UnboundedReceiver, Sender, Receiver);
}
