//! Host cost of the FTL device in GC steady state: one simulated 4 KiB
//! random write (page map, greedy GC, timing of the host write and of the GC
//! work it triggers, the runtime) per element. Device: `tiny-ftl` (16 MiB,
//! 28 % OP, WAF ~2.3), filled and overwritten 4 times before measuring;
//! 16 writer tasks at QD1 each (16 outstanding).

// a benchmark measures host time (clippy.toml's determinism guardrails do not apply)
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use zns_core::{BlockDevice, IoFlags};
use zns_device::{Controller, ControllerOptions, EmulatedConventionalNs, Profile};
use zns_sim::Runtime;

const WRITES_PER_ITER: u64 = 100_000;
const TASKS: u64 = 16;

async fn random_writes(dev: &EmulatedConventionalNs, seed: u64, n: u64) {
    let buf = vec![0u8; 4096];
    let cap = dev.capacity_lbas();
    let mut x = seed;
    for _ in 0..n {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        dev.write((x >> 33) % cap, &buf, IoFlags::NONE)
            .await
            .unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let ctrl = Controller::new(
        &h,
        Profile::builtin("tiny-ftl").unwrap(),
        ControllerOptions::default(),
    )
    .unwrap();
    let dev = ctrl.conventional(1).unwrap();
    let cap = dev.capacity_lbas();
    rt.block_on(async {
        let buf = vec![0u8; 32 * 4096];
        for lba in (0..cap).step_by(32) {
            dev.write(lba, &buf, IoFlags::NONE).await.unwrap();
        }
        random_writes(&dev, 1, 4 * cap).await;
    });
    let mut g = c.benchmark_group("ftl_gc");
    g.throughput(Throughput::Elements(WRITES_PER_ITER));
    g.sample_size(10);
    g.bench_function("tiny_ftl_4k_randwrite_steady_state", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                let t0 = Instant::now();
                let tasks: Vec<_> = (0..TASKS)
                    .map(|k| {
                        let dev = dev.clone();
                        h.spawn(async move {
                            random_writes(&dev, i * 1000 + k + 7, WRITES_PER_ITER / TASKS).await
                        })
                    })
                    .collect();
                rt.block_on(async {
                    for t in tasks {
                        t.await;
                    }
                });
                total += t0.elapsed();
            }
            total
        })
    });
    g.finish();
    let s = dev.ftl_stats().unwrap();
    println!(
        "tiny-ftl after the bench: WAF {:.2}, {} victims, {} erases, page map {} KiB",
        s.waf(),
        s.gc_victims,
        s.erases,
        s.map_resident_bytes / 1024
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
