//! Shared by the real-device tests: which devices to use (environment
//! variables the guest harness sets) and skipping politely when there are
//! none. (Per-block test data keyed by LBA: `zns_conformance::pattern`.)
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
