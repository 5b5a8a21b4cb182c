//! Building an array from device profiles: one emulated controller per
//! member, each member's first zoned namespace (optionally aggregated, see
//! `aggr`), and a new array over them. This is how `zns bench`'s `raid:`
//! targets and `zns cache run --device raid:…` open their arrays.

use std::rc::Rc;

use zns_core::ZonedDevice;
use zns_device::{Controller, ControllerOptions, Profile, StoreKind};
use zns_sim::timing::HostStack;
use zns_sim::Handle;

use crate::{AggregatedZns, RaidArray, RaidOptions};

/// The members of an array to build.
#[derive(Debug, Clone)]
pub struct Members {
    /// (name for messages, profile) of each member, in array order.
    pub profiles: Vec<(String, Profile)>,
    /// Host stack of every member.
    pub host_stack: HostStack,
    /// What the members keep of the data. With `StoreKind::None` they keep
    /// nothing, so the array is built timing-only (no parity computed, reads
    /// return zeros), as a device without a store reads zeros.
    pub store: StoreKind,
    /// Zones of a member presented as one (1: none).
    pub aggregate: u32,
}

/// Opens the member controllers and creates a new array over them. Errors
/// name the member.
pub async fn create_from_profiles(
    handle: &Handle,
    members: &Members,
    options: RaidOptions,
) -> Result<(RaidArray, Vec<Controller>), String> {
    let mut ctrls = Vec::new();
    let mut devs: Vec<Rc<dyn ZonedDevice>> = Vec::new();
    for (i, (name, profile)) in members.profiles.iter().enumerate() {
        let opts = ControllerOptions {
            store: members.store,
            host_stack: members.host_stack,
        };
        let c = Controller::new(handle, profile.clone(), opts)
            .map_err(|e| format!("member {i} ({name}): {e}"))?;
        let z = c
            .first_zoned()
            .ok_or_else(|| format!("member {i} ({name}) has no zoned namespace"))?;
        if members.aggregate > 1 {
            let a = AggregatedZns::new(handle, Rc::new(z), members.aggregate)
                .map_err(|e| format!("member {i} ({name}): {e}"))?;
            devs.push(Rc::new(a));
        } else {
            devs.push(Rc::new(z));
        }
        ctrls.push(c);
    }
    let options = RaidOptions {
        timing_only: options.timing_only || members.store == StoreKind::None,
        ..options
    };
    let array = RaidArray::create(handle, devs, options)
        .await
        .map_err(|e| e.to_string())?;
    Ok((array, ctrls))
}
