//! Shared by the real-device tests: which devices to use (environment
//! variables the guest harness sets), skipping politely when there are none,
//! and per-block test data keyed by LBA.
#![allow(dead_code)]

use std::path::PathBuf;

/// Set to 1 (the guest harness does) to make a missing device a failure
/// instead of a skip.
pub const REQUIRE_VAR: &str = "ZNSKIT_REQUIRE_LINUX_DEV";

/// The devices in `var` (space or comma separated), or None after printing
/// why the test is skipped. Panics when the devices are required.
pub fn devices(var: &str, test: &str) -> Option<Vec<PathBuf>> {
    let list: Vec<PathBuf> = std::env::var(var)
        .unwrap_or_default()
        .split([' ', ','])
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect();
    if list.is_empty() {
        if std::env::var(REQUIRE_VAR).as_deref() == Ok("1") {
            panic!("{test}: {var} is not set but {REQUIRE_VAR}=1");
        }
        eprintln!(
            "{test}: skipped: set {var} to a zoned block device (scripts/guest-test does, inside a QEMU guest)"
        );
        return None;
    }
    Some(list)
}

/// An expected value from the environment (`ZNSKIT_EXPECT_<NAME>`), if set.
pub fn expect(name: &str) -> Option<u64> {
    std::env::var(format!("ZNSKIT_EXPECT_{name}"))
        .ok()
        .and_then(|v| v.parse().ok())
}

/// `nlb` blocks of `lba_bytes` whose content names the LBA and a tag.
pub fn pattern(slba: u64, nlb: u64, lba_bytes: usize, tag: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(nlb as usize * lba_bytes);
    for b in 0..nlb {
        let lba = slba + b;
        for w in 0..(lba_bytes / 8) as u64 {
            let v = lba
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(tag.wrapping_mul(1_000_003))
                .wrapping_add(w);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}
