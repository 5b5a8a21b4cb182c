//! The sync primitives: Notify, oneshot, unbounded and bounded mpsc,
//! Semaphore — results, FIFO wake order and cancellation.

use std::cell::RefCell;
use std::rc::Rc;

use zns_sim::sync::{mpsc, oneshot, Notify, Semaphore};
use zns_sim::{Handle, JoinHandle, Runtime};

type Log = Rc<RefCell<Vec<String>>>;

fn run_all(rt: &mut Runtime, joins: Vec<JoinHandle<()>>) {
    rt.block_on(async move {
        for j in joins {
            j.await;
        }
    });
}

fn spawn_logged<F>(h: &Handle, log: &Log, name: String, fut: F) -> JoinHandle<()>
where
    F: std::future::Future<Output = ()> + 'static,
{
    let (log, h2) = (log.clone(), h.clone());
    h.spawn(async move {
        fut.await;
        log.borrow_mut().push(format!("{name}@{}", h2.now_ns()));
    })
}

#[test]
fn notify_one_wakes_waiters_in_fifo_order() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let log: Log = Rc::default();
    let notify = Notify::new();
    let mut joins = Vec::new();
    for i in 0..3 {
        let n = notify.clone();
        joins.push(spawn_logged(&h, &log, format!("w{i}"), async move {
            n.notified().await
        }));
    }
    let (h2, n) = (h.clone(), notify.clone());
    joins.push(h.spawn(async move {
        for _ in 0..3 {
            h2.sleep(10).await;
            n.notify_one();
        }
    }));
    run_all(&mut rt, joins);
    assert_eq!(*log.borrow(), ["w0@10", "w1@20", "w2@30"]);
}

#[test]
fn notify_one_without_waiter_stores_one_permit() {
    let mut rt = Runtime::new(1);
    let notify = Notify::new();
    notify.notify_one();
    notify.notify_one(); // permits do not accumulate
    let n = notify.clone();
    let h = rt.handle();
    let second_done = rt.block_on(async move {
        n.notified().await; // consumes the permit at once
        let second = h.spawn(async move { n.notified().await });
        h.sleep(100).await;
        second.is_finished()
    });
    assert!(!second_done);
}

#[test]
fn notify_waiters_wakes_all_current_waiters_only() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let log: Log = Rc::default();
    let notify = Notify::new();
    let mut joins = Vec::new();
    for i in 0..4 {
        let n = notify.clone();
        joins.push(spawn_logged(&h, &log, format!("w{i}"), async move {
            n.notified().await
        }));
    }
    let (h2, n) = (h.clone(), notify.clone());
    rt.block_on(async move {
        h2.sleep(5).await;
        n.notify_waiters();
        h2.yield_now().await;
    });
    run_all(&mut rt, joins);
    assert_eq!(*log.borrow(), ["w0@5", "w1@5", "w2@5", "w3@5"]);
    // No permit was stored: a new waiter blocks.
    let n = notify.clone();
    let h2 = h.clone();
    let late = h.spawn(async move { n.notified().await });
    rt.block_on(async move { h2.sleep(10).await });
    assert!(!late.is_finished());
}

#[test]
fn a_dropped_notified_passes_its_notification_on() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let notify = Notify::new();
    let n = notify.clone();
    let first = h.spawn(async move { n.notified().await });
    let n = notify.clone();
    let second = h.spawn(async move { n.notified().await });
    let h2 = h.clone();
    rt.block_on(async move {
        h2.yield_now().await; // both waiting
        notify.notify_one(); // granted to `first`...
        first.abort(); // ...which is dropped before it sees it
        h2.yield_now().await;
        assert!(
            second.is_finished(),
            "the notification moved to the next waiter"
        );
    });
}

#[test]
fn oneshot_delivers_and_reports_a_dropped_sender() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let (tx, rx) = oneshot::channel::<u32>();
    let (tx2, rx2) = oneshot::channel::<u32>();
    let h2 = h.clone();
    drop(h.spawn(async move {
        h2.sleep(50).await;
        tx.send(7).unwrap();
        drop(tx2);
    }));
    let (a, b, t) = rt.block_on(async move { (rx.await, rx2.await, h.now_ns()) });
    assert_eq!(a, Ok(7));
    assert_eq!(b, Err(oneshot::RecvError));
    assert_eq!(t, 50);

    let (tx, rx) = oneshot::channel::<u32>();
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send(1), Err(1));

    let (tx, mut rx) = oneshot::channel::<u32>();
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Empty));
    tx.send(3).unwrap();
    assert_eq!(rx.try_recv(), Ok(3));
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
}

#[test]
fn unbounded_channel_is_fifo_and_ends_when_senders_drop() {
    let mut rt = Runtime::new(1);
    // the producers' sleeps tie: registration order, whatever ZNS_SHUFFLE_TIES says
    rt.set_shuffle_ties(None);
    let h = rt.handle();
    let (tx, mut rx) = mpsc::unbounded_channel::<(u32, u32)>();
    for p in 0..3u32 {
        let (tx, h2) = (tx.clone(), h.clone());
        drop(h.spawn(async move {
            for i in 0..4 {
                h2.sleep(10).await;
                tx.send((p, i)).unwrap();
            }
        }));
    }
    drop(tx);
    let got = rt.block_on(async move {
        let mut got = Vec::new();
        while let Some(v) = rx.recv().await {
            got.push(v);
        }
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Disconnected));
        got
    });
    let expect: Vec<(u32, u32)> = (0..4).flat_map(|i| (0..3).map(move |p| (p, i))).collect();
    assert_eq!(got, expect);

    let (tx, rx) = mpsc::unbounded_channel::<u8>();
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send(1).unwrap_err().0, 1);
}

#[test]
fn bounded_channel_applies_backpressure_in_sender_fifo_order() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let log: Log = Rc::default();
    let (tx, mut rx) = mpsc::channel::<u32>(2);
    let mut joins = Vec::new();
    for s in 0..4u32 {
        let tx = tx.clone();
        joins.push(spawn_logged(&h, &log, format!("sent{s}"), async move {
            tx.send(s).await.unwrap();
        }));
    }
    assert_eq!(tx.capacity(), 2, "nothing sent until the tasks run");
    drop(tx);
    let (h2, log2) = (h.clone(), log.clone());
    joins.push(h.spawn(async move {
        h2.sleep(100).await;
        while let Some(v) = rx.recv().await {
            log2.borrow_mut().push(format!("recv{v}@{}", h2.now_ns()));
            h2.sleep(10).await;
        }
    }));
    run_all(&mut rt, joins);
    assert_eq!(
        *log.borrow(),
        [
            "sent0@0",
            "sent1@0", // fill the capacity
            "recv0@100",
            "sent2@100", // each receive admits the next sender in order
            "recv1@110",
            "sent3@110",
            "recv2@120",
            "recv3@130",
        ]
    );
}

#[test]
fn bounded_send_fails_when_receiver_drops_while_waiting() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let (tx, rx) = mpsc::channel::<u32>(1);
    tx.try_send(1).unwrap();
    assert!(matches!(tx.try_send(2), Err(mpsc::TrySendError::Full(2))));
    let tx2 = tx.clone();
    let waiting = h.spawn(async move { tx2.send(3).await.map_err(|e| e.0) });
    let h2 = h.clone();
    let r = rt.block_on(async move {
        h2.sleep(5).await;
        drop(rx);
        waiting.await
    });
    assert_eq!(r, Err(3));
    assert!(matches!(tx.try_send(4), Err(mpsc::TrySendError::Closed(4))));
}

#[test]
fn semaphore_is_fifo_fair_and_permits_release_on_drop() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let log: Log = Rc::default();
    let sem = Semaphore::new(2);
    let mut joins = Vec::new();
    for (i, want) in [(0, 1usize), (1, 2), (2, 1), (3, 1)] {
        let (sem, h2, log2) = (sem.clone(), h.clone(), log.clone());
        joins.push(h.spawn(async move {
            let permit = sem.acquire_many(want).await;
            assert_eq!(permit.permits(), want);
            log2.borrow_mut().push(format!("got{i}@{}", h2.now_ns()));
            h2.sleep(100).await;
        }));
    }
    run_all(&mut rt, joins);
    // t0 takes 1 of 2; t1 wants 2 and waits; t2 and t3 queue behind t1
    // even though one permit is free (strict FIFO).
    assert_eq!(
        *log.borrow(),
        ["got0@0", "got1@100", "got2@200", "got3@200"]
    );
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn semaphore_try_acquire_add_permits_and_cancelled_waiters() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let sem = Semaphore::new(1);
    let held = sem.try_acquire().unwrap();
    assert!(sem.try_acquire().is_none());
    // A waiter for 3 permits that gets 1 granted and is then cancelled
    // must return that permit.
    let s = sem.clone();
    let big = h.spawn(async move {
        let _p = s.acquire_many(3).await;
    });
    let s = sem.clone();
    let small = h.spawn(async move {
        let _p = s.acquire().await;
    });
    let h2 = h.clone();
    rt.block_on(async move {
        h2.yield_now().await;
        drop(held); // 1 permit -> partially granted to `big`
        h2.yield_now().await;
        assert_eq!(sem.available_permits(), 0);
        assert!(!small.is_finished(), "small waits behind big");
        big.abort(); // its granted permit moves on to `small`
        h2.yield_now().await;
        assert!(small.is_finished());
        assert_eq!(sem.available_permits(), 1);
        sem.add_permits(2);
        assert_eq!(sem.try_acquire_many(3).map(|p| p.permits()), Some(3));
        let p = sem.try_acquire().unwrap();
        p.forget();
        assert_eq!(sem.available_permits(), 2);
    });
}

#[test]
fn channel_ping_pong_advances_time_deterministically() {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let (to_b, mut b_rx) = mpsc::unbounded_channel::<u64>();
    let (to_a, mut a_rx) = mpsc::unbounded_channel::<u64>();
    let h2 = h.clone();
    drop(h.spawn(async move {
        while let Some(v) = b_rx.recv().await {
            h2.sleep(3).await;
            if to_a.send(v + 1).is_err() {
                break;
            }
        }
    }));
    let h2 = h.clone();
    let v = rt.block_on(async move {
        let mut v = 0;
        for _ in 0..1000 {
            to_b.send(v).unwrap();
            v = a_rx.recv().await.unwrap();
            h2.sleep(2).await;
        }
        v
    });
    assert_eq!(v, 1000);
    assert_eq!(rt.now_ns(), 5_000);
}
