//! Timing parameters of the repository's device profiles (`profiles/*.toml`),
//! the single copy of the calibration. Shared by the timing tests and
//! `benches/timing.rs`.
//!
//! A profile's `[timing]` table leaves out `zone_size_bytes` and
//! `zone_capacity_bytes`; as `zns_device::Profile` does, they are taken from
//! the first `[[namespace]]` with `kind = "zoned"` (`zone_size_lbas` ×
//! `lba_bytes`, `zone_capacity_lbas` × `lba_bytes`).

// Each test target compiles its own copy and uses only part of it.
#![allow(dead_code)]

use zns_sim::timing::TimingProfile;

/// The repository's device profiles.
pub const PROFILES_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles");

/// Profiles whose `[timing]` table the tests load.
pub const PROFILE_NAMES: [&str; 4] = ["zn540", "zn540-cns", "pm1731a", "tiny"];

/// `profiles/<name>.toml`'s `[timing]` table with the zone geometry filled in.
pub fn timing_table(name: &str) -> toml::Table {
    let path = format!("{PROFILES_DIR}/{name}.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut doc: toml::Table = text.parse().unwrap_or_else(|e| panic!("{path}: {e}"));
    let (size, cap) = {
        let zoned = doc
            .get("namespace")
            .and_then(toml::Value::as_array)
            .and_then(|nss| {
                nss.iter()
                    .find(|ns| ns.get("kind").and_then(toml::Value::as_str) == Some("zoned"))
            })
            .unwrap_or_else(|| panic!("{path}: no [[namespace]] with kind = \"zoned\""));
        let int = |key: &str| {
            zoned
                .get(key)
                .and_then(toml::Value::as_integer)
                .unwrap_or_else(|| panic!("{path}: zoned namespace lacks integer {key}"))
        };
        let lba = int("lba_bytes");
        (int("zone_size_lbas") * lba, int("zone_capacity_lbas") * lba)
    };
    let mut timing = match doc.remove("timing") {
        Some(toml::Value::Table(t)) => t,
        _ => panic!("{path}: no [timing] table"),
    };
    timing.insert("zone_size_bytes".into(), size.into());
    timing.insert("zone_capacity_bytes".into(), cap.into());
    timing
}

/// `profiles/<name>.toml`'s timing parameters.
pub fn profile(name: &str) -> TimingProfile {
    toml::Value::Table(timing_table(name))
        .try_into()
        .unwrap_or_else(|e| panic!("profiles/{name}.toml [timing]: {e}"))
}
