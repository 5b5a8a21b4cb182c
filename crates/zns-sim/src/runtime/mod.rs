//! The deterministic runtime: a single-threaded task executor over a virtual
//! clock in nanoseconds. It owns the run's seed and master RNG, the task slab,
//! the FIFO ready queue, the timer heap and the queue through which other OS
//! threads inject work.
//!
//! # Scheduling rules (the determinism contract)
//!
//! - Ready tasks run in FIFO order of their wake-ups; the future passed to
//!   [`Runtime::block_on`] is scheduled through the same queue.
//! - Virtual time only moves when no task is ready: the clock then jumps to
//!   the earliest timer deadline and every timer due at that instant fires, in
//!   registration order (ties broken by a sequence number).
//! - Test mode (`ZNS_SHUFFLE_TIES`, [`Runtime::set_shuffle_ties`]): timers
//!   due at the same instant fire in a random order instead, drawn from a
//!   stream seeded by the run's seed and the mode's own number. Two sleeps
//!   ending at the same nanosecond are a coincidence of the arithmetic, so
//!   code whose results (not just their timing) change under this mode
//!   depends on an order nothing promises. What the FIFO rule does promise
//!   stays: tasks spawned or woken at one instant start in that order (a
//!   submission queue, e.g. writes to one zone, relies on it), and the sync
//!   primitives stay FIFO-fair. The same seed and number give the same run.
//! - Nothing reads the wall clock except the paced mode ([`Runtime::paced`]),
//!   which only *waits* before advancing the clock so that virtual time never
//!   runs ahead of scaled wall time.
//! - When the main future cannot finish — no ready task, no timer, and (in
//!   virtual mode) no live [`Remote`] that could inject work — `block_on`
//!   panics with `deadlock: no runnable task and no pending timer (seed=…)`
//!   instead of hanging.
//!
//! Given the same seed and the same inputs, the sequence of polls, clock
//! values and RNG draws is bit-identical on every machine. Work injected by
//! other threads (through [`Remote`] or a waker invoked elsewhere) is the one
//! source of non-determinism, and arrives at scheduling points.
//!
//! # Structure
//!
//! - `task.rs`: the task slab (generation-checked ids), wakers, [`JoinHandle`].
//! - `timer.rs`: the timer heap, [`Sleep`] and [`YieldNow`].
//! - `remote.rs`: the cross-thread injection queue, [`Remote`] and the wall
//!   clock pacer.

mod remote;
mod task;
mod timer;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::rng::SimRng;

/// A pacing speed ([`Runtime::paced`]) that is not a finite number greater
/// than zero; it holds the value given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BadSpeed(pub f64);

impl std::fmt::Display for BadSpeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "paced runtime: speed must be a finite number > 0, got {}",
            self.0
        )
    }
}

impl std::error::Error for BadSpeed {}

pub use remote::Remote;
pub use task::{JoinHandle, TryJoin};
pub use timer::{Sleep, YieldNow};

use remote::{Pacer, Shared};
use task::{TaskId, TaskSlab, TaskWaker};
use timer::Timers;

thread_local! {
    /// The runtime whose `block_on` is running on this thread, if any: the
    /// fast path for wakes issued on the runtime's own thread.
    static CURRENT: RefCell<Option<Rc<Core>>> = const { RefCell::new(None) };
}

/// The executor. Single-threaded: it and its [`Handle`]s stay on the thread
/// that created them; other threads reach it through a [`Remote`].
pub struct Runtime {
    core: Rc<Core>,
}

/// A cheap (`Rc`) reference to a runtime, for spawning tasks, reading the
/// virtual clock, sleeping and drawing seeded randomness. Not `Send`.
#[derive(Clone)]
pub struct Handle {
    core: Rc<Core>,
}

/// The runtime's state, shared by the runtime, its handles and its futures.
pub(crate) struct Core {
    seed: u64,
    now_ns: Cell<u64>,
    tasks: RefCell<TaskSlab>,
    ready: RefCell<VecDeque<TaskId>>,
    timers: RefCell<Timers>,
    rng: RefCell<SimRng>,
    shared: Arc<Shared>,
    /// Generation of the current `block_on` call's main future.
    main_gen: Cell<u32>,
    main_scheduled: Cell<bool>,
    shut_down: Cell<bool>,
    pacer: Option<Pacer>,
    /// Reused buffer for the targets of timers firing at one instant.
    fired: RefCell<Vec<WakeTarget>>,
    /// The task being polled and its waker (the very `Waker` its `Context`
    /// borrows). Lets runtime futures recognise "wake the current task" and
    /// store its id instead of cloning the waker (no atomic refcounting on
    /// the timer path).
    current_task: Cell<Option<TaskId>>,
    current_waker: RefCell<Option<Waker>>,
    /// Test mode: the stream that orders timers due at the same instant
    /// (`None`: registration order).
    tie_shuffle: RefCell<Option<SimRng>>,
    /// The stream number behind `tie_shuffle`, for replay hints.
    tie_shuffle_stream: Cell<Option<u64>>,
}

/// Environment variable that turns on the tie-shuffling test mode for every
/// runtime created while it is set. A number picks the stream (different
/// numbers give different orders); any other text is hashed to one (`on`
/// works); unset, empty or `0` is off.
pub const SHUFFLE_TIES_ENV: &str = "ZNS_SHUFFLE_TIES";

/// Mixed into the seed of the tie-shuffling stream, so that it is not the
/// master RNG's stream (whose forks `Handle::rng` hands out).
const TIE_SHUFFLE_SALT: u64 = 0x7469_655f_7368_7566; // "tie_shuf"

/// The tie-shuffle stream number from `ZNS_SHUFFLE_TIES`, if the mode is on.
fn shuffle_ties_from_env() -> Option<u64> {
    let value = std::env::var(SHUFFLE_TIES_ENV).ok()?;
    shuffle_ties_stream(&value)
}

/// `ZNS_SHUFFLE_TIES`'s value as a stream number: `None` when off.
fn shuffle_ties_stream(value: &str) -> Option<u64> {
    let value = value.trim();
    match value.parse::<u64>() {
        Ok(0) => None,
        Ok(n) => Some(n),
        Err(_) if value.is_empty() => None,
        // FNV-1a of the text: stable across runs and machines
        Err(_) => Some(value.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })),
    }
}

/// Whom a runtime-internal wait wakes: the task that registered it (by id,
/// free to store and to wake), or an arbitrary waker.
pub(crate) enum WakeTarget {
    Task(TaskId),
    Waker(Waker),
}

impl WakeTarget {
    /// Whether waking `self` wakes the same task as `waker`.
    pub(crate) fn matches(&self, core: &Core, waker: &Waker) -> bool {
        match self {
            WakeTarget::Task(id) => core.current_target(waker) == Some(*id),
            WakeTarget::Waker(w) => w.will_wake(waker),
        }
    }
}

impl Runtime {
    /// A runtime in virtual mode: the clock starts at 0 ns and jumps from
    /// event to event as fast as the host can run the tasks.
    pub fn new(seed: u64) -> Runtime {
        Runtime::build(seed, None)
    }

    /// A runtime paced to the wall clock: one virtual second takes
    /// `1 / speed` wall seconds (`speed` 1.0 is real time). Virtual time never
    /// runs ahead of scaled wall time; it falls behind when the host cannot
    /// keep up. Each `block_on` call re-anchors virtual time to the wall
    /// clock, so time does not "catch up" over gaps between calls.
    ///
    /// `speed` must be a finite number greater than zero; anything else is an
    /// error naming the value.
    pub fn paced(seed: u64, speed: f64) -> Result<Runtime, BadSpeed> {
        if !(speed.is_finite() && speed > 0.0) {
            return Err(BadSpeed(speed));
        }
        precise_wakeups();
        Ok(Runtime::build(seed, Some(Pacer::new(speed))))
    }

    fn build(seed: u64, pacer: Option<Pacer>) -> Runtime {
        let rt = Runtime {
            core: Rc::new(Core {
                seed,
                now_ns: Cell::new(0),
                tasks: RefCell::new(TaskSlab::default()),
                ready: RefCell::new(VecDeque::with_capacity(64)),
                timers: RefCell::new(Timers::default()),
                rng: RefCell::new(SimRng::from_seed_u64(seed)),
                shared: Arc::new(Shared::default()),
                main_gen: Cell::new(0),
                main_scheduled: Cell::new(false),
                shut_down: Cell::new(false),
                pacer,
                fired: RefCell::new(Vec::new()),
                current_task: Cell::new(None),
                current_waker: RefCell::new(None),
                tie_shuffle: RefCell::new(None),
                tie_shuffle_stream: Cell::new(None),
            }),
        };
        rt.set_shuffle_ties(shuffle_ties_from_env());
        rt
    }

    /// Turns the tie-shuffling test mode on (`Some(n)`, n ≠ 0: a stream of
    /// its own, derived from the seed and n) or off (`None` or `Some(0)`),
    /// whatever `ZNS_SHUFFLE_TIES` says. See the module documentation.
    pub fn set_shuffle_ties(&self, stream: Option<u64>) {
        let stream = stream.filter(|&n| n != 0);
        *self.core.tie_shuffle.borrow_mut() = stream.map(|n| tie_shuffle_rng(self.core.seed, n));
        self.core.tie_shuffle_stream.set(stream);
    }

    /// Whether the tie-shuffling test mode is on.
    pub fn shuffles_ties(&self) -> bool {
        self.core.tie_shuffle.borrow().is_some()
    }

    /// A handle for spawning tasks and reading the clock.
    pub fn handle(&self) -> Handle {
        Handle {
            core: self.core.clone(),
        }
    }

    /// A `Send + Sync` handle through which other threads inject work.
    pub fn remote(&self) -> Remote {
        Remote::new(self.core.shared.clone())
    }

    /// The virtual clock, in nanoseconds since the runtime was created.
    pub fn now_ns(&self) -> u64 {
        self.core.now_ns.get()
    }

    /// The seed the runtime was created with.
    pub fn seed(&self) -> u64 {
        self.core.seed
    }

    /// In paced mode, makes waits of at most `spin_ns` wall nanoseconds
    /// busy-poll instead of sleeping: a sleeping thread wakes tens of
    /// microseconds late, as long as many device latencies. Burns a core
    /// while it spins; for external clients (the fio engine) that need
    /// microsecond pacing. 0 (the default) always sleeps; no effect in
    /// virtual mode.
    pub fn set_pacer_spin_ns(&self, spin_ns: u64) {
        if let Some(pacer) = &self.core.pacer {
            pacer.set_spin_ns(spin_ns);
        }
    }

    /// Whether this runtime is paced to the wall clock.
    pub fn is_paced(&self) -> bool {
        self.core.pacer.is_some()
    }

    /// The number of spawned tasks that have neither finished nor been
    /// aborted.
    pub fn live_tasks(&self) -> usize {
        self.core.tasks.borrow().live()
    }

    /// Runs `fut` and every spawned task until `fut` completes, advancing
    /// virtual time as needed, and returns its output. Tasks still pending
    /// when `fut` completes stay in the runtime and run again on the next
    /// call.
    ///
    /// # Panics
    ///
    /// On deadlock (see the module documentation), and when a task panics
    /// (the panic propagates; the runtime should then be dropped).
    pub fn block_on<F: Future>(&mut self, fut: F) -> F::Output {
        let core = &self.core;
        let _enter = EnterGuard::enter(core);
        if let Some(pacer) = &core.pacer {
            pacer.anchor(core.now_ns.get());
        }
        let mut fut = pin!(fut);
        let main_gen = core.main_gen.get().wrapping_add(1);
        core.main_gen.set(main_gen);
        let main_id = TaskId::main(main_gen);
        let mut main_waker = Waker::from(Arc::new(TaskWaker::new(main_id, core.shared.clone())));
        core.main_scheduled.set(true);
        core.ready.borrow_mut().push_back(main_id);
        loop {
            if core.shared.has_pending() {
                core.drain_remote();
            }
            let next = core.ready.borrow_mut().pop_front();
            match next {
                Some(id) if id.is_main() => {
                    if id.gen() != main_gen || !core.main_scheduled.get() {
                        continue;
                    }
                    core.main_scheduled.set(false);
                    let (poll, waker) =
                        core.poll_as(main_id, main_waker, |cx| fut.as_mut().poll(cx));
                    main_waker = waker;
                    if let Poll::Ready(out) = poll {
                        return out;
                    }
                }
                Some(id) => core.run_task(id),
                None => core.idle(),
            }
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.core.shutdown();
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("seed", &self.core.seed)
            .field("now_ns", &self.core.now_ns.get())
            .field("paced", &self.core.pacer.is_some())
            .finish()
    }
}

impl Handle {
    /// The virtual clock, in nanoseconds.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.core.now_ns.get()
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.core.seed
    }

    /// The earliest instant a timer is armed for, if any: the next time
    /// anything happens unless a task wakes another. A caller that reports
    /// progress at intervals can skip idle virtual time up to it instead of
    /// ticking through it.
    pub fn next_timer_ns(&self) -> Option<u64> {
        self.core.timers.borrow_mut().next_deadline_ns()
    }

    /// Spawns a task. It is queued behind the tasks already ready and runs
    /// inside `block_on`. Dropping the returned [`JoinHandle`] detaches the
    /// task. After the runtime is dropped the future is dropped unpolled and
    /// the handle reports an aborted task.
    pub fn spawn<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
    {
        task::spawn(&self.core, fut)
    }

    /// A future that completes once the clock reaches `deadline_ns`
    /// (immediately if it already has).
    #[inline]
    pub fn sleep_until(&self, deadline_ns: u64) -> Sleep {
        Sleep::new(self.core.clone(), deadline_ns)
    }

    /// A future that completes `duration_ns` after now.
    #[inline]
    pub fn sleep(&self, duration_ns: u64) -> Sleep {
        self.sleep_until(self.now_ns().saturating_add(duration_ns))
    }

    /// A future that lets every task already ready run once before it
    /// completes, without advancing the clock.
    pub fn yield_now(&self) -> YieldNow {
        YieldNow::default()
    }

    /// A new deterministic RNG stream, forked from the runtime's master RNG;
    /// each call gives the next stream.
    pub fn rng(&self) -> SimRng {
        self.core.rng.borrow_mut().fork()
    }

    /// A `Send + Sync` handle through which other threads inject work.
    pub fn remote(&self) -> Remote {
        Remote::new(self.core.shared.clone())
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("seed", &self.core.seed)
            .field("now_ns", &self.core.now_ns.get())
            .finish()
    }
}

fn tie_shuffle_rng(seed: u64, stream: u64) -> SimRng {
    SimRng::from_seed_u64(seed ^ TIE_SHUFFLE_SALT ^ stream.rotate_left(32))
}

impl Core {
    /// Schedules task `id` if it is live and not already scheduled. Called by
    /// wakers on the runtime's thread and for wakes drained from other threads.
    pub(crate) fn wake_local(&self, id: TaskId) {
        if id.is_main() {
            if id.gen() == self.main_gen.get() && !self.main_scheduled.get() {
                self.main_scheduled.set(true);
                self.ready.borrow_mut().push_back(id);
            }
            return;
        }
        if self.tasks.borrow_mut().mark_scheduled(id) {
            self.ready.borrow_mut().push_back(id);
        }
    }

    /// Runs `poll` with a `Context` built on `waker`, with `id` registered as
    /// the current task; returns the result and the waker.
    #[inline]
    fn poll_as<R>(
        &self,
        id: TaskId,
        waker: Waker,
        poll: impl FnOnce(&mut Context<'_>) -> R,
    ) -> (R, Waker) {
        // Tasks of one runtime are never polled re-entrantly, so the slot is
        // empty (or holds a leftover from a poll that panicked).
        drop(self.current_waker.replace(Some(waker)));
        self.current_task.set(Some(id));
        let result = {
            let current = self.current_waker.borrow();
            let waker = current.as_ref().expect("set just above");
            poll(&mut Context::from_waker(waker))
        };
        self.current_task.set(None);
        let waker = self
            .current_waker
            .take()
            .expect("only poll_as takes the current waker");
        (result, waker)
    }

    /// The id of the task being polled, if `waker` is its own waker.
    #[inline]
    pub(crate) fn current_target(&self, waker: &Waker) -> Option<TaskId> {
        let id = self.current_task.get()?;
        let current = self.current_waker.try_borrow().ok()?;
        current
            .as_ref()
            .is_some_and(|w| w.will_wake(waker))
            .then_some(id)
    }

    /// What to store to wake the task behind `waker` later.
    #[inline]
    pub(crate) fn wake_target(&self, waker: &Waker) -> WakeTarget {
        match self.current_target(waker) {
            Some(id) => WakeTarget::Task(id),
            None => WakeTarget::Waker(waker.clone()),
        }
    }

    #[inline]
    pub(crate) fn wake_target_now(&self, target: WakeTarget) {
        match target {
            WakeTarget::Task(id) => self.wake_local(id),
            WakeTarget::Waker(waker) => waker.wake(),
        }
    }

    /// Polls task `id` once, if it is still live and scheduled.
    fn run_task(&self, id: TaskId) {
        let Some((mut fut, waker)) = self.tasks.borrow_mut().take_for_poll(id) else {
            return;
        };
        let (poll, waker) = self.poll_as(id, waker, |cx| fut.as_mut().poll(cx));
        let done = poll.is_ready();
        let finished = self.tasks.borrow_mut().put_back(id, fut, waker, done);
        // Dropped outside the slab borrow: a future's destructor may wake or
        // spawn.
        drop(finished);
    }

    /// Nothing is ready: fire the next timers, wait for the wall clock (paced
    /// mode) or for work from other threads, or report a deadlock.
    fn idle(&self) {
        let next_deadline_ns = self.timers.borrow_mut().next_deadline_ns();
        match next_deadline_ns {
            Some(deadline_ns) => {
                if let Some(pacer) = &self.pacer {
                    if !pacer.wait_for(deadline_ns, &self.shared) {
                        // Work arrived from another thread before the deadline.
                        self.advance_to_wall(Some(deadline_ns));
                        return;
                    }
                }
                self.now_ns.set(deadline_ns.max(self.now_ns.get()));
                self.fire_due_timers();
            }
            None => {
                if !self.shared.wait_for_remote_work() {
                    self.deadlock();
                }
                self.advance_to_wall(None);
            }
        }
    }

    /// In paced mode, moves the clock to the scaled wall time, capped at the
    /// next timer deadline (so no timer is skipped).
    fn advance_to_wall(&self, cap_ns: Option<u64>) {
        if let Some(pacer) = &self.pacer {
            let mut target_ns = pacer.scaled_now_ns();
            if let Some(cap_ns) = cap_ns {
                target_ns = target_ns.min(cap_ns);
            }
            self.now_ns.set(target_ns.max(self.now_ns.get()));
        }
    }

    fn fire_due_timers(&self) {
        let mut fired = std::mem::take(&mut *self.fired.borrow_mut());
        self.timers
            .borrow_mut()
            .pop_due(self.now_ns.get(), &mut fired);
        if fired.len() > 1 {
            if let Some(rng) = self.tie_shuffle.borrow_mut().as_mut() {
                // Fisher-Yates: every order of the tied timers equally likely
                for i in (1..fired.len()).rev() {
                    let j = rng.below_u64(i as u64 + 1) as usize;
                    fired.swap(i, j);
                }
            }
        }
        for target in fired.drain(..) {
            self.wake_target_now(target);
        }
        *self.fired.borrow_mut() = fired;
    }

    fn drain_remote(self: &Rc<Self>) {
        let (woken, closures) = self.shared.take_pending();
        for id in woken {
            self.wake_local(id);
        }
        if !closures.is_empty() {
            let handle = Handle { core: self.clone() };
            for f in closures {
                f(&handle);
            }
        }
    }

    fn deadlock(&self) -> ! {
        let replay = match self.tie_shuffle_stream.get() {
            Some(n) => format!(" [{SHUFFLE_TIES_ENV}={n}]"),
            None => String::new(),
        };
        panic!(
            "deadlock: no runnable task and no pending timer (seed={}, now_ns={}, live_tasks={}){replay}; \
             the future passed to block_on waits for something that can never happen",
            self.seed,
            self.now_ns.get(),
            self.tasks.borrow().live()
        );
    }

    /// Drops every task and timer (their destructors may wake or spawn; spawns
    /// after shutdown are dropped at once) and closes the remote queue.
    fn shutdown(&self) {
        self.shut_down.set(true);
        loop {
            let futures = self.tasks.borrow_mut().take_all_futures();
            let timers = self.timers.borrow_mut().clear();
            if futures.is_empty() && timers.is_empty() {
                break;
            }
            drop(futures);
            drop(timers);
        }
        self.ready.borrow_mut().clear();
        let slab = std::mem::take(&mut *self.tasks.borrow_mut());
        drop(slab);
        let leftovers = self.shared.close();
        drop(leftovers);
    }
}

/// Installs a runtime as this thread's current one for the duration of a
/// `block_on` call, restoring the previous one afterwards (also on panic).
struct EnterGuard {
    prev: Option<Rc<Core>>,
}

impl EnterGuard {
    fn enter(core: &Rc<Core>) -> EnterGuard {
        let prev = CURRENT.with(|c| c.replace(Some(core.clone())));
        EnterGuard { prev }
    }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let prev = self.prev.take();
        let _ = CURRENT.try_with(|c| c.replace(prev));
    }
}

/// Wakes `id` through the runtime running on this thread if it is the one
/// `shared` belongs to. Returns false when the wake must take the
/// cross-thread path.
fn wake_on_current_thread(shared: &Arc<Shared>, id: TaskId) -> bool {
    CURRENT
        .try_with(|c| {
            let Ok(current) = c.try_borrow() else {
                return false;
            };
            match current.as_ref() {
                Some(core) if Arc::ptr_eq(&core.shared, shared) => {
                    core.wake_local(id);
                    true
                }
                _ => false,
            }
        })
        .unwrap_or(false)
}

/// A paced runtime runs on the thread that made it and waits there for the
/// wall clock; on Linux that thread asks for timer wakeups without the
/// default 50 µs slack: the waits are device latencies of tens of
/// microseconds.
fn precise_wakeups() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer (nanoseconds) and
    // applies to the calling thread only.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::shuffle_ties_stream;

    #[test]
    fn shuffle_ties_values() {
        assert_eq!(shuffle_ties_stream(""), None);
        assert_eq!(shuffle_ties_stream(" 0 "), None);
        assert_eq!(shuffle_ties_stream("3"), Some(3));
        let on = shuffle_ties_stream("on");
        assert!(on.is_some());
        assert_eq!(on, shuffle_ties_stream(" on"), "trimmed, and stable");
        assert_ne!(on, shuffle_ties_stream("yes"));
    }
}
