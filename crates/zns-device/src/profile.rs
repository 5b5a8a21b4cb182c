//! Device profiles: what an emulated controller is — its namespaces (zoned and
//! conventional), power-loss policy and timing parameters — as TOML data.
//!
//! Built-in profiles (`zn540`, `zn540-cns`, `zn540-lbaf0`, `pm1731a`, `tiny`,
//! `sn540`, `sn640`, `tiny-ftl`) live in the
//! repository's `profiles/` directory and are compiled in; users can load their
//! own file or override any value with `key=value` paths (`--set
//! namespace.0.zone_count=64`, or the CLI shortcuts such as `--zones 64`).
//! Parsing rejects unknown keys and out-of-range values with a message that
//! names the field.

use serde::{Deserialize, Serialize};
use zns_core::ZonedConfig;
use zns_sim::timing::TimingProfile;

/// Why a profile could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    #[error("unknown profile '{0}' (built-in profiles: {list})", list = Profile::builtin_names().join(", "))]
    Unknown(String),
    #[error("profile {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("profile {origin}: {field}: {message}")]
    Invalid {
        origin: String,
        field: String,
        message: String,
    },
    #[error("override '{0}': {1}")]
    Override(String, String),
}

/// A conventional (randomly writable, NVM command set) namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConventionalConfig {
    /// Logical block size in bytes.
    pub lba_bytes: u32,
    /// Capacity in LBAs.
    pub capacity_lbas: u64,
    /// Largest transfer of one command (MDTS), in LBAs.
    pub max_transfer_lbas: u32,
    /// Present: the namespace is an SSD with a page-mapped FTL and
    /// device-side garbage collection (`crate::ftl`, docs/ftl.md); absent:
    /// a conventional namespace whose flash placement is not modelled (GC
    /// is not modelled either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ftl: Option<crate::ftl::FtlConfig>,
}

impl ConventionalConfig {
    /// This namespace with `factor` times its logical space and flash, for an
    /// experiment that needs a larger drive of the same kind. Without an FTL
    /// only the capacity grows. With one, the overprovisioning is lowered so
    /// that the spare the drive has beyond its GC's free-block reserve (a
    /// fixed number of erase units, `gc_start_free_blocks` per pool) stays
    /// the same share of the logical space: the steady state of the grown
    /// drive is the profile's (the correction a scaled-down profile such as
    /// `sn540-960g-mini` makes in the other direction).
    pub fn grown(&self, timing: &TimingProfile, factor: u64) -> Result<ConventionalConfig, String> {
        if factor == 0 {
            return Err("grow a namespace by a factor of at least 1".into());
        }
        let mut c = self.clone();
        c.capacity_lbas = self
            .capacity_lbas
            .checked_mul(factor)
            .ok_or_else(|| format!("capacity {} LBAs × {factor} overflows", self.capacity_lbas))?;
        let (Some(ftl), Some(geo)) = (&mut c.ftl, self.ftl_geometry(timing)?) else {
            return Ok(c);
        };
        let reserve = u128::from(ftl.gc_start_free_blocks)
            * u128::from(geo.dies)
            * u128::from(geo.slots_per_block());
        let logical = u128::from(geo.logical_units.max(1));
        let physical = u128::from(geo.physical_slots);
        // (physical' − reserve) / (logical × factor) = (physical − reserve) / logical
        let grown_physical = (physical.saturating_sub(reserve)) * u128::from(factor) + reserve;
        let ppm = (grown_physical * 1_000_000).div_ceil(logical * u128::from(factor));
        ftl.overprovisioning_ppm = (ppm.saturating_sub(1_000_000)) as u64;
        c.ftl_geometry(timing)?;
        Ok(c)
    }

    /// The FTL geometry of this namespace on the flash `timing` describes
    /// (None without an `[namespace.ftl]` table).
    pub fn ftl_geometry(
        &self,
        timing: &TimingProfile,
    ) -> Result<Option<crate::ftl::FtlGeometry>, String> {
        match &self.ftl {
            None => Ok(None),
            Some(f) => {
                if let Some(c) = &f.slc_cache {
                    if c.bits_per_cell != timing.pages_per_program {
                        return Err(format!(
                            "ftl.slc_cache.bits_per_cell = {}: must equal timing.pages_per_program ({}): \
                             a one-shot program writes one page per bit of the cell",
                            c.bits_per_cell, timing.pages_per_program
                        ));
                    }
                }
                f.geometry(
                    timing.total_dies(),
                    timing.program_unit_bytes(),
                    self.capacity_lbas.saturating_mul(u64::from(self.lba_bytes)),
                    self.lba_bytes,
                )
                .map(Some)
            }
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !self.lba_bytes.is_power_of_two() || !(512..=65536).contains(&self.lba_bytes) {
            return Err(format!(
                "lba_bytes = {}: must be a power of two in 512..=65536",
                self.lba_bytes
            ));
        }
        if self.capacity_lbas == 0 {
            return Err("capacity_lbas = 0: a namespace needs at least one LBA".into());
        }
        if self.max_transfer_lbas == 0 {
            return Err("max_transfer_lbas = 0: must allow at least one LBA per command".into());
        }
        Ok(())
    }
}

/// One namespace of a controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum NamespaceProfile {
    Zoned(ZonedConfig),
    Conventional(ConventionalConfig),
}

impl NamespaceProfile {
    pub fn lba_bytes(&self) -> u32 {
        match self {
            NamespaceProfile::Zoned(z) => z.lba_bytes,
            NamespaceProfile::Conventional(c) => c.lba_bytes,
        }
    }
    pub fn lba_count(&self) -> u64 {
        match self {
            NamespaceProfile::Zoned(z) => z.total_lbas(),
            NamespaceProfile::Conventional(c) => c.capacity_lbas,
        }
    }
}

/// What happens to writes that completed without FUA and were not followed by a
/// completed Flush when power is lost (the device's volatile write cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompletedWritePolicy {
    /// Power-loss protected (capacitors): every completed write survives.
    Keep,
    /// Volatile cache: every such write is lost.
    Drop,
    /// Each write independently kept, lost or torn, as the seed decides.
    Random,
}

/// What happens to writes in flight (submitted, not completed) at power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InFlightWritePolicy {
    /// In-flight writes are lost entirely.
    Drop,
    /// A seeded prefix of each in-flight write's blocks reaches the medium.
    Torn,
    /// Each write independently kept, lost or torn, as the seed decides.
    Random,
}

/// What happens to data held in a ZRWA (written, not yet committed by a flush).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZrwaPowerPolicy {
    /// The ZRWA is non-volatile (battery-backed DRAM or SLC): its contents and the
    /// allocation survive; the zone comes back Closed with its ZRWA.
    Keep,
    /// The ZRWA contents are lost; the WP stays at the last committed LBA and the
    /// ZRWA is released.
    Discard,
}

/// The power-loss behaviour of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerLossPolicy {
    pub completed_unflushed: CompletedWritePolicy,
    pub in_flight: InFlightWritePolicy,
    pub zrwa: ZrwaPowerPolicy,
}

/// A whole emulated controller.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Short name (`zn540`).
    pub name: String,
    /// One line for `zns info`.
    pub description: String,
    /// Namespaces in NSID order (NSID = index + 1).
    #[serde(rename = "namespace")]
    pub namespaces: Vec<NamespaceProfile>,
    pub power_loss: PowerLossPolicy,
    pub timing: TimingProfile,
}

const BUILTIN: &[(&str, &str)] = &[
    ("zn540", include_str!("../../../profiles/zn540.toml")),
    (
        "zn540-cns",
        include_str!("../../../profiles/zn540-cns.toml"),
    ),
    (
        "zn540-lbaf0",
        include_str!("../../../profiles/zn540-lbaf0.toml"),
    ),
    ("pm1731a", include_str!("../../../profiles/pm1731a.toml")),
    ("tiny", include_str!("../../../profiles/tiny.toml")),
    ("sn540", include_str!("../../../profiles/sn540.toml")),
    (
        "sn540-slc",
        include_str!("../../../profiles/sn540-slc.toml"),
    ),
    (
        "sn540-mini-slc",
        include_str!("../../../profiles/sn540-mini-slc.toml"),
    ),
    (
        "sn540-mini",
        include_str!("../../../profiles/sn540-mini.toml"),
    ),
    (
        "sn540-960g-mini",
        include_str!("../../../profiles/sn540-960g-mini.toml"),
    ),
    ("sn640", include_str!("../../../profiles/sn640.toml")),
    ("tiny-ftl", include_str!("../../../profiles/tiny-ftl.toml")),
];

impl Profile {
    /// Names of the compiled-in profiles.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// The TOML text of a built-in profile.
    pub fn builtin_toml(name: &str) -> Result<&'static str, ProfileError> {
        BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .ok_or_else(|| ProfileError::Unknown(name.to_string()))
    }

    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Result<Profile, ProfileError> {
        Profile::from_toml(Profile::builtin_toml(name)?, &format!("'{name}'"))
    }

    /// A built-in profile name, or else a path to a TOML file.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Ok(text) = Profile::builtin_toml(name_or_path) {
            return Profile::from_toml(text, &format!("'{name_or_path}'"));
        }
        let path = std::path::Path::new(name_or_path);
        if path.exists() {
            let text = std::fs::read_to_string(path).map_err(|e| ProfileError::Parse {
                origin: name_or_path.to_string(),
                message: e.to_string(),
            })?;
            return Profile::from_toml(&text, name_or_path);
        }
        Err(ProfileError::Unknown(name_or_path.to_string()))
    }

    /// Parses and validates a profile; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let mut profile: Profile = toml::from_str(text).map_err(|e| ProfileError::Parse {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        profile.fill_timing_geometry();
        profile.validate(origin)?;
        Ok(profile)
    }

    /// The timing model needs the zone geometry; it is taken from the first
    /// zoned namespace (a profile states it once, in the namespace).
    fn fill_timing_geometry(&mut self) {
        let (size_bytes, cap_bytes) = match self.first_zoned().map(|i| &self.namespaces[i]) {
            Some(NamespaceProfile::Zoned(z)) => (
                z.zone_size_lbas.saturating_mul(z.lba_bytes as u64),
                z.zone_capacity_lbas.saturating_mul(z.lba_bytes as u64),
            ),
            // No zoned namespace: zone geometry is unused; any valid value will do.
            _ => (1 << 30, 1 << 30),
        };
        self.timing.zone_size_bytes = size_bytes;
        self.timing.zone_capacity_bytes = cap_bytes;
    }

    /// Checks every namespace and the timing parameters.
    pub fn validate(&self, origin: &str) -> Result<(), ProfileError> {
        let invalid = |field: String, message: String| ProfileError::Invalid {
            origin: origin.to_string(),
            field,
            message,
        };
        if self.namespaces.is_empty() {
            return Err(invalid(
                "namespace".into(),
                "a profile needs at least one [[namespace]]".into(),
            ));
        }
        for (i, ns) in self.namespaces.iter().enumerate() {
            let result = match ns {
                NamespaceProfile::Zoned(z) => z.validate().map_err(|e| e.to_string()),
                NamespaceProfile::Conventional(c) => c.validate(),
            };
            result.map_err(|m| invalid(format!("namespace.{i}"), m))?;
        }
        self.timing
            .validate()
            .map_err(|m| invalid("timing".into(), m.0))?;
        for (i, ns) in self.namespaces.iter().enumerate() {
            if let NamespaceProfile::Conventional(c) = ns {
                c.ftl_geometry(&self.timing)
                    .map_err(|m| invalid(format!("namespace.{i}"), m))?;
            }
        }
        Ok(())
    }

    /// The profile as TOML (what a device image stores).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a profile always serializes to TOML")
    }

    /// Applies `key=value` overrides (dotted TOML paths, array elements by
    /// index: `namespace.0.zone_count=64`, `power_loss.zrwa=discard`), then
    /// re-validates. The value is parsed as a TOML value; bare words become strings.
    pub fn with_overrides(&self, overrides: &[(String, String)]) -> Result<Profile, ProfileError> {
        if overrides.is_empty() {
            return Ok(self.clone());
        }
        let mut tree = toml::Value::try_from(self).map_err(|e| ProfileError::Parse {
            origin: self.name.clone(),
            message: e.to_string(),
        })?;
        for (key, raw) in overrides {
            let value = parse_override_value(raw);
            set_path(&mut tree, key, value)
                .map_err(|m| ProfileError::Override(format!("{key}={raw}"), m))?;
        }
        let text = toml::to_string(&tree).map_err(|e| ProfileError::Parse {
            origin: self.name.clone(),
            message: e.to_string(),
        })?;
        let mut p = Profile::from_toml(&text, &format!("'{}' with overrides", self.name))?;
        // the description speaks of the profile as written: say what changed
        // (unless an override wrote the description itself)
        if !overrides.iter().any(|(k, _)| k == "description") {
            let changed: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
            p.description = format!("{} [overridden: {}]", p.description, changed.join(", "));
        }
        Ok(p)
    }

    /// The first zoned namespace's index, if any.
    pub fn first_zoned(&self) -> Option<usize> {
        self.namespaces
            .iter()
            .position(|n| matches!(n, NamespaceProfile::Zoned(_)))
    }
}

fn parse_override_value(raw: &str) -> toml::Value {
    let probe = format!("v = {raw}");
    match toml::from_str::<toml::Table>(&probe) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.to_string())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

fn set_path(tree: &mut toml::Value, key: &str, value: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("empty path component".into());
    }
    let mut node = tree;
    for (depth, part) in parts.iter().enumerate() {
        let last = depth + 1 == parts.len();
        node = match node {
            toml::Value::Table(t) => {
                if last {
                    match t.get(*part) {
                        Some(old) => check_same_type(part, old, &value)?,
                        None if is_optional_key(part) => {}
                        None => {
                            return Err(format!(
                                "no field '{part}' here (known: {})",
                                t.keys().cloned().collect::<Vec<_>>().join(", ")
                            ))
                        }
                    }
                    t.insert(part.to_string(), value);
                    return Ok(());
                }
                t.get_mut(*part)
                    .ok_or_else(|| format!("no field '{part}'"))?
            }
            toml::Value::Array(a) => {
                let index: usize = part
                    .parse()
                    .map_err(|_| format!("'{part}' is not an index into a list"))?;
                let len = a.len();
                let slot = a
                    .get_mut(index)
                    .ok_or_else(|| format!("index {index} out of range (list has {len})"))?;
                if last {
                    check_same_type(part, slot, &value)?;
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            _ => return Err(format!("'{part}' is below a plain value")),
        };
    }
    Ok(())
}

/// An override must keep the kind of value the field holds (a number stays a number).
fn check_same_type(key: &str, old: &toml::Value, new: &toml::Value) -> Result<(), String> {
    if std::mem::discriminant(old) == std::mem::discriminant(new) {
        return Ok(());
    }
    let article = |t: &str| {
        if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        }
    };
    let (was, given) = (old.type_str(), new.type_str());
    Err(format!(
        "'{key}' holds {} {was}, not {} {given} ({new})",
        article(was),
        article(given)
    ))
}

/// Optional keys that may be absent from the serialized tree and still be set.
fn is_optional_key(key: &str) -> bool {
    matches!(key, "zrwa" | "ftl" | "slc_cache" | "gc_modes")
}
