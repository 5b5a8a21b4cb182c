//! Opening an emulated controller in a test (include with `#[path]`): a
//! test's profile is valid, so a failure to build it is a test bug and
//! panics here, once, instead of an `.unwrap()` at every call site.
#![allow(dead_code)]

use zns_device::{Controller, ControllerOptions, Profile, StoreKind};
use zns_sim::timing::HostStack;
use zns_sim::Handle;

/// `profile`'s controller on `h`, keeping data in `store`, its clients
/// going through `host_stack`.
pub fn open(h: &Handle, profile: Profile, store: StoreKind, host_stack: HostStack) -> Controller {
    Controller::new(h, profile, ControllerOptions { store, host_stack })
        .unwrap_or_else(|e| panic!("a test profile that does not build: {e}"))
}

/// `profile`'s controller on `h` with the default options (no store).
pub fn open_default(h: &Handle, profile: Profile) -> Controller {
    Controller::new(h, profile, ControllerOptions::default())
        .unwrap_or_else(|e| panic!("a test profile that does not build: {e}"))
}
