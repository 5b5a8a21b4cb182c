//! Runtime basics: virtual time, timer order and ties, spawn/join/abort,
//! yield, repeated block_on, seeded RNG streams, deadlock detection.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use rand::RngCore;
use zns_sim::Runtime;

type Log = Rc<RefCell<Vec<(u64, &'static str)>>>;

#[test]
fn virtual_time_starts_at_zero_and_jumps_to_timers() {
    let mut rt = Runtime::new(1);
    assert_eq!(rt.now_ns(), 0);
    let h = rt.handle();
    let t = rt.block_on(async move {
        h.sleep(1_000).await;
        assert_eq!(h.now_ns(), 1_000);
        h.sleep_until(5_000).await;
        assert_eq!(h.now_ns(), 5_000);
        // A deadline in the past completes at once, without moving time.
        h.sleep_until(10).await;
        h.sleep(0).await;
        h.now_ns()
    });
    assert_eq!(t, 5_000);
    assert_eq!(rt.now_ns(), 5_000);
}

#[test]
fn a_day_of_virtual_time_costs_nothing() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    rt.block_on(async move { h.sleep(86_400 * 1_000_000_000).await });
    assert_eq!(rt.now_ns(), 86_400 * 1_000_000_000);
}

#[test]
fn timers_fire_in_deadline_order_and_ties_in_registration_order() {
    let mut rt = Runtime::new(1);
    rt.set_shuffle_ties(None); // registration order, whatever ZNS_SHUFFLE_TIES says
    let h = rt.handle();
    let log: Log = Rc::default();
    let deadlines = [
        (300, "c"),
        (100, "a1"),
        (200, "b"),
        (100, "a2"),
        (100, "a3"),
        (300, "c2"),
    ];
    let mut joins = Vec::new();
    for (deadline, name) in deadlines {
        let (h2, log) = (h.clone(), log.clone());
        joins.push(h.spawn(async move {
            h2.sleep_until(deadline).await;
            log.borrow_mut().push((h2.now_ns(), name));
        }));
    }
    rt.block_on(async move {
        for j in joins {
            j.await;
        }
    });
    let expect = vec![
        (100, "a1"),
        (100, "a2"),
        (100, "a3"),
        (200, "b"),
        (300, "c"),
        (300, "c2"),
    ];
    assert_eq!(*log.borrow(), expect);
}

#[test]
fn ready_tasks_run_in_fifo_order_and_yield_requeues() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let log: Rc<RefCell<Vec<String>>> = Rc::default();
    for i in 0..3 {
        let (h2, log) = (h.clone(), log.clone());
        drop(h.spawn(async move {
            log.borrow_mut().push(format!("t{i} first"));
            h2.yield_now().await;
            log.borrow_mut().push(format!("t{i} second"));
        }));
    }
    let h2 = h.clone();
    rt.block_on(async move {
        for _ in 0..3 {
            h2.yield_now().await;
        }
    });
    assert_eq!(
        *log.borrow(),
        [
            "t0 first",
            "t1 first",
            "t2 first",
            "t0 second",
            "t1 second",
            "t2 second"
        ]
    );
    assert_eq!(rt.now_ns(), 0, "yielding never moves the clock");
}

#[test]
fn spawn_join_returns_output_and_nested_spawns_work() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let total = rt.block_on(async move {
        let mut joins = Vec::new();
        for i in 0..100u64 {
            let h2 = h.clone();
            joins.push(h.spawn(async move {
                let inner = h2.spawn(async move { i * 2 });
                h2.sleep(i).await;
                inner.await + 1
            }));
        }
        let mut total = 0;
        for j in joins {
            total += j.await;
        }
        total
    });
    assert_eq!(total, (0..100u64).map(|i| i * 2 + 1).sum::<u64>());
    assert_eq!(rt.live_tasks(), 0);
}

#[test]
fn detached_tasks_keep_running_and_pending_tasks_survive_block_on() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let log: Log = Rc::default();
    {
        let (h2, log) = (h.clone(), log.clone());
        drop(h.spawn(async move {
            h2.sleep(1_000).await;
            log.borrow_mut().push((h2.now_ns(), "late"));
        }));
    }
    let h2 = h.clone();
    rt.block_on(async move { h2.sleep(10).await });
    assert_eq!(rt.now_ns(), 10);
    assert!(log.borrow().is_empty());
    assert_eq!(rt.live_tasks(), 1);
    let h2 = h.clone();
    rt.block_on(async move { h2.sleep(2_000).await });
    assert_eq!(*log.borrow(), [(1_000, "late")]);
    assert_eq!(rt.live_tasks(), 0);
}

#[test]
fn abort_cancels_a_sleeping_task_and_drops_its_timer() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let log: Log = Rc::default();
    let (h2, log2) = (h.clone(), log.clone());
    let victim = h.spawn(async move {
        h2.sleep(1_000_000).await;
        log2.borrow_mut().push((h2.now_ns(), "victim ran"));
        7
    });
    let h2 = h.clone();
    let result = rt.block_on(async move {
        h2.sleep(100).await;
        assert!(!victim.is_finished());
        victim.abort();
        assert!(victim.is_finished());
        victim.try_join().await
    });
    assert_eq!(result, None);
    assert!(log.borrow().is_empty());
    assert_eq!(rt.live_tasks(), 0);
    assert_eq!(
        rt.now_ns(),
        100,
        "the aborted task's timer must not keep the clock going"
    );
}

#[test]
fn a_task_can_abort_itself_and_abort_after_finish_is_harmless() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let slot: Rc<RefCell<Option<zns_sim::JoinHandle<()>>>> = Rc::default();
    let (h2, slot2) = (h.clone(), slot.clone());
    let me = h.spawn(async move {
        h2.yield_now().await;
        if let Some(me) = slot2.borrow().as_ref() {
            me.abort();
        }
        h2.yield_now().await;
        unreachable!("aborted tasks are not polled again");
    });
    *slot.borrow_mut() = Some(me);
    let done = h.spawn(async { 5 });
    let h2 = h.clone();
    let got = rt.block_on(async move {
        for _ in 0..4 {
            h2.yield_now().await;
        }
        let me = slot.borrow_mut().take().unwrap();
        assert!(me.is_finished());
        let r = me.try_join().await;
        assert!(done.is_finished());
        done.abort(); // finished: no effect
        (r, done.await)
    });
    assert_eq!(got, (None, 5));
}

#[test]
#[should_panic(expected = "awaited the JoinHandle of an aborted task")]
fn awaiting_an_aborted_task_panics_with_a_clear_message() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let h2 = h.clone();
    let j = h.spawn(async move { h2.sleep(10).await });
    j.abort();
    rt.block_on(j);
}

#[test]
#[should_panic(expected = "deadlock: no runnable task and no pending timer (seed=42")]
fn deadlock_panics_with_seed() {
    let mut rt = Runtime::new(42);
    let (_tx, rx) = zns_sim::sync::oneshot::channel::<()>();
    let h = rt.handle();
    let _stuck = h.spawn(async move {
        let _ = rx.await;
    });
    rt.block_on(std::future::pending::<()>());
}

#[test]
fn deadlock_message_names_seed_time_and_live_tasks() {
    let result = std::panic::catch_unwind(|| {
        let mut rt = Runtime::new(0xfeed);
        let h = rt.handle();
        rt.block_on(async move {
            h.sleep(123).await;
            std::future::pending::<()>().await
        });
    });
    let err = result.unwrap_err();
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.starts_with("deadlock: no runnable task and no pending timer (seed=65261, now_ns=123, live_tasks=0)"),
        "{msg}"
    );
}

#[test]
fn runtime_drop_releases_pending_tasks() {
    struct DropFlag(Rc<RefCell<bool>>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            *self.0.borrow_mut() = true;
        }
    }
    let dropped = Rc::new(RefCell::new(false));
    let join;
    {
        let mut rt = Runtime::new(1);
        let h = rt.handle();
        let flag = DropFlag(dropped.clone());
        let h2 = h.clone();
        join = h.spawn(async move {
            let _flag = flag;
            h2.sleep(1_000_000).await;
        });
        rt.block_on(async {});
        // A handle kept past the runtime must not keep the task alive.
        let late = h.clone();
        drop(rt);
        assert!(*dropped.borrow());
        let after = late.spawn(async { 1 });
        assert!(
            after.is_finished(),
            "spawns after shutdown are dropped at once"
        );
    }
    assert!(join.is_finished());
}

#[test]
fn rng_streams_are_seeded_forked_and_independent() {
    let draws = |seed: u64| {
        let rt = Runtime::new(seed);
        let h = rt.handle();
        let mut a = h.rng();
        let mut b = h.rng();
        (a.next_u64(), b.next_u64(), rt.seed(), h.seed())
    };
    let (a1, b1, s, hs) = draws(9);
    let (a2, b2, _, _) = draws(9);
    let (a3, _, _, _) = draws(10);
    assert_eq!((a1, b1), (a2, b2));
    assert_ne!(a1, b1, "each rng() call gives the next stream");
    assert_ne!(a1, a3);
    assert_eq!((s, hs), (9, 9));
}

#[test]
fn many_timers_with_cancellations_stay_consistent() {
    // Exercises the lazy-cancel path and heap compaction: most sleeps are
    // dropped before they fire (select-like races built by hand).
    let mut rt = Runtime::new(5);
    let h = rt.handle();
    let fired = rt.block_on(async move {
        let mut fired = 0u64;
        for i in 0..5_000u64 {
            let mut far = Box::pin(h.sleep(1_000_000 + i));
            // Poll the far sleep once so it registers a timer, then drop it.
            let waker = std::task::Waker::from(std::sync::Arc::new(NoopWaker));
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(far.as_mut().poll(&mut cx).is_pending());
            drop(far);
            h.sleep(1).await;
            fired += 1;
        }
        fired
    });
    assert_eq!(fired, 5_000);
    assert_eq!(rt.now_ns(), 5_000);
}

struct NoopWaker;

impl std::task::Wake for NoopWaker {
    fn wake(self: std::sync::Arc<Self>) {}
}

/// The tie-order log of `tasks` sleepers: task `i` sleeps until
/// `(i % 3) * 100` ns, so every deadline is shared by several tasks.
fn tie_order(rt: &mut Runtime, tasks: usize) -> Vec<(u64, usize)> {
    let h = rt.handle();
    let log: Rc<RefCell<Vec<(u64, usize)>>> = Rc::default();
    let mut joins = Vec::new();
    for i in 0..tasks {
        let (h2, log) = (h.clone(), log.clone());
        joins.push(h.spawn(async move {
            h2.sleep_until((i as u64 % 3) * 100).await;
            log.borrow_mut().push((h2.now_ns(), i));
        }));
    }
    rt.block_on(async move {
        for j in joins {
            j.await;
        }
    });
    let out = log.borrow().clone();
    out
}

#[test]
fn tie_shuffling_permutes_same_instant_events_only_and_replays() {
    let fifo = {
        let mut rt = Runtime::new(7);
        rt.set_shuffle_ties(None);
        assert!(!rt.shuffles_ties());
        tie_order(&mut rt, 24)
    };
    let shuffled = |stream: u64| {
        let mut rt = Runtime::new(7);
        rt.set_shuffle_ties(Some(stream));
        assert!(rt.shuffles_ties());
        tie_order(&mut rt, 24)
    };
    let a = shuffled(1);
    // time still orders events: only ties move
    let times: Vec<u64> = a.iter().map(|e| e.0).collect();
    let mut sorted = times.clone();
    sorted.sort_unstable();
    assert_eq!(times, sorted, "shuffling must not reorder events in time");
    let mut tasks: Vec<usize> = a.iter().map(|e| e.1).collect();
    tasks.sort_unstable();
    assert_eq!(tasks, (0..24).collect::<Vec<_>>(), "every task runs once");
    assert_ne!(a, fifo, "24 tasks over 3 instants kept the FIFO order");
    // same seed and stream: the same order; another stream: another order
    assert_eq!(a, shuffled(1));
    assert_ne!(a, shuffled(2));
    // stream 0 is off
    let mut rt = Runtime::new(7);
    rt.set_shuffle_ties(Some(0));
    assert!(!rt.shuffles_ties());
    assert_eq!(tie_order(&mut rt, 24), fifo);
}

#[test]
fn a_deadlock_in_the_tie_shuffling_mode_names_its_stream() {
    let result = std::panic::catch_unwind(|| {
        let mut rt = Runtime::new(3);
        rt.set_shuffle_ties(Some(5));
        rt.block_on(std::future::pending::<()>());
    });
    let err = result.unwrap_err();
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("(seed=3, now_ns=0, live_tasks=0) [ZNS_SHUFFLE_TIES=5];"),
        "{msg}"
    );
}
