//! What a device name names: [`TargetSpec`], the parse of the one grammar
//! of device names (crate docs): a profile, a device image, a RAID array
//! (what follows `raid:` is [`RaidSpec`]'s grammar, in `raid`) or a real
//! Linux zoned block device.

use std::path::{Path, PathBuf};

use zns_device::Profile;

use crate::error::TargetError;
use crate::name::image_path;
use crate::raid::RaidSpec;

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
        if let Some(path) = image_path(name) {
            return Ok(TargetSpec::Image(path));
        }
        let builtin = Profile::builtin_names().contains(&name);
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
            TargetSpec::Raid(r) => r.report_name(),
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
