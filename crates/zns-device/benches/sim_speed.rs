//! Simulation speed of the emulated ZN540 with the `none` data store: how many
//! simulated 4 KiB commands one host core runs per second (criterion reports
//! it as elements/s), and the memory the device holds (printed once, measured
//! by a counting allocator).
//!
//! Workload: 14 writer tasks (one per open zone, QD1 each, SPDK-like stack)
//! and 50 random-reader tasks — 64 commands outstanding.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use zns_core::{IoFlags, ZonedDevice};
use zns_device::{ControllerOptions, EmulatedZns, Profile, StoreKind};
use zns_sim::Runtime;

#[path = "../tests/support/counting_alloc.rs"]
mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

const COMMANDS: u64 = 1_000_000;
const WRITERS: u64 = 14;
const READERS: u64 = 50;

fn run(commands: u64) -> u64 {
    let mut rt = Runtime::new(1);
    let h = rt.handle();
    let dev = EmulatedZns::from_profile(
        &h,
        Profile::builtin("zn540").unwrap(),
        ControllerOptions::default(),
    )
    .unwrap();
    let per_task = commands / (WRITERS + READERS);
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let dev = dev.clone();
        tasks.push(h.spawn(async move {
            let buf = vec![0u8; 4096];
            let start = w * dev.config().zone_size_lbas;
            for i in 0..per_task {
                dev.write(start + i, &buf, IoFlags::NONE).await.unwrap();
            }
        }));
    }
    for r in 0..READERS {
        let dev = dev.clone();
        tasks.push(h.spawn(async move {
            let mut buf = vec![0u8; 4096];
            let total = dev.config().total_lbas();
            let mut lba = r * 7_919;
            for _ in 0..per_task {
                lba = (lba * 6_364_136_223_846_793_005 + 1_442_695_040_888_963_407) % total;
                dev.read(lba, &mut buf).await.unwrap();
            }
        }));
    }
    rt.block_on(async {
        for t in tasks {
            t.await;
        }
    });
    per_task * (WRITERS + READERS)
}

fn memory_report() {
    let before = counting_alloc::live_bytes();
    let rt = Runtime::new(1);
    let dev = EmulatedZns::from_profile(
        &rt.handle(),
        Profile::builtin("zn540").unwrap(),
        ControllerOptions {
            store: StoreKind::None,
            ..Default::default()
        },
    )
    .unwrap();
    let held = counting_alloc::live_bytes() - before;
    eprintln!(
        "zn540 controller with the none store holds {:.2} MiB of heap",
        held as f64 / (1 << 20) as f64
    );
    drop(dev);
}

fn bench(c: &mut Criterion) {
    memory_report();
    let mut g = c.benchmark_group("sim_speed");
    g.sample_size(10);
    g.throughput(Throughput::Elements(
        COMMANDS / (WRITERS + READERS) * (WRITERS + READERS),
    ));
    g.bench_function("zn540_none_4k_mixed_qd64", |b| b.iter(|| run(COMMANDS)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
