//! The one rule that tells a device image from a profile in a device name,
//! shared by a whole name (`spec`) and an array's member (`raid`), so that
//! neither of the two parses through the other.

use std::path::{Path, PathBuf};

use zns_device::Profile;

/// The device image `name` names: an existing file that is neither a
/// built-in profile's name nor a profile TOML file (opened later, as an
/// image made by `zns create`).
pub(crate) fn image_path(name: &str) -> Option<PathBuf> {
    let builtin = Profile::builtin_names().contains(&name);
    (!builtin && Path::new(name).is_file() && !name.ends_with(".toml")).then(|| PathBuf::from(name))
}
