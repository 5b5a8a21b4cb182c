//! `raid:` device names: [`RaidSpec`], a RAID array of emulated ZNS devices
//! (its members' profiles or device images, the array's options, the
//! members' host stack and zone aggregation), and creating the array it
//! describes: one emulated controller per member, each member's first zoned
//! namespace (optionally aggregated, `zns_raid::aggr`), and a new array
//! over them — or, on member images that hold one already, the array they
//! hold, recovered (`RaidArray::open`).

use std::path::PathBuf;
use std::rc::Rc;

use zns_core::{ReportFilter, ZoneState, ZonedDevice};
use zns_device::{Controller, ControllerOptions, Profile, StoreKind};
use zns_raid::{AggregatedZns, Policy, RaidArray, RaidOptions, Variant};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

use crate::error::TargetError;
use crate::size::{check_whole_blocks, parse_bytes};

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
fn default_member_stack(variant: Variant) -> HostStack {
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
            match crate::spec::TargetSpec::parse(name) {
                Ok(crate::spec::TargetSpec::Image(path)) if count == 1 => images.push(path),
                Ok(crate::spec::TargetSpec::Image(_)) => {
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
