//! `raid:` device names: [`RaidSpec`], a RAID array of emulated ZNS devices
//! (its members' profiles or device images, the array's options, the
//! members' host stack and zone aggregation; its grammar is `spec`'s, as
//! members are device names themselves), and creating the array it
//! describes: one emulated controller per member, each member's first zoned
//! namespace (optionally aggregated, `zns_raid::aggr`), and a new array
//! over them — or, on member images that hold one already, the array they
//! hold, recovered (`RaidArray::open`).

use std::path::PathBuf;
use std::rc::Rc;

use zns_core::{ReportFilter, ZoneState, ZonedDevice};
use zns_device::{Controller, ControllerOptions, Profile, StoreKind};
use zns_raid::{AggregatedZns, RaidArray, RaidOptions, Variant};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

use crate::error::TargetError;
use crate::size::check_whole_blocks;

/// A RAID array as a device name: `raid:` followed by comma-separated
/// members and options (the grammar is in the crate docs and
/// docs/targets.md). Example: `raid:5xzn540,variant=raizn+,chunk=64k`.
#[derive(Debug, Clone)]
pub struct RaidSpec {
    /// Every member's profile, in array order (empty when the members are
    /// images).
    pub members: Vec<Profile>,
    /// Every member's device image, in array order (empty when the members
    /// are profiles): the array and its data persist across runs.
    pub images: Vec<PathBuf>,
    pub options: RaidOptions,
    /// Host stack of every member (default from the variant: mq-deadline for
    /// raizn, raizn+ and z, none for the others).
    pub member_stack: HostStack,
    /// Zones of a member presented as one (1 = none).
    pub aggregate: u32,
}

impl RaidSpec {
    /// The members' names (their profiles' names, or their images' paths),
    /// in array order.
    pub fn member_names(&self) -> impl Iterator<Item = &str> {
        let images = self.images.iter().map(|p| p.to_str().unwrap_or("?"));
        self.members.iter().map(|p| p.name.as_str()).chain(images)
    }

    /// Creates the array on `rt`: opens one controller per member with
    /// `store` (with `StoreKind::None` the members keep no data, so the
    /// array is built timing-only: no parity computed, reads return zeros)
    /// and formats the members. Member images keep their data (`store` does
    /// not apply): empty images are formatted into a new array, images that
    /// hold one give that array back, recovered as after a crash (ZRAID
    /// only). Errors name the member.
    pub fn create(
        &self,
        rt: &mut Runtime,
        store: StoreKind,
    ) -> Result<(RaidArray, Vec<Controller>), TargetError> {
        let handle = rt.handle();
        let mut ctrls = Vec::new();
        for (i, profile) in self.members.iter().enumerate() {
            let opts = ControllerOptions {
                store,
                host_stack: self.member_stack,
            };
            let c = Controller::new(&handle, profile.clone(), opts).map_err(|source| {
                TargetError::Device {
                    context: format!("member {i} ({})", profile.name),
                    source,
                }
            })?;
            ctrls.push(c);
        }
        for (i, path) in self.images.iter().enumerate() {
            let c = Controller::open_image(&handle, path, self.member_stack).map_err(|source| {
                TargetError::Device {
                    context: format!("member {i} (device image {})", path.display()),
                    source,
                }
            })?;
            ctrls.push(c);
        }
        let names: Vec<String> = self.member_names().map(str::to_string).collect();
        let mut devs: Vec<Rc<dyn ZonedDevice>> = Vec::new();
        for (i, (c, name)) in ctrls.iter().zip(&names).enumerate() {
            let z = c.first_zoned().ok_or_else(|| {
                TargetError::Namespace(format!("member {i} ({name}) has no zoned namespace"))
            })?;
            if i == 0 {
                let lba_bytes = u64::from(z.config().lba_bytes);
                check_whole_blocks("chunk", self.options.chunk_bytes, lba_bytes)?;
            }
            if self.aggregate > 1 {
                let a =
                    AggregatedZns::new(&handle, Rc::new(z), self.aggregate).map_err(|source| {
                        TargetError::Raid {
                            context: format!("member {i} ({name}): "),
                            source,
                        }
                    })?;
                devs.push(Rc::new(a));
            } else {
                devs.push(Rc::new(z));
            }
        }
        let keeps_data = !self.images.is_empty() || store != StoreKind::None;
        let options = RaidOptions {
            timing_only: self.options.timing_only || !keeps_data,
            ..self.options
        };
        let existing = !self.images.is_empty() && rt.block_on(any_zone_written(&devs))?;
        let array = if existing {
            rt.block_on(RaidArray::open(&handle, devs, options))
                .map_err(|source| TargetError::Raid {
                    context: format!("the array on {}: ", names.join(",")),
                    source,
                })?
        } else {
            rt.block_on(RaidArray::create(&handle, devs, options))
                .map_err(|source| TargetError::Raid {
                    context: String::new(),
                    source,
                })?
        };
        Ok((array, ctrls))
    }
}

/// Whether any member has a zone that is not empty (a new array writes its
/// superblocks at creation, so members holding an array always have one).
async fn any_zone_written(devs: &[Rc<dyn ZonedDevice>]) -> Result<bool, TargetError> {
    for (i, d) in devs.iter().enumerate() {
        let zones = d.config().zone_count as usize;
        let report = d
            .report_zones(0, ReportFilter::All, zones)
            .await
            .map_err(|source| TargetError::Command {
                context: format!("member {i}: zone report"),
                source,
            })?;
        if report.iter().any(|z| z.state != ZoneState::Empty) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The members' host stack a variant implies: mq-deadline for the variants
/// whose members run behind its per-zone write lock, none for the others.
pub(crate) fn default_member_stack(variant: Variant) -> HostStack {
    if variant.members_mq_deadline() {
        HostStack::IoUringMqDeadline
    } else {
        HostStack::IoUringNone
    }
}

/// The array's name in reports: `raid:5xzn540,variant=zraid,chunk=65536`
/// (members listed one by one when they differ).
impl std::fmt::Display for RaidSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.member_names().collect();
        f.write_str("raid:")?;
        match names.first() {
            Some(first) if names.iter().all(|n| n == first) => {
                write!(f, "{}x{first}", names.len())?
            }
            _ => f.write_str(&names.join(","))?,
        }
        write!(
            f,
            ",variant={},chunk={}",
            self.options.variant, self.options.chunk_bytes
        )?;
        if self.aggregate > 1 {
            write!(f, ",aggregate={}", self.aggregate)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zns_raid::Policy;

    #[test]
    fn raid_specs_parse_members_and_options() {
        let s: RaidSpec = "5xzn540,variant=raizn+,chunk=64k".parse().unwrap();
        assert_eq!(s.member_names().collect::<Vec<_>>(), vec!["zn540"; 5]);
        assert_eq!(s.options.variant, Variant::RaiznPlus);
        assert_eq!(s.options.chunk_bytes, 65536);
        assert_eq!(s.member_stack, HostStack::IoUringMqDeadline);
        assert_eq!(s.to_string(), "raid:5xzn540,variant=raizn+,chunk=65536");
        let s: RaidSpec = "tiny,tiny,tiny,policy=chunk,stack=spdk".parse().unwrap();
        assert_eq!(s.members.len(), 3);
        assert_eq!(s.options.policy, Policy::Chunk);
        assert_eq!(s.options.variant, Variant::Zraid);
        assert_eq!(s.member_stack, HostStack::Spdk);
        for bad in [
            "",
            "variant=zraid",
            "5xzn540,foo=1",
            "0xzn540",
            "5xzn540,chunk=x",
            "5xzn540,chunk=0",
            "3xno-such-profile",
            "zn540,raid:3xzn540",
        ] {
            assert!(bad.parse::<RaidSpec>().is_err(), "{bad}");
        }
    }
}
