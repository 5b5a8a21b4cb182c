//! The runtime's door to other OS threads: the mutex-protected queue of
//! injected closures and cross-thread wakes ([`Shared`]), the [`Remote`]
//! handle, and the wall-clock [`Pacer`] of paced mode.
//!
//! This is the only module of zns-sim that reads the wall clock, and only for
//! pacing; every such line is marked `// wall-clock ok`.
//!
//! Invariants:
//! - `pending` is set (Release) whenever the queue becomes non-empty, under
//!   the lock, and cleared under the lock when the runtime drains it, so the
//!   runtime's lock-free check at each scheduling point never misses work.
//! - `remotes` counts live [`Remote`] values. In virtual mode an idle
//!   runtime waits for injected work only while it is non-zero; otherwise it
//!   reports a deadlock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
#[allow(clippy::disallowed_types)] // wall-clock ok: only the pacer uses Instant
use std::time::{Duration, Instant};

use super::task::TaskId;
use super::Handle;

/// A closure injected by another thread, run on the runtime's thread.
pub(crate) type RemoteFn = Box<dyn FnOnce(&Handle) + Send + 'static>;

#[derive(Default)]
struct Queue {
    woken: Vec<TaskId>,
    closures: Vec<RemoteFn>,
    remotes: usize,
    closed: bool,
}

impl Queue {
    fn has_work(&self) -> bool {
        !self.woken.is_empty() || !self.closures.is_empty()
    }
}

/// State shared between a runtime and the threads that can reach it.
#[derive(Default)]
pub(crate) struct Shared {
    pending: AtomicBool,
    queue: Mutex<Queue>,
    signal: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves the queue consistent (every
        // critical section is a push, a take or a counter update).
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// A wake from another thread (or from the runtime's thread outside
    /// `block_on`).
    pub(crate) fn wake_from_afar(&self, id: TaskId) {
        let mut queue = self.lock();
        if queue.closed {
            return;
        }
        queue.woken.push(id);
        self.pending.store(true, Ordering::Release);
        drop(queue);
        self.signal.notify_one();
    }

    /// Takes everything injected so far, in arrival order.
    pub(crate) fn take_pending(&self) -> (Vec<TaskId>, Vec<RemoteFn>) {
        let mut queue = self.lock();
        self.pending.store(false, Ordering::Release);
        (
            std::mem::take(&mut queue.woken),
            std::mem::take(&mut queue.closures),
        )
    }

    /// Idle with no timer armed: blocks until work is injected (true) or
    /// returns false at once when no live `Remote` could ever inject any.
    pub(crate) fn wait_for_remote_work(&self) -> bool {
        let mut queue = self.lock();
        loop {
            if queue.has_work() {
                return true;
            }
            if queue.remotes == 0 {
                return false;
            }
            queue = self
                .signal
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Marks the runtime gone and returns the closures it will never run.
    pub(crate) fn close(&self) -> Vec<RemoteFn> {
        let mut queue = self.lock();
        queue.closed = true;
        queue.woken.clear();
        self.pending.store(false, Ordering::Release);
        std::mem::take(&mut queue.closures)
    }
}

/// A `Send + Sync + Clone` handle that lets other OS threads inject work
/// into a runtime (for external clients such as a fio engine).
///
/// In paced mode an injected closure wakes a runtime that is waiting on the
/// wall clock, and runs with the clock moved to the scaled wall time. In
/// virtual mode it is picked up at the next scheduling point; an idle virtual
/// runtime with no timer armed waits for injected work as long as a `Remote`
/// is alive (so drop every `Remote` you no longer need: a live one turns a
/// deadlock panic into a wait).
pub struct Remote {
    shared: Arc<Shared>,
}

impl Remote {
    pub(crate) fn new(shared: Arc<Shared>) -> Remote {
        shared.lock().remotes += 1;
        Remote { shared }
    }

    /// Queues `f` to run on the runtime's thread with its [`Handle`] (it can
    /// spawn tasks there). Dropped unrun if the runtime is already gone.
    pub fn spawn<F>(&self, f: F)
    where
        F: FnOnce(&Handle) + Send + 'static,
    {
        let mut queue = self.shared.lock();
        if queue.closed {
            drop(queue);
            drop(f);
            return;
        }
        queue.closures.push(Box::new(f));
        self.shared.pending.store(true, Ordering::Release);
        drop(queue);
        self.shared.signal.notify_one();
    }

    /// Whether the runtime has been dropped (spawned closures are then
    /// discarded).
    pub fn is_closed(&self) -> bool {
        self.shared.lock().closed
    }
}

impl Clone for Remote {
    fn clone(&self) -> Remote {
        Remote::new(self.shared.clone())
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        queue.remotes -= 1;
        let last = queue.remotes == 0;
        drop(queue);
        if last {
            // An idle runtime waiting for injected work must now re-check.
            self.shared.signal.notify_one();
        }
    }
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Maps virtual time to the wall clock in paced mode: the anchor ties a
/// virtual instant to a wall instant, and one virtual nanosecond takes
/// `1 / speed` wall nanoseconds.
///
/// The one place in znskit allowed to read the wall clock: real-time mode
/// exists so that external programs see device latencies in real time.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
pub(crate) struct Pacer {
    speed: f64,
    anchor: std::cell::Cell<Option<(Instant, u64)>>, // wall-clock ok
    /// Waits shorter than this busy-poll instead of sleeping (0: always
    /// sleep).
    spin: std::cell::Cell<Duration>,
}

#[allow(clippy::disallowed_methods, clippy::disallowed_types)] // wall-clock ok: paced mode
impl Pacer {
    pub(crate) fn new(speed: f64) -> Pacer {
        Pacer {
            speed,
            anchor: std::cell::Cell::new(None),
            spin: std::cell::Cell::new(Duration::ZERO),
        }
    }

    /// Waits of at most `spin_ns` (wall) busy-poll the clock and the
    /// injection queue instead of sleeping on the condition variable.
    pub(crate) fn set_spin_ns(&self, spin_ns: u64) {
        self.spin.set(Duration::from_nanos(spin_ns));
    }

    /// Ties virtual instant `now_ns` to the current wall instant.
    pub(crate) fn anchor(&self, now_ns: u64) {
        self.anchor.set(Some((Instant::now(), now_ns))); // wall-clock ok
    }

    fn anchor_or_now(&self, now_ns: u64) -> (Instant, u64) {
        match self.anchor.get() {
            Some(anchor) => anchor,
            None => {
                self.anchor(now_ns);
                self.anchor.get().expect("just anchored")
            }
        }
    }

    /// The wall instant at which virtual time reaches `virtual_ns`, rounded
    /// up so that virtual time never runs ahead.
    fn wall_instant_for(&self, virtual_ns: u64) -> Instant {
        let (wall, base_ns) = self.anchor_or_now(virtual_ns);
        let ahead_ns = virtual_ns.saturating_sub(base_ns);
        let wall_ns = (ahead_ns as f64 / self.speed).ceil();
        // Capped at ~146 years so that the Instant arithmetic cannot overflow.
        let wall_ns = wall_ns.min((1u64 << 62) as f64) as u64;
        wall + Duration::from_nanos(wall_ns) // wall-clock ok
    }

    /// The virtual instant that corresponds to the wall clock now.
    pub(crate) fn scaled_now_ns(&self) -> u64 {
        let (wall, base_ns) = self.anchor_or_now(0);
        let elapsed_ns = wall.elapsed().as_nanos() as f64; // wall-clock ok
        let ahead_ns = (elapsed_ns * self.speed).floor();
        let ahead_ns = if ahead_ns >= u64::MAX as f64 {
            u64::MAX
        } else {
            ahead_ns as u64
        };
        base_ns.saturating_add(ahead_ns)
    }

    /// Waits until the wall clock reaches virtual instant `deadline_ns`
    /// (true) or until another thread injects work (false). The last
    /// `spin` of the wait busy-polls: a sleeping thread wakes tens of
    /// microseconds late, which is as long as many device latencies.
    pub(crate) fn wait_for(&self, deadline_ns: u64, shared: &Shared) -> bool {
        let target = self.wall_instant_for(deadline_ns);
        let spin = self.spin.get();
        {
            let mut queue = shared.lock();
            loop {
                if queue.has_work() {
                    return false;
                }
                let now = Instant::now(); // wall-clock ok
                if now >= target {
                    return true;
                }
                let left = target - now;
                if left <= spin {
                    break;
                }
                queue = shared
                    .signal
                    .wait_timeout(queue, left - spin)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        loop {
            if shared.has_pending() {
                return false;
            }
            if Instant::now() >= target {
                // wall-clock ok
                return true;
            }
            // let other threads of this machine run (a fio job may be
            // what the device waits for), without a timed sleep
            std::thread::yield_now();
        }
    }
}
