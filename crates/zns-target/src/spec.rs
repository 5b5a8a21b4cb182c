//! What a device name names: [`TargetSpec`], the parse of the one grammar
//! of device names (crate docs): a profile, a device image, a RAID array or
//! a real Linux zoned block device; and the grammar of what follows `raid:`
//! (members are device names themselves), parsed into a [`RaidSpec`].

use std::path::{Path, PathBuf};

use zns_device::Profile;
use zns_raid::{Policy, RaidOptions, Variant};
use zns_sim::timing::HostStack;

use crate::error::TargetError;
use crate::raid::{default_member_stack, RaidSpec};
use crate::size::parse_bytes;

/// A device named by a device name, before it is opened.
#[derive(Debug, Clone)]
pub enum TargetSpec {
    /// An emulated controller made from a profile (a built-in profile name
    /// or a profile TOML file).
    Profile(Box<Profile>),
    /// An emulated controller opened from a device image (`zns create`).
    Image(PathBuf),
    /// A RAID array of emulated ZNS devices (`raid:…`).
    Raid(RaidSpec),
    /// A real Linux zoned block device (`/dev/…` or `linux:PATH`).
    Linux(PathBuf),
}

/// The path a name gives a real Linux block device: a path under `/dev/`,
/// or anything with the `linux:` prefix (which is stripped).
pub fn linux_device_path(name: &str) -> Option<&str> {
    if let Some(p) = name.strip_prefix("linux:") {
        return Some(p);
    }
    name.starts_with("/dev/").then_some(name)
}

impl TargetSpec {
    /// Parses a device name (loading profiles: a TOML file is read; a
    /// device image is only recognised as an existing file that is not a
    /// `.toml`, and opened later).
    pub fn parse(name: &str) -> Result<TargetSpec, TargetError> {
        if let Some(spec) = name.strip_prefix("raid:") {
            return spec.parse().map(TargetSpec::Raid);
        }
        if let Some(path) = linux_device_path(name) {
            return Ok(TargetSpec::Linux(PathBuf::from(path)));
        }
        let builtin = Profile::builtin_names().contains(&name);
        if !builtin && Path::new(name).is_file() && !name.ends_with(".toml") {
            return Ok(TargetSpec::Image(PathBuf::from(name)));
        }
        // a path that is not there is a missing file, not an unknown profile
        // (built-in profile names have neither dots nor slashes)
        if !builtin && (name.contains('/') || name.contains('.')) && !Path::new(name).exists() {
            return Err(TargetError::NoSuchFile(PathBuf::from(name)));
        }
        Profile::load(name)
            .map(TargetSpec::from)
            .map_err(|source| TargetError::Profile {
                context: String::new(),
                source,
                hint: "; a device name is a built-in profile, a profile TOML file, a device image made by `zns create`, raid:… or a real zoned device /dev/… or linux:PATH (docs/targets.md)",
            })
    }

    /// The spec with profile `overrides` (TOML path, value) applied to its
    /// profile, or to every member of an array. Images and real devices
    /// carry their own geometry: overriding it is an error.
    pub fn with_overrides(self, overrides: &[(String, String)]) -> Result<TargetSpec, TargetError> {
        if overrides.is_empty() {
            return Ok(self);
        }
        match self {
            TargetSpec::Profile(p) => p
                .with_overrides(overrides)
                .map(TargetSpec::from)
                .map_err(TargetError::profile),
            TargetSpec::Raid(r) if !r.images.is_empty() => Err(TargetError::Spec(format!(
                "raid:{}: profile overrides apply to profiles, not to member device images (they have their own geometry)",
                r.member_names().collect::<Vec<_>>().join(",")
            ))),
            TargetSpec::Raid(mut r) => {
                for m in &mut r.members {
                    *m = m.with_overrides(overrides).map_err(TargetError::profile)?;
                }
                Ok(TargetSpec::Raid(r))
            }
            TargetSpec::Image(p) | TargetSpec::Linux(p) => Err(TargetError::Spec(format!(
                "{}: profile overrides apply to profiles and arrays of them, not to a device with its own geometry",
                p.display()
            ))),
        }
    }

    /// The device's name in reports: the profile's name, the array's
    /// (`raid:5xzn540,variant=zraid,chunk=65536`), or the path.
    pub fn name(&self) -> String {
        match self {
            TargetSpec::Profile(p) => p.name.clone(),
            TargetSpec::Raid(r) => r.to_string(),
            TargetSpec::Image(p) | TargetSpec::Linux(p) => p.display().to_string(),
        }
    }
}

impl From<Profile> for TargetSpec {
    fn from(p: Profile) -> TargetSpec {
        TargetSpec::Profile(Box::new(p))
    }
}

impl From<RaidSpec> for TargetSpec {
    fn from(r: RaidSpec) -> TargetSpec {
        TargetSpec::Raid(r)
    }
}

/// Parses what follows `raid:`; members are loaded as profiles (built-in
/// names or TOML files).
impl std::str::FromStr for RaidSpec {
    type Err = TargetError;
    fn from_str(s: &str) -> Result<RaidSpec, TargetError> {
        let spec = TargetError::Spec;
        let mut members = Vec::new();
        let mut images = Vec::new();
        let mut options = RaidOptions::default();
        let mut stack: Option<HostStack> = None;
        let mut aggregate = 1u32;
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            if let Some((k, v)) = item.split_once('=') {
                let v = v.trim();
                match k.trim() {
                    "variant" => options.variant = v.parse::<Variant>().map_err(spec)?,
                    "chunk" => {
                        options.chunk_bytes = parse_bytes(v)
                            .map_err(|e| format!("chunk={v}: {e}"))
                            .and_then(|b| match b {
                                0 => Err(format!("chunk={v}: a chunk is not empty")),
                                b => Ok(b),
                            })
                            .map_err(spec)?
                    }
                    "policy" => options.policy = v.parse::<Policy>().map_err(spec)?,
                    "stack" => {
                        stack = Some(v.parse().map_err(|e| spec(format!("stack={v}: {e}")))?)
                    }
                    "aggregate" => {
                        aggregate = v
                            .parse()
                            .ok()
                            .filter(|&k| (1..=64).contains(&k))
                            .ok_or_else(|| spec(format!("aggregate={v}: expected 1..=64 zones")))?
                    }
                    "worker_ns" => {
                        options.worker_ns_per_write = v
                            .parse()
                            .map_err(|_| spec(format!("worker_ns={v}: not a number of ns")))?
                    }
                    "pp_mutex_ns" => {
                        options.pp_mutex_ns = v
                            .parse()
                            .map_err(|_| spec(format!("pp_mutex_ns={v}: not a number of ns")))?
                    }
                    "worker_copy_ps" | "worker_xor_ps" => {
                        let n = v
                            .parse()
                            .map_err(|_| spec(format!("{k}={v}: not a number of ps per byte")))?;
                        if k == "worker_copy_ps" {
                            options.worker_copy_ps_per_byte = n;
                        } else {
                            options.worker_xor_ps_per_byte = n;
                        }
                    }
                    other => {
                        return Err(spec(format!(
                            "unknown RAID option {other:?} (options: variant, chunk, policy, stack, aggregate, worker_ns, worker_copy_ps, worker_xor_ps, pp_mutex_ns)"
                        )))
                    }
                }
                continue;
            }
            let (count, name) = match item.split_once(['x', '*']) {
                Some((n, name)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
                    let n: usize = n.parse().map_err(|_| spec(format!("{item}: bad count")))?;
                    (n, name.trim())
                }
                _ => (1, item),
            };
            if name.is_empty() {
                return Err(spec(format!(
                    "{item}: no device after the count (e.g. 5xzn540: five zn540 members; RAID-5 needs at least 3)"
                )));
            }
            if count == 0 || count > 64 {
                return Err(spec(format!(
                    "{item}: expected NxDEVICE with 1 ≤ N ≤ 64 (an array has 3 to 64 members)"
                )));
            }
            let index = members.len() + images.len();
            if name.starts_with("raid:") {
                return Err(spec(format!("member {index}: an array cannot be a member")));
            }
            match TargetSpec::parse(name) {
                Ok(TargetSpec::Image(path)) if count == 1 => images.push(path),
                Ok(TargetSpec::Image(_)) => {
                    return Err(spec(format!(
                        "{item}: a device image is one member (name each image once)"
                    )))
                }
                _ => {
                    let profile = Profile::load(name).map_err(|source| TargetError::Profile {
                        context: format!("member {index} ({name}): "),
                        source,
                        hint: "",
                    })?;
                    members.extend(std::iter::repeat(profile).take(count));
                }
            }
            if !members.is_empty() && !images.is_empty() {
                return Err(spec(format!(
                    "member {index} ({name}): the members are all profiles or all device images"
                )));
            }
        }
        if members.is_empty() && images.is_empty() {
            return Err(spec(
                "no members (e.g. raid:5xzn540 or raid:zn540,zn540,zn540,variant=raizn+)".into(),
            ));
        }
        Ok(RaidSpec {
            members,
            images,
            member_stack: stack.unwrap_or(default_member_stack(options.variant)),
            options,
            aggregate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_to_what_they_name() {
        assert!(
            matches!(TargetSpec::parse("zn540"), Ok(TargetSpec::Profile(p)) if p.name == "zn540")
        );
        assert!(
            matches!(TargetSpec::parse("raid:3xtiny"), Ok(TargetSpec::Raid(r)) if r.members.len() == 3)
        );
        assert!(
            matches!(TargetSpec::parse("/dev/nvme0n2"), Ok(TargetSpec::Linux(p)) if p == Path::new("/dev/nvme0n2"))
        );
        assert!(
            matches!(TargetSpec::parse("linux:/tmp/x"), Ok(TargetSpec::Linux(p)) if p == Path::new("/tmp/x"))
        );
        let e = TargetSpec::parse("no-such-profile")
            .unwrap_err()
            .to_string();
        assert!(e.contains("built-in profile"), "{e}");
        // the list of built-in profiles once, not twice
        assert_eq!(e.matches("zn540-lbaf0").count(), 1, "{e}");
    }

    #[test]
    fn a_missing_file_says_so_instead_of_unknown_profile() {
        for name in ["nosuch.img", "dir/dev.img", "missing.toml"] {
            let e = TargetSpec::parse(name).unwrap_err();
            assert!(matches!(e, TargetError::NoSuchFile(_)), "{name}: {e:?}");
            let e = e.to_string();
            assert!(e.contains("no such file"), "{name}: {e}");
            assert!(!e.contains("unknown profile"), "{name}: {e}");
        }
    }
}
