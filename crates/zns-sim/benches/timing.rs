//! Host cost of the timing model: `FlashArray::submit` per command.
//!
//! The emulator's budget is at least 3 million 4 KiB commands per host
//! second in total, so `submit` must stay around 100 ns per command.
//!
//! - `submit_mixed_4k/zn540`: 100_000 commands on a fresh ZN540 array
//!   (profiles/zn540.toml), alternating 4 KiB sequential writes over 14 open
//!   zones and 4 KiB random reads, one command every 3 µs of virtual time
//!   (~650 MiB/s of writes: the flash keeps up, the write buffer does not
//!   fill). The commands are generated before the measurement.
//!
//! Throughput is reported in commands per second; the time per command is
//! the iteration time / 100_000. Run with
//! `cargo bench -p zns-sim --bench timing -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use zns_sim::timing::{FlashArray, HostStack, MediaOp, TimingProfile};

#[path = "../tests/common/mod.rs"]
mod common;

const COMMANDS: u64 = 100_000;
const ZONES: u64 = 14;
const BYTES: u64 = 4096;
const INTERVAL_NS: u64 = 3_000;

/// Alternating sequential writes (round robin over `ZONES` zones) and
/// random reads over the first 256 GiB of LBA space.
fn mixed_ops(p: &TimingProfile, n: u64) -> Vec<MediaOp> {
    let mut offs = [0u64; ZONES as usize];
    let mut x = 7u64;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 2 == 0 {
                let z = ((i / 2) % ZONES) as usize;
                let off = offs[z];
                offs[z] = (off + BYTES) % p.zone_capacity_bytes;
                MediaOp::Write {
                    ns: 1,
                    zone: z as u32,
                    zone_offset_bytes: off,
                    bytes: BYTES,
                    implicit_open: false,
                    zrwa: false,
                    fua: false,
                }
            } else {
                MediaOp::Read {
                    ns: 1,
                    lba_offset_bytes: (x % (1 << 38)) & !(BYTES - 1),
                    bytes: BYTES,
                }
            }
        })
        .collect()
}

fn run(fa: &mut FlashArray, ops: &[MediaOp]) -> u64 {
    let mut t = 0u64;
    let mut sink = 0u64;
    for op in ops {
        sink ^= fa.submit(t, HostStack::Spdk, op);
        t += INTERVAL_NS;
    }
    sink
}

fn bench_submit(c: &mut Criterion) {
    let p = common::profile("zn540");
    let ops = mixed_ops(&p, COMMANDS);
    let mut g = c.benchmark_group("submit_mixed_4k");
    g.throughput(Throughput::Elements(COMMANDS));
    g.bench_function("zn540", |b| {
        b.iter_batched_ref(
            || FlashArray::new(&p).unwrap(),
            |fa| black_box(run(fa, black_box(&ops))),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench_submit);
criterion_main!(benches);
