//! Runtime throughput: the costs the device emulator pays per command.
//!
//! - `sleeps_64_tasks`: 64 tasks each doing 1_000_000 / 64 sequential
//!   `sleep(1000)` awaits (one timer register + fire + wake + poll each).
//! - `spawn_join_1m`: spawn 1M tiny tasks, then await every JoinHandle (1M
//!   tasks alive at once: every spawn takes a fresh slab slot and waker).
//! - `spawn_join_1m_batched64`: the same 1M tasks spawned and joined 64 at a
//!   time (the steady state: slots and wakers are reused).
//! - `ping_pong_100k`: two tasks bouncing a value over two unbounded channels.
//! - `command_like_1m`: 1M spawned tasks, at most 64 in flight, each awaiting
//!   one `sleep_until` (the emulator's per-command pattern).
//!
//! Throughput is reported in elements per second; run with
//! `cargo bench -p zns-sim --bench runtime -- --warm-up-time 1 --measurement-time 3`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use zns_sim::sync::{mpsc, Semaphore};
use zns_sim::Runtime;

const SLEEPS: u64 = 1_000_000;
const SLEEP_TASKS: u64 = 64;
const SPAWNS: u64 = 1_000_000;
const PING_PONGS: u64 = 100_000;
const COMMANDS: u64 = 1_000_000;

fn sleeps(total: u64, tasks: u64) -> u64 {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let per_task = total / tasks;
    let joins: Vec<_> = (0..tasks)
        .map(|_| {
            let h2 = h.clone();
            h.spawn(async move {
                for _ in 0..per_task {
                    h2.sleep(1_000).await;
                }
            })
        })
        .collect();
    rt.block_on(async move {
        for j in joins {
            j.await;
        }
    });
    rt.now_ns()
}

fn spawn_join(n: u64) -> u64 {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    rt.block_on(async move {
        let joins: Vec<_> = (0..n).map(|i| h.spawn(async move { i })).collect();
        let mut sum = 0;
        for j in joins {
            sum += j.await;
        }
        sum
    })
}

fn spawn_join_batched(n: u64, batch: u64) -> u64 {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    rt.block_on(async move {
        let mut joins = Vec::with_capacity(batch as usize);
        let mut sum = 0;
        for b in 0..n / batch {
            joins.extend((0..batch).map(|i| h.spawn(async move { b + i })));
            for j in joins.drain(..) {
                sum += j.await;
            }
        }
        sum
    })
}

fn ping_pong(rounds: u64) -> u64 {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let (to_b, mut b_rx) = mpsc::unbounded_channel::<u64>();
    let (to_a, mut a_rx) = mpsc::unbounded_channel::<u64>();
    drop(h.spawn(async move {
        while let Some(v) = b_rx.recv().await {
            if to_a.send(v + 1).is_err() {
                break;
            }
        }
    }));
    rt.block_on(async move {
        let mut v = 0;
        for _ in 0..rounds {
            to_b.send(v).unwrap();
            v = a_rx.recv().await.unwrap();
        }
        v
    })
}

fn command_like(n: u64, queue_depth: usize) -> u64 {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let slots = Semaphore::new(queue_depth);
    rt.block_on(async move {
        let mut busy_until_ns = 0u64;
        for i in 0..n {
            let permit = slots.acquire().await;
            // A toy timing model: a device that serves one command per 250 ns
            // plus a 10 µs fixed latency.
            busy_until_ns = busy_until_ns.max(h.now_ns()) + 250;
            let complete_ns = busy_until_ns + 10_000 + (i & 7);
            let h2 = h.clone();
            drop(h.spawn(async move {
                h2.sleep_until(complete_ns).await;
                drop(permit);
            }));
        }
        let _all = slots.acquire_many(queue_depth).await;
        h.now_ns()
    })
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("runtime");
    g.sample_size(10);

    g.throughput(Throughput::Elements(SLEEPS));
    g.bench_function("sleeps_64_tasks", |b| {
        b.iter(|| sleeps(SLEEPS, SLEEP_TASKS))
    });

    g.throughput(Throughput::Elements(SPAWNS));
    g.bench_function("spawn_join_1m", |b| b.iter(|| spawn_join(SPAWNS)));
    g.bench_function("spawn_join_1m_batched64", |b| {
        b.iter(|| spawn_join_batched(SPAWNS, 64))
    });

    g.throughput(Throughput::Elements(PING_PONGS));
    g.bench_function("ping_pong_100k", |b| b.iter(|| ping_pong(PING_PONGS)));

    g.throughput(Throughput::Elements(COMMANDS));
    g.bench_function("command_like_1m_qd64", |b| {
        b.iter(|| command_like(COMMANDS, 64))
    });

    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
