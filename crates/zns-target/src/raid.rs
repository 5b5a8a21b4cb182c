//! `raid:` device names: [`RaidSpec`], a RAID array of emulated ZNS devices
//! (its members' profiles or device images, the array's options, the
//! members' host stack and zone aggregation), the one source of the
//! grammar's option names ([`RaidSpec::OPTIONS`]), defaults and checks
//! ([`RaidSpec::check`]): the parser ([`FromStr`](std::str::FromStr)) and
//! the builders ([`RaidSpec::of`], [`RaidSpec::from_profiles`]) both end in
//! it, and [`Display`](std::fmt::Display) writes the spec back in the
//! user's syntax (`raid:5xzn540,variant=zraid,chunk=128k`), which parses to
//! the same spec. Serde reads and writes that string too.
//!
//! It also creates the array a spec describes: one emulated controller per
//! member, each member's first zoned namespace (optionally aggregated,
//! `zns_raid::aggr`), and a new array over them — or, on member images that
//! hold one already, the array they hold, recovered (`RaidArray::open`).

use std::path::PathBuf;
use std::rc::Rc;

use zns_core::{ReportFilter, ZoneState, ZonedDevice};
use zns_device::{Controller, ControllerOptions, Profile, StoreKind};
use zns_raid::{AggregatedZns, RaidArray, RaidOptions, Variant};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

use crate::error::TargetError;
use crate::name::image_path;
use crate::size::{check_whole_blocks, parse_bytes};

/// A RAID array as a device name: `raid:` followed by comma-separated
/// members and options (the grammar is in the crate docs and
/// docs/targets.md). Example: `raid:5xzn540,variant=raizn+,chunk=64k`.
/// Build one with [`RaidSpec::of`] or [`RaidSpec::from_profiles`] (then set
/// fields and [`RaidSpec::check`]), or parse the string.
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

/// Most members one `NxDEVICE` item names.
pub const MAX_REPEAT: usize = 64;
/// Most zones of a member presented as one (`aggregate=`).
pub const MAX_AGGREGATE: u32 = 64;

/// An option of the `raid:` grammar: its name, how its value reads and
/// how it is written back. [`RaidSpec::OPTIONS`] lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RaidKey {
    Variant,
    Chunk,
    Policy,
    Stack,
    Aggregate,
    WorkerNs,
    WorkerCopyPs,
    WorkerXorPs,
    PpMutexNs,
}

impl RaidKey {
    const ALL: [RaidKey; 9] = [
        RaidKey::Variant,
        RaidKey::Chunk,
        RaidKey::Policy,
        RaidKey::Stack,
        RaidKey::Aggregate,
        RaidKey::WorkerNs,
        RaidKey::WorkerCopyPs,
        RaidKey::WorkerXorPs,
        RaidKey::PpMutexNs,
    ];

    const fn name(self) -> &'static str {
        match self {
            RaidKey::Variant => "variant",
            RaidKey::Chunk => "chunk",
            RaidKey::Policy => "policy",
            RaidKey::Stack => "stack",
            RaidKey::Aggregate => "aggregate",
            RaidKey::WorkerNs => "worker_ns",
            RaidKey::WorkerCopyPs => "worker_copy_ps",
            RaidKey::WorkerXorPs => "worker_xor_ps",
            RaidKey::PpMutexNs => "pp_mutex_ns",
        }
    }

    fn parse(name: &str) -> Option<RaidKey> {
        RaidKey::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Sets this option of `spec` from `v` (the member stack's default is
    /// applied after every option is read, as it follows the variant).
    fn set(
        self,
        spec: &mut RaidSpec,
        stack: &mut Option<HostStack>,
        v: &str,
    ) -> Result<(), TargetError> {
        let bad = |what: &str| TargetError::Spec(format!("{}={v}: {what}", self.name()));
        let ns = || v.parse::<u64>().map_err(|_| bad("not a number of ns"));
        let ps = || {
            v.parse::<u64>()
                .map_err(|_| bad("not a number of ps per byte"))
        };
        let o = &mut spec.options;
        match self {
            RaidKey::Variant => o.variant = v.parse().map_err(TargetError::Spec)?,
            RaidKey::Chunk => o.chunk_bytes = parse_bytes(v).map_err(|e| bad(&e.to_string()))?,
            RaidKey::Policy => o.policy = v.parse().map_err(TargetError::Spec)?,
            RaidKey::Stack => *stack = Some(v.parse().map_err(|e: String| bad(&e))?),
            RaidKey::Aggregate => {
                spec.aggregate = v
                    .parse()
                    .map_err(|_| bad(&format!("expected 1..={MAX_AGGREGATE} zones")))?
            }
            RaidKey::WorkerNs => o.worker_ns_per_write = ns()?,
            RaidKey::PpMutexNs => o.pp_mutex_ns = ns()?,
            RaidKey::WorkerCopyPs => o.worker_copy_ps_per_byte = ps()?,
            RaidKey::WorkerXorPs => o.worker_xor_ps_per_byte = ps()?,
        }
        Ok(())
    }

    /// This option's value in `spec` as the grammar writes it, or `None`
    /// where it is the default (the variant is always written).
    fn value(self, spec: &RaidSpec) -> Option<String> {
        let o = &spec.options;
        let d = RaidOptions::default();
        let differs = |v: u64, default: u64| (v != default).then(|| v.to_string());
        match self {
            RaidKey::Variant => Some(o.variant.name().to_string()),
            RaidKey::Chunk => (o.chunk_bytes != d.chunk_bytes).then(|| size_arg(o.chunk_bytes)),
            RaidKey::Policy => (o.policy != d.policy).then(|| o.policy.name().to_string()),
            RaidKey::Stack => (spec.member_stack != default_member_stack(o.variant))
                .then(|| spec.member_stack.name().to_string()),
            RaidKey::Aggregate => differs(u64::from(spec.aggregate), 1),
            RaidKey::WorkerNs => differs(o.worker_ns_per_write, d.worker_ns_per_write),
            RaidKey::WorkerCopyPs => differs(o.worker_copy_ps_per_byte, d.worker_copy_ps_per_byte),
            RaidKey::WorkerXorPs => differs(o.worker_xor_ps_per_byte, d.worker_xor_ps_per_byte),
            RaidKey::PpMutexNs => differs(o.pp_mutex_ns, d.pp_mutex_ns),
        }
    }
}

/// A size as the `chunk=` option takes it back: `128k`, `1m`, or bytes.
fn size_arg(bytes: u64) -> String {
    const KIB: u64 = 1024;
    match bytes {
        0 => "0".into(),
        b if b % (KIB * KIB * KIB) == 0 => format!("{}g", b / (KIB * KIB * KIB)),
        b if b % (KIB * KIB) == 0 => format!("{}m", b / (KIB * KIB)),
        b if b % KIB == 0 => format!("{}k", b / KIB),
        b => b.to_string(),
    }
}

impl RaidSpec {
    /// The option names of `raid:`, in the order they are written.
    pub const OPTIONS: [&'static str; 9] = {
        let mut names = [""; 9];
        let mut i = 0;
        while i < RaidKey::ALL.len() {
            names[i] = RaidKey::ALL[i].name();
            i += 1;
        }
        names
    };

    /// `count` members of the profile `member` (a built-in name or a
    /// profile TOML file) running `variant`, every other option at its
    /// default: what `raid:{count}x{member},variant={variant}` names.
    pub fn of(count: usize, member: &str, variant: Variant) -> Result<RaidSpec, TargetError> {
        let profile = load_member(0, member)?;
        let options = RaidOptions {
            variant,
            ..RaidOptions::default()
        };
        RaidSpec::from_profiles(vec![profile; count], options)
    }

    /// An array of `members` (profiles, in array order) with `options`; the
    /// members' host stack follows the variant and no zones are aggregated.
    pub fn from_profiles(
        members: Vec<Profile>,
        options: RaidOptions,
    ) -> Result<RaidSpec, TargetError> {
        let spec = RaidSpec {
            members,
            images: Vec::new(),
            member_stack: default_member_stack(options.variant),
            options,
            aggregate: 1,
        };
        spec.check()?;
        Ok(spec)
    }

    /// The checks every spec passes, parsed or built: members, all profiles
    /// or all images; a chunk that is not empty; 1 to
    /// [`MAX_AGGREGATE`] zones aggregated. (What depends on the members'
    /// geometry — whole blocks, the ZRWA — is checked when the array is
    /// created.)
    pub fn check(&self) -> Result<(), TargetError> {
        let spec = |m: String| Err(TargetError::Spec(m));
        if self.members.is_empty() && self.images.is_empty() {
            return spec(
                "no members (e.g. raid:5xzn540 or raid:zn540,zn540,zn540,variant=raizn+)".into(),
            );
        }
        if !self.members.is_empty() && !self.images.is_empty() {
            return spec(format!(
                "member {} ({}): the members are all profiles or all device images",
                self.members.len(),
                self.images[0].display()
            ));
        }
        if self.options.chunk_bytes == 0 {
            return spec("chunk=0: a chunk is not empty".into());
        }
        if !(1..=MAX_AGGREGATE).contains(&self.aggregate) {
            return spec(format!(
                "aggregate={}: expected 1..={MAX_AGGREGATE} zones",
                self.aggregate
            ));
        }
        Ok(())
    }

    /// The members' names (their profiles' names, or their images' paths),
    /// in array order.
    pub fn member_names(&self) -> impl Iterator<Item = &str> {
        let images = self.images.iter().map(|p| p.to_str().unwrap_or("?"));
        self.members.iter().map(|p| p.name.as_str()).chain(images)
    }

    /// The array's name in reports: `raid:5xzn540,variant=zraid,chunk=65536`
    /// (members listed one by one when they differ; the aggregation when
    /// there is one). Shorter than the spec itself ([`Display`](std::fmt::Display)),
    /// and kept as reports have always named arrays.
    pub fn report_name(&self) -> String {
        let names: Vec<&str> = self.member_names().collect();
        let members = match names.first() {
            Some(first) if names.iter().all(|n| n == first) => format!("{}x{first}", names.len()),
            _ => names.join(","),
        };
        let mut name = format!(
            "raid:{members},variant={},chunk={}",
            self.options.variant, self.options.chunk_bytes
        );
        if self.aggregate > 1 {
            name.push_str(&format!(",aggregate={}", self.aggregate));
        }
        name
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
        self.check()?;
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

/// Loads member `index`'s profile (a built-in name or a TOML file).
fn load_member(index: usize, name: &str) -> Result<Profile, TargetError> {
    Profile::load(name).map_err(|source| TargetError::Profile {
        context: format!("member {index} ({name}): "),
        source,
        hint: "",
    })
}

/// Parses what follows `raid:`; members are loaded as profiles (built-in
/// names or TOML files) or recognised as device images (opened later).
impl std::str::FromStr for RaidSpec {
    type Err = TargetError;
    fn from_str(s: &str) -> Result<RaidSpec, TargetError> {
        let spec = TargetError::Spec;
        let mut r = RaidSpec {
            members: Vec::new(),
            images: Vec::new(),
            options: RaidOptions::default(),
            member_stack: HostStack::IoUringNone,
            aggregate: 1,
        };
        let mut stack: Option<HostStack> = None;
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            if let Some((k, v)) = item.split_once('=') {
                let key = RaidKey::parse(k.trim()).ok_or_else(|| {
                    spec(format!(
                        "unknown RAID option {:?} (options: {})",
                        k.trim(),
                        RaidSpec::OPTIONS.join(", ")
                    ))
                })?;
                key.set(&mut r, &mut stack, v.trim())?;
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
            if count == 0 || count > MAX_REPEAT {
                return Err(spec(format!(
                    "{item}: expected NxDEVICE with 1 ≤ N ≤ {MAX_REPEAT} (an array has 3 to 64 members)"
                )));
            }
            let index = r.members.len() + r.images.len();
            if name.starts_with("raid:") {
                return Err(spec(format!("member {index}: an array cannot be a member")));
            }
            match image_path(name) {
                Some(path) if count == 1 => r.images.push(path),
                Some(_) => {
                    return Err(spec(format!(
                        "{item}: a device image is one member (name each image once)"
                    )))
                }
                None => {
                    let profile = load_member(index, name)?;
                    r.members.extend(std::iter::repeat(profile).take(count));
                }
            }
            if !r.members.is_empty() && !r.images.is_empty() {
                return Err(spec(format!(
                    "member {index} ({name}): the members are all profiles or all device images"
                )));
            }
        }
        r.member_stack = stack.unwrap_or(default_member_stack(r.options.variant));
        r.check()?;
        Ok(r)
    }
}

/// The spec in the user's syntax, `raid:` included: the members (a run of
/// equal ones as `NxNAME`), the variant, then every other option that is
/// not at its default (`raid:5xzn540,variant=zraid,chunk=128k`). It parses
/// back to the same spec when the members are built-in profiles or images
/// (a profile TOML member is written by its profile's name).
impl std::fmt::Display for RaidSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("raid:")?;
        let names: Vec<&str> = self.member_names().collect();
        let mut first = true;
        let mut i = 0;
        while i < names.len() {
            let run = names[i..].iter().take_while(|n| **n == names[i]).count();
            let sep = if first { "" } else { "," };
            first = false;
            if run > 1 {
                let run = run.min(MAX_REPEAT);
                write!(f, "{sep}{run}x{}", names[i])?;
                i += run;
            } else {
                write!(f, "{sep}{}", names[i])?;
                i += 1;
            }
        }
        for key in RaidKey::ALL {
            if let Some(v) = key.value(self) {
                write!(f, ",{}={v}", key.name())?;
            }
        }
        Ok(())
    }
}

/// A spec is read and written as its string (`"raid:5xzn540,chunk=128k"`;
/// the `raid:` prefix may be left out when reading).
impl serde::Serialize for RaidSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for RaidSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RaidSpec, D::Error> {
        let text = String::deserialize(d)?;
        let body = text.strip_prefix("raid:").unwrap_or(&text);
        body.parse().map_err(serde::de::Error::custom)
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
        assert_eq!(s.report_name(), "raid:5xzn540,variant=raizn+,chunk=65536");
        assert_eq!(s.to_string(), "raid:5xzn540,variant=raizn+");
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
            "5xzn540,aggregate=0",
            "5xzn540,aggregate=65",
            "3xno-such-profile",
            "zn540,raid:3xzn540",
        ] {
            assert!(bad.parse::<RaidSpec>().is_err(), "{bad}");
        }
        let e = "5xzn540,foo=1".parse::<RaidSpec>().unwrap_err().to_string();
        assert!(e.contains(&RaidSpec::OPTIONS.join(", ")), "{e}");
    }

    /// Every option written back reads as the same spec.
    #[test]
    fn specs_round_trip_through_their_string() {
        for text in [
            "5xzn540",
            "3xtiny,variant=raizn,chunk=128k,policy=stripe,stack=spdk,aggregate=4",
            "tiny,tiny,zn540,zn540,worker_ns=7,worker_copy_ps=3,worker_xor_ps=5,pp_mutex_ns=11",
            "4xtiny,chunk=96k,stack=mq-deadline",
            "3xtiny,chunk=12288,policy=chunk,variant=z+s+m",
            "3xtiny,chunk=1m",
        ] {
            let a: RaidSpec = text.parse().unwrap();
            let written = a.to_string();
            let b: RaidSpec = written.strip_prefix("raid:").unwrap().parse().unwrap();
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{text} -> {written}");
            assert_eq!(b.to_string(), written);
            let json = serde_json::to_string(&a).unwrap();
            let c: RaidSpec = serde_json::from_str(&json).unwrap();
            assert_eq!(format!("{a:?}"), format!("{c:?}"), "{json}");
        }
    }

    /// A spec built from values is the one its string names.
    #[test]
    fn built_specs_are_the_parsed_ones() {
        let built = RaidSpec::of(5, "zn540", Variant::Raizn).unwrap();
        assert_eq!(built.to_string(), "raid:5xzn540,variant=raizn");
        let parsed: RaidSpec = "5xzn540,variant=raizn".parse().unwrap();
        assert_eq!(format!("{built:?}"), format!("{parsed:?}"));
        let mut s = RaidSpec::of(3, "tiny", Variant::Zraid).unwrap();
        s.options.chunk_bytes = 0;
        assert!(s.check().is_err());
        assert!(RaidSpec::of(0, "tiny", Variant::Zraid).is_err());
        assert!(RaidSpec::of(3, "no-such-profile", Variant::Zraid).is_err());
    }
}
