//! Cost of `FlashArray::submit` in host time. The emulator's budget is at
//! least 3 million 4 KiB commands per host second in total, so the model must
//! stay around 100 ns per command. This test prints the cost; it asserts only
//! a loose bound because test builds are not fully optimized.

use std::time::Instant;

use zns_sim::timing::{FlashArray, HostStack, MediaOp, TimingProfile};

#[test]
fn submit_cost_per_command() {
    let path = format!(
        "{}/tests/fixtures/zn540_timing.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let p: TimingProfile = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut fa = FlashArray::new(&p).unwrap();
    let n = 1_000_000u64;
    let mut offs = [0u64; 14];
    let mut x = 7u64;
    let mut t = 0u64;
    let mut sink = 0u64;
    let start = Instant::now();
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let z = (i % 14) as usize;
        let op = if i % 2 == 0 {
            offs[z] = (offs[z] + 4096) % p.zone_capacity_bytes;
            MediaOp::Write {
                ns: 1,
                zone: z as u32,
                zone_offset_bytes: offs[z],
                bytes: 4096,
                implicit_open: false,
                zrwa: false,
                fua: false,
            }
        } else {
            MediaOp::Read {
                ns: 1,
                lba_offset_bytes: (x % (1 << 38)) & !4095,
                bytes: 4096,
            }
        };
        sink ^= fa.submit(t, HostStack::Spdk, &op);
        t += 3_000;
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "submit: {ns:.0} ns per 4 KiB command (debug-assertions: {})",
        cfg!(debug_assertions)
    );
    assert!(sink != 1);
    let bound = if cfg!(debug_assertions) {
        3_000.0
    } else {
        300.0
    };
    assert!(ns < bound, "{ns} ns per submit");
}
